"""raider_sync: a synchronous, thread-based MCP client with a blocking API.

Users import from here; the modules behind it may move.
"""
from . import _moved
from ._version import __version__

_moved.install()

from .client.budget import ToolBudget  # noqa: E402
from .client.hub import McpHub, ReloadResult  # noqa: E402
from .client.results import ToolResult  # noqa: E402
from .client.server import McpServer  # noqa: E402
from .client.tasks import TaskFuture, TaskHandle, TaskStatus  # noqa: E402
from .client.telemetry import Telemetry  # noqa: E402
from .config import McpConfig, RestartPolicy, ServerSpec, tool_name  # noqa: E402
from .errors import (  # noqa: E402
    AuthError,
    ConfigError,
    ConnectionClosed,
    ConsentRequired,
    InvalidArgument,
    LostInFlight,
    McpError,
    NotConnected,
    RaiderError,
    RequestTimeout,
    SchemaRefused,
    SkillRejected,
    StructuredContentError,
    SubscriptionEnded,
    TaskCancelled,
    TaskDetached,
    TaskError,
    TaskExpired,
    TaskFailed,
    TaskNotResumable,
    ToolError,
    ToolTimeout,
    TransportError,
    UnknownServer,
    UnknownTool,
    UnsupportedProtocol,
    WebhookRejected,
)
from .serve.context import Context  # noqa: E402
from .serve.resources import Resources  # noqa: E402
from .serve.toolserver import ToolServer  # noqa: E402
from .shell import BashTools, Tasks  # noqa: E402

__all__ = [
    "AuthError",
    "BashTools",
    "ConfigError",
    "ConnectionClosed",
    "ConsentRequired",
    "Context",
    "InvalidArgument",
    "LostInFlight",
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
    "TaskCancelled",
    "TaskDetached",
    "TaskError",
    "TaskExpired",
    "TaskFailed",
    "TaskFuture",
    "TaskHandle",
    "TaskNotResumable",
    "TaskStatus",
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
    "WebhookRejected",
    "__version__",
    "tool_name",
]


def __getattr__(name: str):
    # raider_sync.server and the other old module names, for the deprecation period
    return _moved.attribute(name)
