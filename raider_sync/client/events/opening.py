"""What ``McpServer.list_events`` and ``McpServer.events`` do (the events extension, a draft).

    list_events(server, timeout)                       # the events/list entries
    open_events(server, connection, "deploy.done", {}, mode="auto", ...)  # an EventSubscription

Only a server of the stateless era that advertises ``io.modelcontextprotocol/events`` is
asked; any other is refused here with McpError -32601, before anything is sent. ``mode``
"auto" streams (push) an event type that offers it, else polls it.
"""
from __future__ import annotations

from typing import Any

from ...errors import InvalidArgument, McpError
from ...protocol.codes import EVENT_NOT_FOUND, EVENT_UNSUPPORTED, METHOD_NOT_FOUND
from ...protocol.events import EXTENSION, LIST, MAX_HEARTBEAT, POLL, STREAM
from ...threads.timeouts import seconds
from ..eras.listen import LISTEN_TIMEOUT
from ..lifecycle import UP
from .polling import POLL_FLOOR, PollLoop
from .pushing import PushLoop
from .subscription import EventSubscription

MODES = ("auto", "poll", "push")


def check_offered(server: Any) -> None:
    """Raise McpError -32601 unless ``server`` is of the stateless era and advertises the
    events extension."""
    extensions = (server.capabilities or {}).get("extensions") or {}
    if server.era != "modern" or EXTENSION not in extensions:
        raise McpError(METHOD_NOT_FOUND, f"MCP server {server.name!r} does not offer events "
                                         f"(the {EXTENSION} extension of the stateless era)")


def list_events(server: Any, timeout: float) -> list[dict]:
    """Every ``events/list`` entry of ``server``. Blocks at most ``timeout`` s in all."""
    check_offered(server)
    entries: list[dict] = []
    params: dict[str, Any] = {}
    for _ in range(100):  # pages
        result = server.request(LIST, params or None, timeout=timeout)
        entries.extend(e for e in result.get("events") or [] if isinstance(e, dict))
        cursor = result.get("nextCursor")
        if not cursor:
            break
        params = {"cursor": cursor}
    return entries


def _mode(server: Any, name: str, mode: str, timeout: float) -> str:
    if mode != "auto":
        return mode
    kinds = {entry.get("name"): entry for entry in list_events(server, timeout)}
    if name not in kinds:
        raise McpError(EVENT_NOT_FOUND, f"MCP server {server.name!r} lists no event {name!r}",
                       {"kind": "event", "name": name})
    offered = kinds[name].get("delivery") or []
    for choice in ("push", "poll"):
        if choice in offered:
            return choice
    raise McpError(EVENT_UNSUPPORTED, f"event {name!r} is delivered neither by push nor by "
                                      f"poll (only {', '.join(map(str, offered)) or 'nothing'})",
                   {"feature": "deliveryMode"})


def open_events(server: Any, connection: Any, name: str, arguments: dict | None, *,
                mode: str, cursor: str | None, max_age: float | None, poll_floor: float,
                heartbeat: float, timeout: float) -> EventSubscription:
    """A running subscription (see :meth:`raider_sync.McpServer.events`). Blocks for the
    first poll, or until the push stream is active, at most ``timeout`` s."""
    if not isinstance(name, str) or not name:
        raise InvalidArgument("name: expected a non-empty string")
    if arguments is not None and not isinstance(arguments, dict):
        raise InvalidArgument("arguments: expected a dict")
    if mode not in MODES:
        raise InvalidArgument(f"mode: expected one of {', '.join(MODES)}, not {mode!r}")
    if cursor is not None and not isinstance(cursor, str):
        raise InvalidArgument("cursor: expected a string (one EventSubscription.cursor gave)")
    max_age_ms = None if max_age is None else int(seconds(max_age, 0, "max_age",
                                                          "McpServer.events") * 1000)
    poll_floor = seconds(poll_floor, POLL_FLOOR, "poll_floor", "McpServer.events")
    heartbeat = seconds(heartbeat, MAX_HEARTBEAT, "heartbeat", "McpServer.events")
    check_offered(server)
    mode = _mode(server, name, mode, timeout)
    sub = EventSubscription(name, dict(arguments or {}), mode, cursor)
    host = connection.host
    if mode == "poll":
        loop: Any = PollLoop(lambda params, bound: server.request(POLL, params, timeout=bound),
                             sub, key=server.key, floor=poll_floor, max_age_ms=max_age_ms,
                             timeout=timeout, is_up=lambda: server.status in UP)
    else:
        def open_stream(params: dict) -> tuple:
            era = connection.era
            if connection.status not in UP or era is None or getattr(era, "name", "") != "modern":
                raise connection.not_connected()
            future = era.session.request_f(STREAM, params, timeout=LISTEN_TIMEOUT)
            tag = future.request_id
            return future, tag, lambda receiver: host.add(receiver, tag), host.remove
        loop = PushLoop(open_stream, sub, key=server.key, heartbeat=heartbeat,
                        max_age_ms=max_age_ms)
    watcher = _Watcher(sub, loop)
    host.add(watcher)  # the server's stop ends the subscription
    def on_close() -> None:
        loop.stop(timeout)
        host.remove(watcher)
    sub._on_close = on_close
    try:
        loop.first() if mode == "poll" else loop.first(timeout)
    except BaseException:
        sub.close()
        raise
    loop.start()
    return sub


class _Watcher:
    """Ends a subscription when its server stops (the host ends what it holds)."""

    def __init__(self, sub: EventSubscription, loop: Any):
        self.sub = sub
        self.loop = loop

    def offer(self, method: str, params: dict) -> bool:
        return False

    def _end(self, reason: str) -> None:
        self.sub.end(reason)
        self.loop.stop(0)
