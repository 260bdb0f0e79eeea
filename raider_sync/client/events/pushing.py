"""The push stream of an event subscription (``events/stream``), kept open on a thread.

    loop = PushLoop(open_stream, sub, key="demo", heartbeat=30.0)
    loop.first(timeout)     # opens the stream; blocks until the server's active notification,
                            # raises what the server answered instead
    loop.start()            # thread raider-<key>-events-push watches it
    loop.stop(timeout)

``open_stream(params)`` sends one ``events/stream`` request and returns ``(future, tag,
register, unregister)``: the request's future, its id (the subscription id the server's
notifications carry) and how to receive them. The stream's notifications go to the
subscription: ``active`` and ``heartbeat`` move its cursor, ``event`` delivers, ``terminated``
ends it. A stream silent for twice ``heartbeat`` seconds is dead: it is cancelled and opened
again from the last cursor, as is one that ended under us (the connection broke); one the
server refused (an McpError) ends the subscription. :meth:`stop` cancels the stream (a stdio
``notifications/cancelled``, an HTTP stream closed) and joins the thread.
"""
from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any, Callable

from ...client.eras.host import subscription_tag
from ...errors import McpError, RequestTimeout, SubscriptionEnded
from ...protocol.events import ACTIVE, EVENT, HEARTBEAT, TERMINATED
from .subscription import EventSubscription

#: seconds between two streams opened after one broke, at the least
REOPEN_PAUSE = 0.2

Opened = tuple[Future, Any, Callable[[Any], list], Callable[[Any], None]]
OpenStream = Callable[[dict], Opened]


class _Receiver:
    """What the server host hands this stream's notifications to (by its subscription id)."""

    def __init__(self, loop: "PushLoop", tag: Any):
        self.loop = loop
        self.tag = tag

    def offer(self, method: str, params: dict) -> bool:
        if subscription_tag(params) != self.tag:
            return False
        self.loop.heard(method, params)
        return True

    def _end(self, reason: str) -> None:  # the server was stopped
        self.loop.sub.end(reason)
        self.loop.wake()


class PushLoop:
    """Keeps one subscription's push stream open until stopped."""

    def __init__(self, open_stream: OpenStream, sub: EventSubscription, *, key: str,
                 heartbeat: float, max_age_ms: int | None):
        self.open_stream = open_stream
        self.sub = sub
        self.key = key
        self.heartbeat = heartbeat
        self.max_age_ms = max_age_ms
        self._stop = threading.Event()
        self._activity = threading.Event()
        self._active = threading.Event()
        self._lock = threading.Lock()
        self._future: Future | None = None
        self._receiver: _Receiver | None = None
        self._unregister: Callable[[Any], None] | None = None
        self._thread: threading.Thread | None = None

    # -- the stream ----------------------------------------------------------------------

    def _open(self) -> Future:
        params: dict[str, Any] = {"name": self.sub.name, "arguments": self.sub.arguments,
                                  "cursor": self.sub.latest}
        if self.max_age_ms is not None and self.sub.latest is not None:
            params["maxAgeMs"] = self.max_age_ms
        self._active.clear()
        future, tag, register, unregister = self.open_stream(params)
        receiver = _Receiver(self, tag)
        with self._lock:
            self._future, self._receiver, self._unregister = future, receiver, unregister
            self.sub.streams_opened += 1
        for method, early in register(receiver):  # what came before it was registered
            receiver.offer(method, early)
        future.add_done_callback(lambda _: self.wake())
        return future

    def _close_stream(self) -> None:
        with self._lock:
            future, receiver, unregister = self._future, self._receiver, self._unregister
            self._future = self._receiver = None
        if future is not None:
            future.cancel()
        if receiver is not None and unregister is not None:
            unregister(receiver)

    def heard(self, method: str, params: dict) -> None:
        """A notification of the stream (on the client's notification thread)."""
        sub = self.sub
        if method == ACTIVE:
            sub.advance(params.get("cursor"), bool(params.get("truncated")))
            self._active.set()
        elif method == EVENT:
            event = {k: v for k, v in params.items() if k not in ("_meta", "cursor")}
            sub.deliver(event, params.get("cursor"))
        elif method == HEARTBEAT:
            sub.advance(params.get("cursor"))
        elif method == TERMINATED:
            error = params.get("error")
            said = error.get("message") if isinstance(error, dict) else None
            sub.end(f"the server ended the subscription: {said or 'terminated'}")
            self._stop.set()
        self._activity.set()

    def wake(self) -> None:
        self._activity.set()

    def first(self, timeout: float) -> None:
        """Open the stream; block until it is active (at most ``timeout`` s). Raises the
        server's McpError, SubscriptionEnded, or RequestTimeout (the stream is then closed)."""
        future = self._open()
        self._activity.clear()
        while not self._active.is_set() and not future.done():
            if not self._activity.wait(timeout):
                break
            self._activity.clear()
        if self._active.is_set():
            return
        self._close_stream()
        if not future.done():
            raise RequestTimeout(f"events/stream was not active within {timeout:g} s")
        error = None if future.cancelled() else future.exception()
        if error is not None:
            raise error
        raise SubscriptionEnded("the server ended events/stream before it was active")

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"raider-{self.key}-events-push")
        self._thread.start()

    def _run(self) -> None:
        silence = 2 * self.heartbeat
        try:
            while not self._stop.is_set() and not self.sub.closed:
                self._activity.clear()
                heard = self._activity.wait(silence)
                if self._stop.is_set() or self.sub.closed:
                    return
                with self._lock:
                    future = self._future
                if heard and future is not None and not future.done():
                    continue  # an event, a heartbeat: alive
                error = None
                if future is not None and future.done() and not future.cancelled():
                    error = future.exception()
                if isinstance(error, McpError):
                    self.sub.end(f"the server refused events/stream: {error}")
                    return
                # silent for too long, or ended under us: open it again from the cursor
                self._close_stream()
                if self._stop.wait(REOPEN_PAUSE):
                    return
                try:
                    self._open()
                except Exception as exc:  # noqa: BLE001 - not connected: the subscription ends
                    self.sub.end(f"events/stream could not be opened again: {exc}")
                    return
        finally:
            self._close_stream()

    def stop(self, timeout: float) -> None:
        """Cancel the stream and join the thread (at most ``timeout`` s)."""
        self._stop.set()
        self._activity.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        self._close_stream()
