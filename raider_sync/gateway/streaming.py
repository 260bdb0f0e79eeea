"""Streaming an upstream answer through the relay, and noticing clients that went away.

A :class:`Stream` is a relayed answer as a WSGI iterable: each read of the upstream is yielded
at once (the WSGI server writes and flushes it), and closing it releases the upstream response
and emits the request's usage event, exactly once. An upstream that breaks off raises
:class:`UpstreamBroken` out of the iteration, so the WSGI server aborts the client's connection
too. A :class:`Watcher` asks the WSGI server, every :data:`WATCH_INTERVAL` seconds on a thread
of its own, whether the client of each watched stream is gone, and shuts that stream's upstream
socket, so that a read blocked on a silent upstream returns.

Iterating blocks on the upstream's reads (bounded by its read timeout); closing a Watcher joins
its thread (a few watch intervals at most).
"""
from __future__ import annotations

import logging
import threading
from typing import Callable, Optional

from .upstream import Answer

log = logging.getLogger("raider_sync.gateway")

CHUNK = 64 * 1024
WATCH_INTERVAL = 0.2           # seconds between checks for clients that went away


class UpstreamBroken(Exception):
    """Raised from a relayed answer whose upstream broke off after the headers were sent: the
    WSGI server then aborts the connection, so the client sees the break instead of an answer
    that looks complete."""


class Stream:
    """A relayed answer as a WSGI iterable: each read of the upstream is yielded at once (the
    WSGI server writes and flushes it); ``close()`` releases or closes the upstream response,
    leaves ``watcher`` and gives the usage ``event`` to ``emit(event, started)`` exactly once."""

    def __init__(self, response: Answer, event: dict, started: float, *, watcher: "Watcher",
                 emit: Callable[[dict, float], None]):
        self.response, self.event, self.started = response, event, started
        self.watcher, self.emit = watcher, emit
        self.disconnected: Callable[[], bool] = lambda: False
        self.lock = threading.Lock()
        self.closed = False
        self.complete = False
        self.lease = None  # the per-key limit it holds, given back at close
        self.tap: Optional[Callable[[bytes], None]] = None  # sees each chunk (the metrics)

    def __iter__(self):
        # not decoded, as the buffered answer is not: Content-Encoding is relayed with it
        try:
            for chunk in self.response.chunks(CHUNK):  # whatever has arrived, up to CHUNK
                self.event["response_bytes"] += len(chunk)
                if self.tap is not None:
                    self.tap(chunk)
                yield chunk
            self.complete = "ended" not in self.event  # not cut short by abort()
        except Exception as exc:  # the upstream broke off or timed out, or abort() cut it
            log.debug("gateway: relayed answer ended early: %s", type(exc).__name__)
            if self.event.setdefault("ended", "upstream") == "upstream":
                # ending normally would tell the client the answer is complete
                raise UpstreamBroken("the MCP server broke off its answer") from None

    def abort(self) -> None:
        """Shut the upstream socket so a blocked read returns (called from the watcher)."""
        with self.lock:
            if self.closed:
                return
            self.event["ended"] = "client"
            self.response.shutdown()

    def close(self) -> None:
        with self.lock:
            if self.closed:
                return
            self.closed = True
        self.watcher.unwatch(self)
        if self.lease is not None:
            self.lease.release()
        if not self.complete:
            self.event.setdefault("ended", "client")
        self.response.close()
        self.emit(self.event, self.started)


class Watcher:
    """The streams of one relay whose WSGI server can tell that their client left. Its thread
    starts with the first stream watched and ends when none is left. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watched: set[Stream] = set()
        self._thread: Optional[threading.Thread] = None
        self._stopping = threading.Event()
        self._closed = False

    def watch(self, stream: Stream, disconnected: Callable[[], bool]) -> None:
        """Abort ``stream`` once ``disconnected()`` is true (not after :meth:`close`)."""
        stream.disconnected = disconnected
        with self._lock:
            if self._closed:
                return
            self._watched.add(stream)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop,
                                                name="raider-gateway-watcher", daemon=True)
                self._thread.start()

    def unwatch(self, stream: Stream) -> None:
        with self._lock:
            self._watched.discard(stream)

    def _loop(self) -> None:
        """Every WATCH_INTERVAL seconds, abort the upstream of each stream whose client left;
        exit when nothing is watched (the next stream starts a new watcher)."""
        me = threading.current_thread()
        while not self._stopping.wait(WATCH_INTERVAL):
            with self._lock:
                if self._thread is not me:
                    return
                if not self._watched:
                    self._thread = None
                    return
                streams = list(self._watched)
            for stream in streams:
                try:
                    gone = stream.disconnected()
                except Exception:
                    gone = False
                if gone:
                    stream.abort()

    def close(self) -> None:
        """Abort every watched stream and end and join the thread (bounded by a few watch
        intervals). May be called twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._stopping.set()
            thread, self._thread = self._thread, None
            streams = list(self._watched)
        for stream in streams:
            stream.abort()
        if thread is not None:
            thread.join(timeout=5 * WATCH_INTERVAL + 1)
