"""The MCP revisions raider_sync speaks and the rules of the initialize handshake.

The handshake era (2024-11-05 .. 2025-11-25): ``initialize``, then
``notifications/initialized``. The stateless 2026-07-28 revision (``server/discover``, no
session) lives in :mod:`raider_sync.client.eras`, which picks the era by what the server answers.
"""
from __future__ import annotations

import time
from typing import Any, Callable

from .errors import McpError, UnsupportedProtocol

CLIENT_PROTOCOL_VERSION = "2025-11-25"
KNOWN_PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
STATELESS_PROTOCOL_VERSION = "2026-07-28"
UNSUPPORTED_PROTOCOL_VERSION = -32022
MAX_PAGES = 1000
#: requests a server may be sent twice for the effect of once: reads, the handshake and
#: settings. A request lost in flight (the connection broke after it went out) is sent once
#: more only when its method is one of these; a tools/call never is, since a tool may act.
REPEATABLE_METHODS = frozenset({
    "initialize", "server/discover", "ping", "tools/list", "prompts/list", "prompts/get",
    "resources/list", "resources/templates/list", "resources/read", "completion/complete",
    "logging/setLevel", "resources/subscribe", "resources/unsubscribe",
})

STATELESS_REASON = (f"the server refused initialize: it speaks only the stateless MCP revision "
                    f"{STATELESS_PROTOCOL_VERSION}, which this connection does not use (protocol "
                    f"is a handshake one, or the server did not answer server/discover); the "
                    f"server supports {STATELESS_PROTOCOL_VERSION}, the handshake offers "
                    f"{', '.join(KNOWN_PROTOCOL_VERSIONS)}")


def initialize_params(capabilities: dict, client_info: dict,
                      version: str = CLIENT_PROTOCOL_VERSION) -> dict:
    """The params of the ``initialize`` request raider_sync sends."""
    return {"protocolVersion": version, "capabilities": capabilities,
            "clientInfo": client_info}


def check_initialize_result(result: Any) -> str:
    """The negotiated revision of an ``initialize`` result. Raises UnsupportedProtocol for a
    revision raider_sync does not accept, McpError for a result that is not one."""
    if not isinstance(result, dict) or not isinstance(result.get("protocolVersion"), str):
        raise McpError(-32603, "the initialize answer has no protocolVersion")
    version = result["protocolVersion"]
    if version == STATELESS_PROTOCOL_VERSION:
        raise UnsupportedProtocol(UNSUPPORTED_PROTOCOL_VERSION, STATELESS_REASON)
    if version not in KNOWN_PROTOCOL_VERSIONS:
        raise UnsupportedProtocol(
            UNSUPPORTED_PROTOCOL_VERSION,
            f"the server answered protocol version {version}, raider_sync asked for "
            f"{CLIENT_PROTOCOL_VERSION} and accepts {', '.join(KNOWN_PROTOCOL_VERSIONS)}")
    return version


def translate_initialize_error(error: McpError) -> McpError:
    """An initialize error answer, recognised as the stateless revision's refusal (-32022
    naming only 2026-07-28 as supported) where it is one."""
    supported = error.data.get("supported") if isinstance(error.data, dict) else None
    if error.code == UNSUPPORTED_PROTOCOL_VERSION or supported is not None:
        if isinstance(supported, list) and not set(supported) & set(KNOWN_PROTOCOL_VERSIONS):
            return UnsupportedProtocol(error.code, STATELESS_REASON
                                       if STATELESS_PROTOCOL_VERSION in supported else
                                       f"the server supports only {', '.join(map(str, supported))}; "
                                       f"raider_sync speaks {', '.join(KNOWN_PROTOCOL_VERSIONS)}",
                                       error.data)
    return error


def fetch_all_pages(request: Callable[[dict | None, float], dict], field: str,
                    timeout: float) -> list:
    """Every item of a paginated list (tools/list, prompts/list, resources/list, ...).

    ``request(params, seconds)`` sends one page's request and blocks for its result; the
    cursor is followed until the answer has no ``nextCursor`` (or repeats one), all pages
    within ``timeout`` seconds in all. Raises McpError for a page that is not an object with
    a list under ``field``.
    """
    deadline = time.monotonic() + timeout
    items: list = []
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(MAX_PAGES):
        result = request({"cursor": cursor} if cursor else None,
                         max(0.0, deadline - time.monotonic()))
        page = result.get(field) if isinstance(result, dict) else None
        if not isinstance(page, (list, type(None))) or not isinstance(result, dict):
            raise McpError(-32603, f"a page of {field} is not an object with a list of "
                                   f"{field}: {str(result)[:100]}")
        items.extend(page or [])
        cursor = result.get("nextCursor")
        if not cursor or cursor in seen:
            break
        seen.add(cursor)
    return items
