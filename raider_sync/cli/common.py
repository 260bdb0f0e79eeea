"""What the client commands share: their exit codes, where their configuration comes from
(``--config FILE``, else ``./.mcp.json``, else the embedded demo server) and how they write
a file."""
from __future__ import annotations

import os
import sys

from ..config import McpConfig
from ..errors import ConfigError

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


def write_file(path: str, text: str, *, replace: bool, option: str) -> None:
    """Write ``text`` to ``path`` whole or not at all (a file beside it, then renamed); a
    file that exists is only replaced when ``replace``. Raises ConfigError naming
    ``option`` (the command line option that named the file)."""
    if not replace and os.path.exists(path):
        raise ConfigError(f"{option}: {path} exists; choose a new path")
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        with open(temporary, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(temporary, path)
    except OSError as exc:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise ConfigError(f"{option}: cannot write {path}: {exc.strerror or exc}") from None
