"""Event-stream answers of a ToolServer served over HTTP (see :mod:`.serving_http`).

    streams = StreamHub(tool_server, max_streams=8)
    stream = streams.open(request_id=7, honored={"toolsListChanged": True})   # None when full
    return stream.body(first=[ack], disconnected=environ.get("waitress.client_disconnected"))
    streams.close()                      # every open stream ends gracefully

Three kinds of stream, each one WSGI answer body that holds its worker thread while it is
open:

- a ``subscriptions/listen`` stream (the stateless era): its acknowledgement, then the tool
  server's list changes, resource updates and task status changes it asked for, tagged with
  its request id;
- the GET stream of the handshake era: the tool list's changes;
- a tool call that reports progress: its progress notifications, then its answer.

The first two are long-lived and fed by the tool server's listeners: at most
``max_streams`` are open at once (a further one is refused by the app with 503). A stream
ends when the client goes (noticed within :data:`POLL` seconds under waitress, which says so
in ``environ``, and at the next keep-alive write elsewhere), or gracefully when the hub is
closed: a listen stream then gets its answer, as the revision says a server ends one. A comment
is sent after :data:`KEEPALIVE` seconds of silence. Nothing is kept between requests: the
streams of a worker are fed by that worker's tool server alone.
"""
from __future__ import annotations

import json
import queue
import threading
import time
from typing import Any, Callable, Iterable, Iterator

from ..protocol.sse_events import KEEP_ALIVE, encode_event
from .served import listen_notification, listen_result

#: at most this many long-lived streams (listen, GET) are open at once, by default
MAX_STREAMS = 8
#: seconds of silence after which a comment is sent on a stream
KEEPALIVE = 15.0
#: seconds between two looks at whether the client of a silent stream has gone
POLL = 0.5
_END = object()

Disconnected = Callable[[], bool]


def sse_message(message: dict) -> bytes:
    """One JSON-RPC message as an event."""
    return encode_event(json.dumps(message, separators=(",", ":")), event="message")


class EventStream:
    """One answer stream: messages are put from any thread and sent, in order, by the WSGI
    server's thread iterating :meth:`body`."""

    def __init__(self, keepalive: float = KEEPALIVE, on_close: Callable[["EventStream"], None]
                 | None = None, request_id: Any = None, honored: dict | None = None,
                 on_abandon: Callable[[], None] | None = None):
        self.request_id = request_id
        self.honored = honored   # the listen filter; None for the GET stream and calls
        self.keepalive = keepalive
        self._queue: "queue.Queue[Any]" = queue.Queue()
        self._on_close = on_close
        #: told when the client goes before the stream ended (for a call: its cancel)
        self.on_abandon = on_abandon

    def put(self, message: dict) -> None:
        """Send ``message`` on the stream (does not block)."""
        self._queue.put(message)

    def end(self, last: dict | None = None) -> None:
        """End the stream, after ``last`` when given (does not block)."""
        if last is not None:
            self._queue.put(last)
        self._queue.put(_END)

    def body(self, first: Iterable[dict] = (), disconnected: Disconnected | None = None,
             opening: bytes = b"") -> Iterator[bytes]:
        """The answer body: ``opening`` (a comment that makes the server send the headers),
        the ``first`` messages, then what is put, until :meth:`end` or the client goes.
        Closing it (the WSGI server does, whichever way it ends) unregisters the stream."""
        gone = disconnected if callable(disconnected) else (lambda: False)
        finished = False
        try:
            if opening:
                yield opening
            for message in first:
                yield sse_message(message)
            quiet_since = time.monotonic()
            while True:
                try:
                    item = self._queue.get(timeout=min(POLL, self.keepalive))
                except queue.Empty:
                    if gone():
                        return
                    if time.monotonic() - quiet_since >= self.keepalive:
                        yield KEEP_ALIVE  # raises in the server when the client has gone
                        quiet_since = time.monotonic()
                    continue
                if item is _END:
                    finished = True
                    return
                yield sse_message(item)
                quiet_since = time.monotonic()
        finally:
            if self._on_close is not None:
                self._on_close(self)
            if not finished and self.on_abandon is not None:
                self.on_abandon()


class StreamHub:
    """The long-lived streams of one served app, fed by the tool server's changes.

    ``open`` never blocks; ``close`` ends every stream gracefully (a listen stream with its
    answer) and refuses new ones. Thread-safe.
    """

    def __init__(self, tool_server, *, max_streams: int = MAX_STREAMS,
                 keepalive: float = KEEPALIVE):
        if not isinstance(max_streams, int) or isinstance(max_streams, bool) or max_streams < 0:
            raise ValueError(f"max_streams must be a whole number >= 0, not {max_streams!r}")
        if not isinstance(keepalive, (int, float)) or keepalive <= 0:
            raise ValueError(f"keepalive must be a positive number of seconds, not {keepalive!r}")
        self.tool_server = tool_server
        self.max_streams = max_streams
        self.keepalive = float(keepalive)
        self._lock = threading.Lock()
        self._streams: set[EventStream] = set()
        self._held = 0  # the bodies of other long-lived streams (a session's GET streams)
        self._closed = False
        self._idle = threading.Condition(self._lock)
        tool_server.add_listener(self._tools_changed)
        tool_server.add_resource_listener(self._resource_updated)
        tool_server.served_tasks.add_listener(self._task_changed)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called (long-lived streams fed elsewhere end then)."""
        return self._closed

    @property
    def count(self) -> int:
        """How many long-lived streams are open."""
        with self._lock:
            return len(self._streams) + self._held

    def open(self, request_id: Any = None, honored: dict | None = None) -> EventStream | None:
        """A new stream: a listen stream with ``honored`` (its acknowledged filter) and
        ``request_id``, or the GET stream without. None when ``max_streams`` are open or the
        hub is closed."""
        stream = EventStream(self.keepalive, self._forget, request_id, honored)
        with self._lock:
            if self._closed or len(self._streams) + self._held >= self.max_streams:
                return None
            self._streams.add(stream)
        return stream

    def hold(self, body: Callable[[], Iterator[bytes]]) -> Iterable[bytes] | None:
        """The answer body ``body()`` of a long-lived stream fed elsewhere (a session's GET
        stream), counted among the open streams until the WSGI server closes it; None (and
        ``body`` not called) when ``max_streams`` are open or the hub is closed."""
        with self._lock:
            if self._closed or len(self._streams) + self._held >= self.max_streams:
                return None
            self._held += 1
        try:
            return _Held(body(), self._release)
        except BaseException:
            self._release()
            raise

    def call_stream(self) -> EventStream:
        """A stream for one call's progress and answer (not counted, not fed)."""
        return EventStream(self.keepalive)

    def wait_idle(self, timeout: float) -> bool:
        """Block until no long-lived stream is open, at most ``timeout`` s."""
        deadline = time.monotonic() + timeout
        with self._idle:
            while self._streams or self._held:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(left)
            return True

    def close(self) -> None:
        """End every stream gracefully and refuse new ones. Safe to call twice."""
        with self._lock:
            self._closed = True
            streams = list(self._streams)
        self.tool_server.remove_listener(self._tools_changed)
        self.tool_server.remove_resource_listener(self._resource_updated)
        self.tool_server.served_tasks.remove_listener(self._task_changed)
        for stream in streams:
            if stream.honored is None:
                stream.end()
            else:
                stream.end({"jsonrpc": "2.0", "id": stream.request_id,
                            "result": listen_result(stream.request_id)})

    def _release(self) -> None:
        with self._idle:
            self._held -= 1
            self._idle.notify_all()

    def _forget(self, stream: EventStream) -> None:
        with self._idle:
            self._streams.discard(stream)
            self._idle.notify_all()

    def _tools_changed(self, _server: Any) -> None:
        self._feed(tools_changed=True)

    def _resource_updated(self, uri: str) -> None:
        self._feed(uri=uri)

    def _task_changed(self, task: dict) -> None:
        self._feed(task=task)

    def _feed(self, **change: Any) -> None:
        with self._lock:
            streams = list(self._streams)
        for stream in streams:
            if stream.honored is None:  # the GET stream: the tool list's changes only
                if change.get("tools_changed"):
                    stream.put({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
                continue
            message = listen_notification(stream.honored, stream.request_id, **change)
            if message is not None:
                stream.put(message)


class _Held:
    """A WSGI body that gives its slot back when the server closes it (PEP 3333 closes
    every body, also one never iterated), once."""

    def __init__(self, body: Iterator[bytes], release: Callable[[], None]):
        self._body = body
        self._release: Callable[[], None] | None = release

    def __iter__(self) -> Iterator[bytes]:
        return self._body

    def close(self) -> None:
        close = getattr(self._body, "close", None)
        try:
            if close is not None:
                close()
        finally:
            release, self._release = self._release, None
            if release is not None:
                release()
