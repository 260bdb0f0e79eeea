"""raider_sync: a synchronous, thread-based MCP client with a blocking API.

Users import from here; the modules behind it may move.
"""
__version__ = "0.1.0"

from .config import McpConfig, ServerSpec, tool_name  # noqa: E402
from .errors import (ConfigError, ConnectionClosed, McpError, NotConnected,  # noqa: E402
                     RaiderError, RequestTimeout, ToolTimeout, TransportError, UnknownTool,
                     UnsupportedProtocol)
from .server import McpServer  # noqa: E402
from .toolserver import ToolServer  # noqa: E402

__all__ = [
    "ConfigError",
    "ConnectionClosed",
    "McpConfig",
    "McpError",
    "McpServer",
    "NotConnected",
    "RaiderError",
    "RequestTimeout",
    "ServerSpec",
    "ToolServer",
    "ToolTimeout",
    "TransportError",
    "UnknownTool",
    "UnsupportedProtocol",
    "__version__",
    "tool_name",
]
