"""raider_sync: a synchronous, thread-based MCP client with a blocking API.

Users import from here; the modules behind it may move.
"""
__version__ = "0.1.0"

from .config import McpConfig, RestartPolicy, ServerSpec, tool_name  # noqa: E402
from .errors import (AuthError, ConfigError, ConnectionClosed, ConsentRequired,  # noqa: E402
                     InvalidArgument, McpError, NotConnected, RaiderError, RequestTimeout,
                     SchemaRefused, SkillRejected, StructuredContentError, SubscriptionEnded,
                     ToolError, ToolTimeout, TransportError, UnknownServer, UnknownTool,
                     UnsupportedProtocol)
from .hub import McpHub, ReloadResult  # noqa: E402
from .resources import Resources  # noqa: E402
from .results import ToolResult  # noqa: E402
from .server import McpServer  # noqa: E402
from .budget import ToolBudget  # noqa: E402
from .shell import BashTools, Tasks  # noqa: E402
from .telemetry import Telemetry  # noqa: E402
from .toolserver import ToolServer  # noqa: E402

__all__ = [
    "AuthError",
    "BashTools",
    "ConfigError",
    "ConnectionClosed",
    "ConsentRequired",
    "InvalidArgument",
    "McpConfig",
    "McpError",
    "McpHub",
    "McpServer",
    "NotConnected",
    "RaiderError",
    "ReloadResult",
    "RequestTimeout",
    "Resources",
    "RestartPolicy",
    "SchemaRefused",
    "ServerSpec",
    "SkillRejected",
    "StructuredContentError",
    "SubscriptionEnded",
    "Tasks",
    "Telemetry",
    "ToolBudget",
    "ToolError",
    "ToolResult",
    "ToolServer",
    "ToolTimeout",
    "TransportError",
    "UnknownServer",
    "UnknownTool",
    "UnsupportedProtocol",
    "__version__",
    "tool_name",
]
