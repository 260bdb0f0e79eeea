"""The wire rules of the stateless revision (2026-07-28), as pure functions.

    meta = request_meta("2026-07-28", {"roots": {}}, {"name": "me", "version": "1"})
    stamp({"name": "echo"}, meta)        # params with _meta carrying the three keys
    describe(discover_result, offered)   # a Description, or raises McpError

Nothing here blocks or sends anything.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ... import _moved
from ...errors import McpError, UnsupportedProtocol
from ...protocol.codes import INTERNAL_ERROR, STATELESS_CODES, UNSUPPORTED_VERSION
from ...protocol.revisions import LEGACY_VERSIONS, MODERN_VERSIONS, PROTOCOL_CHOICES  # noqa: F401 - here too

PREFIX = "io.modelcontextprotocol/"
META_VERSION = PREFIX + "protocolVersion"
META_CAPABILITIES = PREFIX + "clientCapabilities"
META_CLIENT_INFO = PREFIX + "clientInfo"
META_LOG_LEVEL = PREFIX + "logLevel"
META_SERVER_INFO = PREFIX + "serverInfo"
META_SUBSCRIPTION = PREFIX + "subscriptionId"
#: the tasks extension (SEP-2663) a client declares among its capabilities' ``extensions``
TASKS_EXTENSION = PREFIX + "tasks"
#: a private ``_meta`` mark of a call made with ``tasks=False``: the era drops the extension
#: from that request's capabilities (and the mark itself) as it stamps it
NO_TASKS = "raider_sync/no-tasks"

#: error codes only a server of the stateless revision answers
MODERN_CODES = STATELESS_CODES

#: the methods whose result may be ``input_required``
ROUND_METHODS = ("tools/call", "prompts/get", "resources/read")
#: the results a client may cache by their ttlMs
CACHEABLE = ("server/discover", "tools/list", "prompts/list", "resources/list",
             "resources/templates/list", "resources/read")


def request_meta(version: str, capabilities: dict, client_info: dict,
                 log_level: str | None = None) -> dict:
    """The ``_meta`` keys every request of the stateless revision carries."""
    meta = {META_VERSION: version, META_CAPABILITIES: capabilities, META_CLIENT_INFO: client_info}
    if log_level is not None:
        meta[META_LOG_LEVEL] = log_level
    return meta


def stamp(params: dict | None, meta: dict) -> dict:
    """``params`` with ``meta`` merged into its ``_meta`` (the protocol keys win; a caller's
    progressToken or trace keys stay)."""
    params = dict(params or {})
    params["_meta"] = {**(params.get("_meta") or {}), **meta}
    return params


def with_tasks(capabilities: dict) -> dict:
    """``capabilities`` (the client's, of the stateless era) declaring the tasks extension."""
    extensions = dict(capabilities.get("extensions") or {})
    extensions[TASKS_EXTENSION] = {}
    return {**capabilities, "extensions": extensions}


def without_tasks(capabilities: dict) -> dict:
    """``capabilities`` without the tasks extension (a call that must not become a task)."""
    extensions = {k: v for k, v in (capabilities.get("extensions") or {}).items()
                  if k != TASKS_EXTENSION}
    trimmed = {k: v for k, v in capabilities.items() if k != "extensions"}
    if extensions:
        trimmed["extensions"] = extensions
    return trimmed


def modern_capabilities(declared: dict) -> dict:
    """The client capabilities of the stateless revision from those a handshake declares
    (the same shapes: roots ``{}``, sampling ``{}``, elicitation ``{form: {}}``)."""
    return {key: dict(value) for key, value in declared.items()}


@dataclass
class Description:
    """What a server says about itself, in either era."""

    era: str
    protocol_version: str
    capabilities: dict = field(default_factory=dict)
    server_info: dict = field(default_factory=dict)
    instructions: str | None = None
    supported: list = field(default_factory=list)
    ttl_ms: int = 0
    cache_scope: str | None = None
    raw: dict = field(default_factory=dict)


def describe(result: Any, offered: tuple[str, ...] = MODERN_VERSIONS) -> Description:
    """The Description of a ``server/discover`` result. Raises McpError for a result that is
    not one (no list of supported versions, capabilities that are not an object), and
    UnsupportedProtocol when it shares no version with ``offered`` (naming both lists)."""
    if not isinstance(result, dict):
        raise McpError(INTERNAL_ERROR, f"server/discover answered {type(result).__name__}, not an object")
    supported = result.get("supportedVersions")
    if not isinstance(supported, list) or not all(isinstance(v, str) for v in supported):
        raise McpError(INTERNAL_ERROR, "server/discover's result has no supportedVersions list")
    capabilities = result.get("capabilities", {})
    if not isinstance(capabilities, dict):
        raise McpError(INTERNAL_ERROR, "server/discover's capabilities are not an object")
    if result.get("resultType", "complete") != "complete":
        raise McpError(INTERNAL_ERROR, f"server/discover answered resultType {result['resultType']!r}")
    version = pick_version(supported, offered)
    if version is None:
        raise no_overlap(supported, offered)
    meta = result.get("_meta")
    if not isinstance(meta, dict):
        meta = {}
    info = meta.get(META_SERVER_INFO, result.get("serverInfo"))
    instructions = result.get("instructions")
    ttl = result.get("ttlMs")
    return Description("modern", version, dict(capabilities),
                       dict(info) if isinstance(info, dict) else {},
                       instructions if isinstance(instructions, str) else None,
                       list(supported), ttl_ms(ttl), _scope(result.get("cacheScope")),
                       dict(result))


def pick_version(supported: list, offered: tuple[str, ...]) -> str | None:
    """The newest of ``offered`` that ``supported`` lists, else None."""
    for version in offered:
        if version in supported:
            return version
    return None


def no_overlap(supported: list, offered: tuple[str, ...]) -> UnsupportedProtocol:
    """The refusal when the server's versions and ours share none: both lists named."""
    theirs = ", ".join(map(str, supported)) or "none"
    return UnsupportedProtocol(UNSUPPORTED_VERSION,
                               f"no MCP revision in common: the server supports {theirs}; "
                               f"raider_sync speaks {', '.join(offered)}",
                               {"supported": list(supported), "requested": list(offered)})


def supported_of(error: McpError) -> list | None:
    """The versions a -32022 answer names (``data.supported``), else None."""
    data = error.data if isinstance(error.data, dict) else {}
    supported = data.get("supported")
    if isinstance(supported, list) and all(isinstance(v, str) for v in supported):
        return supported
    return None


def ttl_ms(value: Any) -> int:
    """A result's ``ttlMs`` as milliseconds to keep it: 0 when absent, negative or not a
    number, at most 24 hours."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return 0
    return int(min(max(value, 0), 24 * 3600 * 1000))


def _scope(value: Any) -> str | None:
    return value if value in ("public", "private") else None


def result_type(result: Any, tasks: bool = False) -> str:
    """``complete`` or ``input_required`` (and ``task`` with ``tasks``: a tools/call's
    answer); raises McpError for any other resultType."""
    kind = result.get("resultType", "complete") if isinstance(result, dict) else "complete"
    if kind is None:
        kind = "complete"
    if kind == "task" and tasks:
        return kind
    if kind not in ("complete", "input_required"):
        raise McpError(INTERNAL_ERROR, f"the server answered resultType {kind!r}; raider_sync knows "
                               f"complete and input_required")
    return kind


def __getattr__(name: str):
    # the error codes this module named moved to raider_sync.protocol.codes
    return _moved.moved_name(__name__, name)
