"""Answering ``events/poll`` and feeding an ``events/stream``, whatever carries them.

    answer_poll(log, catalog, params, next_poll_ms=5000)      # the events/poll result
    feed = PushFeed(log, catalog, params, request_id, heartbeat=30.0)   # McpError if refused
    for message in feed.messages(ended):                        # blocks until ended()
        send(message)

A push stream begins with ``notifications/events/active`` (the cursor it starts at and
whether events were lost before it), then an ``notifications/events/event`` per occurrence
(with the cursor after it), and a ``notifications/events/heartbeat`` with the current cursor
after ``heartbeat`` seconds without one; each carries the stream's request id in
``_meta["io.modelcontextprotocol/subscriptionId"]``. :meth:`PushFeed.messages` looks at
``ended()`` at least every :data:`SLICE` seconds: a carrier ends it by its own signal (a
notifications/cancelled, a client gone, the app closed).
"""
from __future__ import annotations

import time
from typing import Any, Callable, Iterator

from ...client.eras.modern import META_SUBSCRIPTION
from ...protocol.events import (
    ACTIVE,
    EVENT,
    HEARTBEAT,
    event_params,
    occurrence,
    whole_param,
)
from .catalog import EventCatalog
from .log import Entry, EventLog

#: events one poll answers at most, unless it asks for fewer
MAX_EVENTS = 100
#: seconds between two looks at whether a push stream has ended
SLICE = 0.25


def occurrence_of(entry: Entry, **extra: Any) -> dict:
    return occurrence(entry.event_id, entry.name, entry.epoch_ms, entry.data, **extra)


def answer_poll(log: EventLog, catalog: EventCatalog, params: dict, next_poll_ms: int) -> dict:
    """The ``events/poll`` result. Raises McpError (see :meth:`EventCatalog.check`)."""
    name, arguments, cursor, max_age = event_params(params)
    catalog.check(name, arguments, "poll")
    limit = whole_param(params, "maxEvents", 1) or MAX_EVENTS
    start = log.start(cursor, max_age)
    entries, position, more = log.after(start.position, name, arguments, min(limit, MAX_EVENTS))
    return {"events": [occurrence_of(entry) for entry in entries],
            "cursor": log.cursor(position), "truncated": start.truncated, "hasMore": more,
            "nextPollMs": next_poll_ms}


class PushFeed:
    """One ``events/stream`` subscription: checked when made, fed by :meth:`messages`."""

    def __init__(self, log: EventLog, catalog: EventCatalog, params: dict, request_id: Any,
                 heartbeat: float):
        self.name, self.arguments, cursor, max_age = event_params(params)
        catalog.check(self.name, self.arguments, "push")
        self.log = log
        self.request_id = request_id
        self.heartbeat = heartbeat
        self.start = log.start(cursor, max_age)

    def _notification(self, method: str, params: dict) -> dict:
        return {"jsonrpc": "2.0", "method": method,
                "params": {**params, "_meta": {META_SUBSCRIPTION: self.request_id}}}

    def messages(self, ended: Callable[[], bool]) -> Iterator[dict]:
        """The stream's notifications, as they come, until ``ended()``. Blocks between them."""
        log, position = self.log, self.start.position
        yield self._notification(ACTIVE, {"cursor": log.cursor(position),
                                          "truncated": self.start.truncated})
        quiet_since = time.monotonic()
        while not ended():
            entries, position, _ = log.after(position, self.name, self.arguments)
            for entry in entries:
                yield self._notification(EVENT, occurrence_of(entry,
                                                              cursor=log.cursor(entry.seq)))
            now = time.monotonic()
            if entries:
                quiet_since = now
            elif now - quiet_since >= self.heartbeat:
                yield self._notification(HEARTBEAT, {"cursor": log.cursor(position)})
                quiet_since = now
            left = self.heartbeat - (time.monotonic() - quiet_since)
            log.wait(position, max(0.0, min(SLICE, left)))


def sse_body(feed: PushFeed, encode: Callable[[dict], bytes], *, disconnected: Any,
             closed: Callable[[], bool]) -> Iterator[bytes]:
    """An ``events/stream`` as the body of an event-stream answer (each message
    ``encode``d): it ends when the client goes (``disconnected()``, where the WSGI server
    says so; elsewhere a write to a closed connection ends it) or when the app closes
    (``closed()``: the stream then gets its answer, as a server ends one)."""
    gone = disconnected if callable(disconnected) else (lambda: False)
    for message in feed.messages(lambda: gone() or closed()):
        yield encode(message)
    if closed() and not gone():
        yield encode({"jsonrpc": "2.0", "id": feed.request_id,
                      "result": {"resultType": "complete",
                                 "_meta": {META_SUBSCRIPTION: feed.request_id}}})
