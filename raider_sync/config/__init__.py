"""Claude Code's ``.mcp.json``: server specs, ``${VAR}`` expansion and tool names.

    {"mcpServers": {
        "files":  {"command": "npx", "args": ["-y", "mcp-files"], "env": {"ROOT": "${HOME}"}},
        "remote": {"type": "http", "url": "https://mcp.example/mcp",
                   "headers": {"Authorization": "Bearer ${TOKEN}"}, "timeout": 60000}}}

``McpConfig.load(path)`` / ``McpConfig.from_dict(data)`` validate every entry at once and raise
one :class:`ConfigError` that names each bad server and field; nothing is half loaded.
Cursor's ``mcp.json`` has the same shape; VS Code's (``{"servers": ..., "inputs": [...]}``)
loads too, with the editors' variables (``${env:VAR}``, ``${input:ID}``, ``${userHome}``,
``${workspaceFolder}``, ...) and ``envFile``.

This package's face hands on the names of its parts: :mod:`.loading` (McpConfig, reading a
file), :mod:`.specs` (ServerSpec and its blocks), :mod:`.variables` (``${VAR}`` expansion,
``envFile``), :mod:`.names` (tool names); other clients' files are :mod:`.dialects`', servers
found by name :mod:`.discovery`'s.
"""
from __future__ import annotations

from . import dialects
from .loading import SERVER_KEYS, McpConfig
from .names import find_named, normalize_name, tool_name
from .specs import (
    TRANSPORT_ALIASES,
    OAuthSettings,
    RestartPolicy,
    ServerSpec,
    Transport,
    loopback_callback_port,
)
from .variables import INPUT_PREFIX, expand_vars, input_variable

__all__ = [
    "INPUT_PREFIX",
    "McpConfig",
    "OAuthSettings",
    "RestartPolicy",
    "SERVER_KEYS",
    "ServerSpec",
    "TRANSPORT_ALIASES",
    "Transport",
    "dialects",
    "expand_vars",
    "find_named",
    "input_variable",
    "loopback_callback_port",
    "normalize_name",
    "tool_name",
]
