"""The configured servers of one command: started in parallel (with a live status line on a
terminal), stopped when the command ends, and shown as a row of the ``servers`` table. Starting
and stopping block for at most :data:`START_TIMEOUT_S` s; a server that fails to start is left
failed, with its reason, for the command to report."""
from __future__ import annotations

import sys
import threading
import time
from concurrent.futures import wait
from typing import Any

from ..client.server import McpServer
from ..config import McpConfig, ServerSpec
from .common import load_config

START_TIMEOUT_S = 60.0
#: the most seconds an interrupted call's cancel is given to reach the server
CANCEL_DRAIN_S = 5.0


class StartedServers:
    """The configured servers of one command, started in parallel, stopped on exit.

    On a terminal (and without --json) a live status line on stderr shows each server's
    progress while they start.
    """

    def __init__(self, args, only: str | None = None, tool: str | None = None, **options: Any):
        config = load_config(args.config)
        if only:
            specs = [config.server(only)]
        else:
            owner = owner_of_tool(config, tool) if tool else None
            specs = [owner] if owner is not None else config.servers
        self.line = StatusLine() if interactive(args) else None
        on_status = self.line.changed if self.line else None
        self.servers = [McpServer(spec, on_status=on_status, **options) for spec in specs]
        self.warnings = config.warnings
        for warning in self.warnings:
            print(f"raider-sync: warning: {warning}", file=sys.stderr)

    def __enter__(self) -> list[McpServer]:
        if self.line:
            self.line.show(self.servers)
        wait([server.start_f() for server in self.servers], timeout=START_TIMEOUT_S)
        if self.line:
            self.line.clear()
        return self.servers

    def __exit__(self, *exc) -> None:
        wait([server.stop_f() for server in self.servers], timeout=START_TIMEOUT_S)


def owner_of_tool(config: McpConfig, tool: str) -> ServerSpec | None:
    """The configured server a tool name ``mcp__KEY__TOOL`` belongs to (the longest key that
    fits, as keys may hold ``__``), else None."""
    owners = [spec for spec in config.servers if tool.startswith(f"mcp__{spec.key}__")]
    return max(owners, key=lambda spec: len(spec.key)) if owners else None


class StatusLine:
    """One line on stderr, rewritten as servers change status: ``starting: a ✓ b … c ✗``."""

    MARKS = {"connected": "✓", "failed": "✗", "starting": "…", "configured": "·", "stopped": "-"}

    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        self.servers: list[McpServer] = []
        self.started = time.monotonic()
        self.done = False
        self._lock = threading.Lock()

    def show(self, servers: list[McpServer]) -> None:
        self.servers = servers
        self._draw()

    def changed(self, _server: McpServer) -> None:
        self._draw()

    def clear(self) -> None:
        """Erase the line; later status changes (the stop) draw nothing."""
        with self._lock:
            self.done = True
            self.stream.write("\r\x1b[K")
            self.stream.flush()

    def _draw(self) -> None:
        with self._lock:
            if self.done:
                return
            marks = " ".join(f"{s.name} {self.MARKS.get(s.status, '?')}" for s in self.servers)
            elapsed = time.monotonic() - self.started
            self.stream.write(f"\r\x1b[Kstarting: {marks} ({elapsed:.1f} s)")
            self.stream.flush()


def interactive(args) -> bool:
    """Whether to draw on stderr: a terminal, and no --json."""
    return sys.stderr.isatty() and not getattr(args, "json", False)


def server_row(server: McpServer) -> dict:
    """A server as ``servers --json`` shows it."""
    return {"name": server.name, "transport": server.transport, "status": server.status,
            "tools": len(server.tool_names), "reason": server.reason or ""}
