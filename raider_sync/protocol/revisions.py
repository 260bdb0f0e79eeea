"""The MCP revisions raider_sync speaks, and which requests may be sent twice.

The handshake era (2024-11-05 .. 2025-11-25): ``initialize``, then
``notifications/initialized`` (:mod:`.handshake`). The stateless 2026-07-28 revision
(``server/discover``, no session) lives in :mod:`raider_sync.client.eras`, which picks the
era by what the server answers. Constants only.
"""
from __future__ import annotations

CLIENT_PROTOCOL_VERSION = "2025-11-25"
KNOWN_PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
STATELESS_PROTOCOL_VERSION = "2026-07-28"
#: the revisions of each era, newest first
MODERN_VERSIONS = (STATELESS_PROTOCOL_VERSION,)
LEGACY_VERSIONS = KNOWN_PROTOCOL_VERSIONS
#: what ``protocol`` (an option, a .mcp.json key) may say: an era, or an exact revision
PROTOCOL_CHOICES = ("auto", "legacy", "modern") + MODERN_VERSIONS + LEGACY_VERSIONS
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
