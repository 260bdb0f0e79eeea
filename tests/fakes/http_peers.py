"""Real MCP peers served over HTTP for the tests: server-everything (streamableHttp), the
official SDK's server (streamable-http, legacy sse) and a FastMCP server, each a child
process on a free port.

    peer = HttpPeer.sdk("--json")           # not started
    peer.start(); peer.url; peer.restart(); peer.stop()   # stop reaps the process
    peer.kill()                             # SIGKILL, as a server that crashes; reaped
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile

from raider_sync.config import ServerSpec

from conftest import (
    EVERYTHING_JS,
    FASTMCP_SERVER,
    FASTMCP_TASKS_SERVER,
    SDK_SERVER,
    config_of,
    free_port,
    wait_for_port,
)


class HttpPeer:
    """One peer process; its stdout goes to a temporary file (:meth:`output`)."""

    def __init__(self, argv: list[str], path: str, env: dict | None = None,
                 kind: str = "http"):
        self.port = free_port()
        self.argv = [a.replace("{port}", str(self.port)) for a in argv]
        self.env = {**os.environ, **(env or {}), "PORT": str(self.port)}
        self.url = f"http://127.0.0.1:{self.port}{path}"
        self.kind = kind
        self.proc: subprocess.Popen | None = None
        self._log = tempfile.NamedTemporaryFile(prefix="peer-", suffix=".log", delete=False)
        self._log.close()

    @classmethod
    def everything(cls) -> "HttpPeer":
        return cls(["node", EVERYTHING_JS, "streamableHttp"], "/mcp")

    @classmethod
    def sdk(cls, *flags: str) -> "HttpPeer":
        return cls([sys.executable, SDK_SERVER, "streamable-http", "{port}", *flags], "/mcp")

    @classmethod
    def fastmcp(cls, *flags: str) -> "HttpPeer":
        return cls([sys.executable, FASTMCP_SERVER, "http", "{port}", *flags], "/mcp")

    @classmethod
    def fastmcp_tasks(cls) -> "HttpPeer":
        """FastMCP with fastmcp-tasks: a server of the tasks extension (SEP-2663)."""
        return cls([sys.executable, FASTMCP_TASKS_SERVER, "http", "{port}"], "/mcp")

    @classmethod
    def sdk_sse(cls) -> "HttpPeer":
        return cls([sys.executable, SDK_SERVER, "sse", "{port}"], "/sse", kind="sse")

    def spec(self, name: str = "peer", **extra) -> ServerSpec:
        return config_of({name: {"type": self.kind, "url": self.url, **extra}}).server(name)

    def start(self, timeout: float = 30.0) -> "HttpPeer":
        with open(self._log.name, "ab") as log:
            self.proc = subprocess.Popen(self.argv, env=self.env, stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        wait_for_port(self.port, timeout, self.proc)
        return self

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)

    def kill(self) -> None:
        """SIGKILL the process (a crash: nothing in flight is finished) and reap it."""
        proc, self.proc = self.proc, None
        if proc is not None:
            proc.kill()
            proc.wait(5)

    def restart(self) -> None:
        """Stop, then start again on the same port (a server that forgot every session)."""
        self.stop()
        self.start()

    def output(self) -> str:
        with open(self._log.name, encoding="utf-8", errors="replace") as log:
            return log.read()

    def close(self) -> None:
        self.stop()
        try:
            os.unlink(self._log.name)
        except OSError:
            pass
