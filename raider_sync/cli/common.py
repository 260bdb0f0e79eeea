"""What the client commands share: their exit codes and where their configuration comes from
(``--config FILE``, else ``./.mcp.json``, else the embedded demo server)."""
from __future__ import annotations

import os
import sys

from ..config import McpConfig

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def default_config() -> McpConfig:
    """The embedded default: the demo server, run with this Python."""
    return McpConfig.from_dict({"mcpServers": {"demo": {
        "command": sys.executable, "args": ["-m", "raider_sync.cli.demo"]}}})


def load_config(path: str | None) -> McpConfig:
    if path:
        return McpConfig.load(path)
    if os.path.exists(".mcp.json"):
        return McpConfig.load(".mcp.json")
    return default_config()
