"""What the client commands share: their exit codes, where their configuration comes from
(``--config FILE``, else ``./.mcp.json``, else the embedded demo server), how they read an
option's value, how they write a file, and how an error becomes a message and an exit code
(:func:`guard`)."""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from ..config import McpConfig
from ..errors import ConfigError, McpError, RaiderError

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


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, not {value}")
    return value


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, not {text}")
    return value


def print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


def guard(run):
    """Turn raider_sync's errors into a message on stderr and an exit code; with --json also
    into ``{"error": {"type", "message"[, "code", "data"]}}`` on stdout, for scripts."""
    def guarded(args) -> int:
        try:
            return run(args)
        except ConfigError as exc:
            return report(args, exc, EXIT_USAGE)
        except (RaiderError, TimeoutError) as exc:
            return report(args, exc, EXIT_FAILED)
    guarded.__name__ = run.__name__
    return guarded


def report(args, exc: BaseException, code: int, **details: Any) -> int:
    """Tell of ``exc`` (on stdout too, as JSON with ``details``, under --json); ``code``."""
    print(f"raider-sync: {exc}", file=sys.stderr)
    if getattr(args, "json", False):
        error: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)}
        if isinstance(exc, McpError):
            error.update(code=exc.code, message=exc.message)
            if exc.data is not None:
                error["data"] = exc.data
        print_json({"error": {**error, **details}})
    return code


def json_arg(text: str, what: str) -> dict:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{what}: not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{what}: expected a JSON object")
    return value
