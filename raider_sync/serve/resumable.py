"""Event streams a client can resume: each event has an id, the events are kept, and a
client that lost the connection (or was told to poll, SEP-1699) asks again with
``Last-Event-ID`` and gets what followed.

    stream = ResumableStream("s3", keepalive=15.0, retry_ms=500)
    stream.put(message)                 # from any thread; kept and sent
    stream.cut()                        # end the connection now; the stream goes on
    body = stream.body(after=4)         # a new connection: events 5, 6, ... and what comes

Event ids are ``<stream id>-<n>``; the first event of a fresh connection is a priming event
(an id and empty data), after a ``retry:`` field when one is set, so that the client can
resume even before anything was sent. At most ``keep`` events are kept: a client that
resumes from an event no longer kept gets the stream from the oldest one kept.
"""
from __future__ import annotations

import collections
import json
import threading
import time
from typing import Callable, Iterator

from ..protocol.sse_events import KEEP_ALIVE, encode_event

#: events kept per stream for a client that resumes
KEEP = 1000
#: seconds between two looks at whether the client of a silent stream has gone
POLL = 0.5

Disconnected = Callable[[], bool]


def event_id(stream_id: str, number: int) -> str:
    return f"{stream_id}-{number}"


def parse_event_id(value: str | None) -> tuple[str, int] | None:
    """``(stream id, event number)`` of a ``Last-Event-ID``, or None for one not ours."""
    if not value or "-" not in value:
        return None
    stream_id, _, number = value.rpartition("-")
    return (stream_id, int(number)) if number.isdigit() and stream_id else None


class ResumableStream:
    """One logical stream of events, carried by one connection at a time. Thread-safe."""

    def __init__(self, stream_id: str, *, keepalive: float, retry_ms: int | None = None,
                 keep: int = KEEP, on_end: Callable[["ResumableStream"], None] | None = None):
        self.stream_id = stream_id
        self.keepalive = keepalive
        self.retry_ms = retry_ms
        self._events: collections.deque = collections.deque(maxlen=keep)  # (number, bytes)
        self._count = 0
        self._ended = False
        #: the event count at each cut: a connection ends after the events put before the
        #: first cut made while it was open
        self._cuts: list[int] = []
        self._changed = threading.Condition()
        self._on_end = on_end

    @property
    def ended(self) -> bool:
        return self._ended

    def put(self, message: dict) -> None:
        """Keep ``message`` as the next event and send it to the connection carrying the
        stream, if any. Never blocks (beyond a lock)."""
        with self._changed:
            if self._ended:
                return
            self._count += 1
            data = json.dumps(message, separators=(",", ":"))
            self._events.append((self._count, encode_event(
                data, event="message", event_id=event_id(self.stream_id, self._count))))
            self._changed.notify_all()

    def end(self, last: dict | None = None) -> None:
        """End the stream, after ``last`` when given: the connection carrying it ends once
        it has sent everything (a later resume still gets the kept events)."""
        if last is not None:
            self.put(last)
        with self._changed:
            self._ended = True
            self._changed.notify_all()
        if self._on_end is not None:
            self._on_end(self)

    def cut(self) -> None:
        """End the connection that carries the stream now, as a server that polls does; the
        stream itself goes on, for the client to resume."""
        with self._changed:
            self._cuts.append(self._count)
            self._changed.notify_all()

    def body(self, after: int = 0, disconnected: Disconnected | None = None,
             priming: bool = True) -> Iterator[bytes]:
        """A connection's body: the priming event (``retry:`` first when set), the kept
        events numbered above ``after``, then the new ones, until the stream ends, is cut,
        or the client goes."""
        with self._changed:  # now, not when the body is first read: a cut made in between
            cuts = len(self._cuts)  # ends this connection
        return self._body(after, cuts, disconnected, priming)

    def _body(self, after: int, cuts: int, disconnected: Disconnected | None,
              priming: bool) -> Iterator[bytes]:
        gone = disconnected if callable(disconnected) else (lambda: False)
        if priming:
            retry = f"retry: {self.retry_ms}\n" if self.retry_ms is not None else ""
            yield (retry + f"id: {event_id(self.stream_id, after)}\ndata: \n\n").encode()
        sent = after
        quiet_since = time.monotonic()
        while True:
            with self._changed:
                limit = self._cuts[cuts] if len(self._cuts) > cuts else None
                kept = [(number, data) for number, data in self._events if number > sent
                        and (limit is None or number <= limit)]
                if kept:
                    sent = kept[-1][0]
                elif self._ended or limit is not None:
                    return
                else:
                    self._changed.wait(min(POLL, self.keepalive))
            if kept:
                yield b"".join(data for _, data in kept)
                quiet_since = time.monotonic()
            elif gone():
                return
            elif time.monotonic() - quiet_since >= self.keepalive:
                yield KEEP_ALIVE  # raises in the server when the client has gone
                quiet_since = time.monotonic()
