"""Every exception raider_sync raises, in one tree::

    RaiderError
     +-- ConfigError (also ValueError)        bad .mcp.json / gateway config, names the field
     +-- McpError                             a JSON-RPC error answer: code, message, data
     |    +-- UnsupportedProtocol             the server speaks no revision raider_sync knows
     +-- NotConnected                         the server is not (or no longer) connected
     +-- UnknownTool (also LookupError)       no tool of that name
     +-- UnknownServer (also LookupError)     no configured server of that name
     +-- ConnectionClosed                     the transport ended; carries the stderr tail
     +-- TransportError                       an HTTP answer that is not MCP: status, body excerpt
     +-- RequestTimeout (also TimeoutError)   a request ran out of time (and was cancelled)
          +-- ToolTimeout                     ... a tools/call in particular

Foreign errors (OSError, requests, JSON) are mapped to these where they cross into
raider_sync, with ``raise ... from exc``.
"""
from __future__ import annotations

from typing import Any


class RaiderError(Exception):
    """Root of every error raider_sync raises."""


class ConfigError(RaiderError, ValueError):
    """A configuration that cannot be used. The message names the server and the field."""

    def __init__(self, message: str, problems: list[str] | None = None):
        super().__init__(message)
        self.problems = list(problems or [message])


class McpError(RaiderError):
    """The peer answered a request with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None):
        super().__init__(f"{message} (code {code})")
        self.code = code
        self.message = message
        self.data = data


class UnsupportedProtocol(McpError):
    """The server speaks no protocol revision that raider_sync accepts."""


class NotConnected(RaiderError):
    """The server is not connected (never started, failed, or stopped)."""


class UnknownTool(RaiderError, LookupError):
    """No tool of that name is offered."""

    def __str__(self) -> str:  # LookupError would quote the message
        return str(self.args[0]) if self.args else ""


class UnknownServer(RaiderError, LookupError):
    """No configured server of that name; the message lists the available ones."""

    def __str__(self) -> str:  # LookupError would quote the message
        return str(self.args[0]) if self.args else ""


class ConnectionClosed(RaiderError):
    """The connection to the server ended; ``stderr_tail`` holds its last stderr lines."""

    def __init__(self, message: str, stderr_tail: list[str] | None = None):
        super().__init__(message)
        self.stderr_tail = list(stderr_tail or [])


class TransportError(RaiderError):
    """An HTTP exchange that did not carry MCP: a status code and a short body excerpt."""

    def __init__(self, message: str, status_code: int | None = None, body: str = ""):
        super().__init__(message)
        self.status_code = status_code
        self.body = body


class RequestTimeout(RaiderError, TimeoutError):
    """A request was not answered in time; it has been cancelled."""


class ToolTimeout(RequestTimeout):
    """A tools/call was not answered in time; it has been cancelled."""
