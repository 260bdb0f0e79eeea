"""The wire of the events extension (``io.modelcontextprotocol/events``, a draft), with no I/O.

    event_params(params)            # (name, arguments, cursor, max_age_ms) of poll/stream/subscribe
    occurrence(event_id, name, ts_ms, data, cursor=...)   # one EventOccurrence

A server advertises ``capabilities.extensions["io.modelcontextprotocol/events"]`` in
``server/discover`` (the stateless revision only) and answers ``events/list``,
``events/poll``, ``events/stream`` and, for webhooks, ``events/subscribe`` and
``events/unsubscribe``. Every notification of a push stream carries the stream's request id
in ``_meta["io.modelcontextprotocol/subscriptionId"]``. The draft's error codes are in
:mod:`.codes`. Nothing here blocks.
"""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from ..errors import McpError
from .codes import INVALID_PARAMS

EXTENSION = "io.modelcontextprotocol/events"
#: the delivery modes an event type may offer
MODES = ("poll", "push", "webhook")
LIST = "events/list"
POLL = "events/poll"
STREAM = "events/stream"
SUBSCRIBE = "events/subscribe"
UNSUBSCRIBE = "events/unsubscribe"
METHODS = (LIST, POLL, STREAM, SUBSCRIBE, UNSUBSCRIBE)
#: the notifications of a push stream
ACTIVE = "notifications/events/active"
EVENT = "notifications/events/event"
HEARTBEAT = "notifications/events/heartbeat"
ERROR = "notifications/events/error"
TERMINATED = "notifications/events/terminated"
NOTIFICATIONS = (ACTIVE, EVENT, HEARTBEAT, ERROR, TERMINATED)
#: a server sends a heartbeat at least this often (seconds)
MAX_HEARTBEAT = 30.0


def event_params(params: Any) -> tuple[str, dict, str | None, int | None]:
    """``(name, arguments, cursor, maxAgeMs)`` of an ``events/poll``, ``events/stream`` or
    ``events/subscribe`` request. Raises McpError -32602 naming the field that is wrong."""
    if not isinstance(params, dict):
        raise McpError(INVALID_PARAMS, "params must be an object")
    name = params.get("name")
    if not isinstance(name, str) or not name:
        raise McpError(INVALID_PARAMS, "name must be a non-empty string")
    arguments = params.get("arguments")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise McpError(INVALID_PARAMS, "arguments must be an object")
    cursor = params.get("cursor")
    if cursor is not None and not isinstance(cursor, str):
        raise McpError(INVALID_PARAMS, "cursor must be a string or null")
    max_age = params.get("maxAgeMs")
    if max_age is not None and (not isinstance(max_age, int) or isinstance(max_age, bool)
                                or max_age < 0):
        raise McpError(INVALID_PARAMS, "maxAgeMs must be a whole number >= 0")
    return name, arguments, cursor, max_age


def whole_param(params: dict, field: str, minimum: int = 0) -> int | None:
    """An optional whole-number field of ``params`` (None when absent). Raises McpError
    -32602 naming it."""
    value = params.get(field)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise McpError(INVALID_PARAMS, f"{field} must be a whole number >= {minimum}")
    return value


def iso_ms(epoch_ms: int) -> str:
    """An ISO 8601 UTC timestamp of milliseconds since the epoch."""
    stamp = datetime.fromtimestamp(epoch_ms / 1000, timezone.utc)
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def occurrence(event_id: str, name: str, epoch_ms: int, data: Any, *,
               cursor: Any = ..., meta: dict | None = None) -> dict:
    """One ``EventOccurrence``; ``cursor`` is set on push and webhook deliveries only."""
    item: dict[str, Any] = {"eventId": event_id, "name": name, "timestamp": iso_ms(epoch_ms),
                            "data": data}
    if cursor is not ...:
        item["cursor"] = cursor
    if meta:
        item["_meta"] = meta
    return item
