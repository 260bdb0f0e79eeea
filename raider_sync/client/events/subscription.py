"""One subscription to a server's events, as a blocking queue with a cursor.

    with server.events("deploy.done", {"env": "prod"}) as sub:
        event = sub.next(30)             # an EventOccurrence, or None after 30 s
        store(sub.cursor)                # give it back later: server.events(..., cursor=...)

The loop that fills it (polling, or a push stream) is :mod:`.polling`'s or :mod:`.pushing`'s;
this object is what both hand events to. ``cursor`` is the position after the last event
taken with :meth:`EventSubscription.next` (and, once every event received was taken, the
newest position the server named): storing it and subscribing again with it later gets only
what came after, never loses an event taken after it, and may repeat one not yet taken
(events are delivered at least once; their ``eventId`` tells repeats, and the repeats this
object sees are dropped).
"""
from __future__ import annotations

import collections
import queue
import threading
from typing import Any, Callable, Iterator

from ...errors import SubscriptionEnded
from ...threads.timeouts import poll_seconds

#: eventIds remembered against repeats
SEEN = 1024
_END = object()


class EventSubscription:
    """Events of one ``(name, arguments)`` subscription. Context manager; :meth:`close` is
    safe to repeat and joins the loop's thread."""

    def __init__(self, name: str, arguments: dict, mode: str, cursor: str | None,
                 on_close: Callable[[], None] | None = None):
        self.name = name
        self.arguments = arguments
        #: "poll" or "push"
        self.mode = mode
        #: the position after the last event taken (None: now, the server keeps no history)
        self.cursor = cursor
        #: True once the server said events were lost (a cursor too old, a gap)
        self.truncated = False
        #: why the subscription ended (None while it runs)
        self.reason: str | None = None
        #: push: how many times the stream was opened (more than once: it was opened again)
        self.streams_opened = 0
        self._queue: "queue.Queue[Any]" = queue.Queue()
        self._lock = threading.Lock()
        self._latest = cursor
        self._pending = 0
        self._seen: collections.OrderedDict[str, None] = collections.OrderedDict()
        self._on_close = on_close
        self._closed = False

    def __enter__(self) -> "EventSubscription":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __iter__(self) -> Iterator[dict]:
        return self._events(None)

    def __repr__(self) -> str:
        state = "ended" if self.reason else "open"
        return f"<EventSubscription {self.name!r} {self.mode} {state}>"

    def next(self, timeout: float | None) -> dict | None:
        """The next event (an EventOccurrence: ``eventId``, ``name``, ``timestamp``,
        ``data``), blocking at most ``timeout`` s (0: only one already here; None: until
        one comes or the subscription ends); None when none came. Raises SubscriptionEnded
        once the subscription ended and every event it received was taken;
        InvalidArgument for a negative, NaN or infinite ``timeout``."""
        timeout = poll_seconds(timeout, method="EventSubscription.next")
        try:
            item = self._queue.get(timeout=timeout)
        except queue.Empty:
            return None
        if item is _END:
            self._queue.put(_END)
            raise SubscriptionEnded(self.reason or "the subscription ended")
        event, cursor = item
        with self._lock:
            self._pending -= 1
            self.cursor = self._latest if self._pending == 0 else cursor
        return event

    def events(self, timeout: float = 60.0) -> Iterator[dict]:
        """The events as they come; stops after ``timeout`` s without one (0: once none is
        waiting), or when the subscription ends."""
        return self._events(poll_seconds(timeout, method="EventSubscription.events"))

    def _events(self, timeout: float | None) -> Iterator[dict]:
        while True:
            try:
                event = self.next(timeout)
            except SubscriptionEnded:
                return
            if event is None:
                return
            yield event

    def close(self) -> None:
        """End the subscription: the poll loop stops, or the push stream is cancelled.
        Blocks until its thread ended (bounded by the request under way)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self.end("closed by the client")
        if self._on_close is not None:
            self._on_close()

    @property
    def closed(self) -> bool:
        return self.reason is not None

    # -- fed by the loop -----------------------------------------------------------------

    def deliver(self, event: dict, cursor: str | None) -> None:
        """Queue ``event``, unless its eventId was seen; ``cursor`` is the position after it."""
        event_id = event.get("eventId")
        with self._lock:
            if self.reason is not None:
                return
            if isinstance(event_id, str):
                if event_id in self._seen:
                    return
                self._seen[event_id] = None
                if len(self._seen) > SEEN:
                    self._seen.popitem(last=False)
            self._pending += 1
            self._latest = cursor
        self._queue.put((event, cursor))

    def advance(self, cursor: str | None, truncated: bool = False) -> None:
        """The server's position is ``cursor`` (a poll's, an active or heartbeat
        notification's); ``truncated``: events were lost before it."""
        with self._lock:
            self._latest = cursor
            if self._pending == 0:
                self.cursor = cursor
            if truncated:
                self.truncated = True

    @property
    def latest(self) -> str | None:
        """The newest position the server named (where the loop resumes)."""
        with self._lock:
            return self._latest

    def end(self, reason: str) -> None:
        with self._lock:
            if self.reason is not None:
                return
            self.reason = reason
        self._queue.put(_END)
