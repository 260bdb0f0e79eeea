"""The event types a ToolServer declares: what ``events/list`` answers, and the check of a
subscription's name, arguments and delivery mode against them.

    catalog = EventCatalog()
    catalog.declare("deploy.done", description="A deploy finished",
                    input_schema={"type": "object", "properties": {"env": {"type": "string"}}},
                    payload_schema={"type": "object"}, delivery=("poll", "push"))
    catalog.check("deploy.done", {"env": "prod"}, "push")   # the EventType, or McpError

Nothing here blocks.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Iterable

from ...errors import InvalidArgument, McpError
from ...protocol.codes import EVENT_NOT_FOUND, EVENT_UNSUPPORTED, INVALID_PARAMS
from ...protocol.events import MODES
from ..tool_calls import check_schema

OPEN_SCHEMA = {"type": "object"}


@dataclass(frozen=True)
class EventType:
    """One declared event type."""

    name: str
    description: str = ""
    input_schema: dict = field(default_factory=lambda: dict(OPEN_SCHEMA))
    payload_schema: dict = field(default_factory=lambda: dict(OPEN_SCHEMA))
    delivery: tuple[str, ...] = MODES

    def entry(self) -> dict:
        """The ``events/list`` entry."""
        item: dict[str, Any] = {"name": self.name, "delivery": list(self.delivery),
                                "inputSchema": self.input_schema,
                                "payloadSchema": self.payload_schema}
        if self.description:
            item["description"] = self.description
        return item


def _schema(value: Any, what: str) -> dict:
    if value is None:
        return dict(OPEN_SCHEMA)
    if not isinstance(value, dict) or value.get("type", "object") != "object":
        raise InvalidArgument(f"{what} must be a JSON schema of type object")
    return dict(value)


def _delivery(value: Iterable[str]) -> tuple[str, ...]:
    modes = (value,) if isinstance(value, str) else tuple(value)
    unknown = [mode for mode in modes if mode not in MODES]
    if not modes or unknown:
        raise InvalidArgument(f"delivery must be a non-empty choice of {', '.join(MODES)}"
                              + (f"; not {unknown[0]!r}" if unknown else ""))
    return tuple(dict.fromkeys(modes))


class EventCatalog:
    """The declared event types, by name. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._types: dict[str, EventType] = {}

    def __len__(self) -> int:
        return len(self._types)

    def declare(self, name: str, *, description: str | None = None,
                input_schema: dict | None = None, payload_schema: dict | None = None,
                delivery: Iterable[str] = MODES) -> EventType:
        """Declare (or declare again, replacing) an event type. Raises InvalidArgument for an
        empty name, a schema that is not an object schema, or an unknown delivery mode."""
        if not isinstance(name, str) or not name:
            raise InvalidArgument("event name must be a non-empty string")
        kind = EventType(name, description or "", _schema(input_schema, "input_schema"),
                         _schema(payload_schema, "payload_schema"), _delivery(delivery))
        with self._lock:
            self._types[name] = kind
        return kind

    def get(self, name: str) -> EventType | None:
        with self._lock:
            return self._types.get(name)

    def entries(self) -> list[dict]:
        """The ``events/list`` entries, by name."""
        with self._lock:
            kinds = [self._types[name] for name in sorted(self._types)]
        return [kind.entry() for kind in kinds]

    def check(self, name: str, arguments: dict, mode: str) -> EventType:
        """The event type a subscription names, checked. Raises McpError: -32023 for an
        unknown name, -32026 for a delivery mode it does not offer, -32602 for arguments its
        input schema refuses (naming the field)."""
        kind = self.get(name)
        if kind is None:
            raise McpError(EVENT_NOT_FOUND, f"no event type {name!r}",
                           {"kind": "event", "name": name})
        if mode not in kind.delivery:
            raise McpError(EVENT_UNSUPPORTED, f"event type {name!r} is not delivered by {mode}",
                           {"feature": "deliveryMode", "value": mode})
        problems = check_schema(kind.input_schema, arguments)
        if problems:
            raise McpError(INVALID_PARAMS, f"invalid arguments for event {name!r}: "
                           + "; ".join(problems))
        return kind
