"""The events a ToolServer offers (the draft events extension, stateless era only), served.

    events = ServedEvents("local")
    events.declare("deploy.done", delivery=("poll", "push"))
    events.publish("deploy.done", {"ok": True})
    events.answer("events/poll", params)          # events/list, poll, subscribe, unsubscribe
    feed = events.feed(params, request_id)        # an events/stream's notifications (.feeds)

The parts: the declared types (:mod:`.catalog`), the log of what was published
(:mod:`.log`), poll answers and push feeds (:mod:`.feeds`) and webhooks (:mod:`.webhooks`).
:meth:`answer` does not block, except ``events/subscribe`` for its verification POST.
"""
from __future__ import annotations

import threading
from typing import Any, Iterable

from ...errors import InvalidArgument, McpError
from ...protocol.codes import EVENT_NOT_FOUND
from ...protocol.events import LIST, MAX_HEARTBEAT, MODES, POLL, SUBSCRIBE, UNSUBSCRIBE
from .catalog import EventCatalog, EventType
from .feeds import PushFeed, answer_poll
from .log import CAPACITY, Entry, EventLog, Match
from .webhooks import Webhooks

#: the pause a poll answer asks for (milliseconds)
NEXT_POLL_MS = 5000


def _positive(value: Any, what: str) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0 \
            or value != value or value == float("inf"):
        raise InvalidArgument(f"{what} must be a positive number of seconds, not {value!r}")
    return float(value)


class ServedEvents:
    """The event types, log and webhook subscriptions of one ToolServer. Thread-safe."""

    def __init__(self, key: str):
        self.key = key
        self.catalog = EventCatalog()
        self.log = EventLog(CAPACITY)
        #: seconds between two heartbeats of a quiet push stream (the draft: at most 30)
        self.heartbeat = MAX_HEARTBEAT
        #: the pause a poll answer asks for, in milliseconds
        self.next_poll_ms = NEXT_POLL_MS
        self.webhooks = Webhooks(self.log, self.catalog, key=key)
        self._lock = threading.Lock()

    def configure(self, *, heartbeat: float | None = None, next_poll: float | None = None,
                  log_size: int | None = None, webhook_loopback: bool | None = None,
                  webhook_min_ttl: float | None = None, webhook_attempts: int | None = None,
                  webhook_retry_delay: float | None = None,
                  webhook_timeout: float | None = None) -> None:
        """Change how events are served (None: unchanged); see :meth:`ToolServer.event
        <raider_sync.ToolServer.event>`. ``log_size`` starts a new, empty log (cursors given
        out before are then unknown). Raises InvalidArgument naming a bad value."""
        if heartbeat is not None:
            self.heartbeat = min(MAX_HEARTBEAT, _positive(heartbeat, "heartbeat"))
        if next_poll is not None:
            self.next_poll_ms = int(_positive(next_poll, "next_poll") * 1000)
        if log_size is not None:
            try:
                self.log = EventLog(log_size)
            except ValueError as exc:
                raise InvalidArgument(f"log_size: {exc}") from None
            self.webhooks.log = self.log
        hooks = self.webhooks
        if webhook_loopback is not None:
            hooks.loopback = bool(webhook_loopback)
        if webhook_min_ttl is not None:
            hooks.min_ttl = _positive(webhook_min_ttl, "webhook_min_ttl")
        if webhook_attempts is not None:
            if not isinstance(webhook_attempts, int) or webhook_attempts < 1:
                raise InvalidArgument("webhook_attempts must be a whole number >= 1")
            hooks.attempts = webhook_attempts
        if webhook_retry_delay is not None:
            hooks.retry_delay = _positive(webhook_retry_delay, "webhook_retry_delay")
        if webhook_timeout is not None:
            hooks.poster.timeout = _positive(webhook_timeout, "webhook_timeout")

    def __len__(self) -> int:
        return len(self.catalog)

    def declare(self, name: str, *, description: str | None = None,
                input_schema: dict | None = None, payload_schema: dict | None = None,
                delivery: Iterable[str] = MODES) -> EventType:
        return self.catalog.declare(name, description=description, input_schema=input_schema,
                                    payload_schema=payload_schema, delivery=delivery)

    def publish(self, name: str, data: Any, match: Match = None,
                event_id: str | None = None) -> Entry:
        """Record an occurrence of the declared event ``name``: polls and push streams see
        it, webhook subscriptions it reaches get it POSTed. Does not block. Raises
        InvalidArgument for an undeclared name or an ``event_id`` that is not a string."""
        if self.catalog.get(name) is None:
            raise InvalidArgument(f"event {name!r} is not declared (ToolServer.event)")
        if event_id is not None and (not isinstance(event_id, str) or not event_id):
            raise InvalidArgument("event_id must be a non-empty string")
        if match is not None and not (callable(match) or isinstance(match, dict)):
            raise InvalidArgument("arguments_match must be a dict, a callable or None")
        entry = self.log.append(name, data, match, event_id)
        self.webhooks.published(entry)
        return entry

    def answer(self, method: str, params: dict) -> dict:
        """The result of ``events/list``, ``events/poll``, ``events/subscribe`` or
        ``events/unsubscribe`` (without ``resultType``). Raises McpError."""
        if method == LIST:
            return {"events": self.catalog.entries()}
        if method == POLL:
            return answer_poll(self.log, self.catalog, params, self.next_poll_ms)
        if method == SUBSCRIBE:
            return self.webhooks.subscribe(params)
        if method == UNSUBSCRIBE:
            return self.webhooks.unsubscribe(params)
        raise McpError(EVENT_NOT_FOUND, f"no events method {method}")

    def feed(self, params: dict, request_id: Any) -> PushFeed:
        """The feed of one ``events/stream``. Raises McpError for a refused subscription."""
        return PushFeed(self.log, self.catalog, params, request_id, self.heartbeat)

    def close(self, timeout: float = 5.0) -> None:
        """Stop webhook deliveries (the worker joined within ``timeout`` s)."""
        self.webhooks.close(timeout)
        self.log.wake()
