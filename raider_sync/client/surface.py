"""What an :class:`~raider_sync.McpServer` request is made of, beside tools, prompts and
resources: the MCP log levels, the shapes of completion references and arguments, the check
of :meth:`~raider_sync.McpServer.request`'s arguments, and the refusal of a method whose
capability the server does not declare.
"""
from __future__ import annotations

import logging
from typing import Any, Callable, Optional

from ..errors import ConfigError, McpError
from ..jsonrpc import METHOD_NOT_FOUND

#: the MCP log levels (RFC 5424's), least severe first, and the stdlib level each maps to
LOG_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "notice": logging.INFO,
              "warning": logging.WARNING, "error": logging.ERROR, "critical": logging.CRITICAL,
              "alert": logging.CRITICAL, "emergency": logging.CRITICAL}

LogCallback = Callable[[Any, str, Optional[str], Any], None]
ResourceCallback = Callable[[Any, str], None]


def refusal(name: str, capabilities: dict, capability: str, what: str,
            sub: str | None = None) -> McpError | None:
    """The error of a request the server ``name`` cannot serve, as its ``capabilities`` say
    (``capability``, and its flag ``sub`` when given), else None."""
    declared = capabilities.get(capability)
    if capability in capabilities and (
            sub is None or (isinstance(declared, dict) and declared.get(sub))):
        return None
    return McpError(METHOD_NOT_FOUND, f"MCP server {name!r} does not offer {what} (capability "
                                      f"{capability}{'.' + sub if sub else ''})")


def check_request(method: Any, params: Any) -> None:
    if not isinstance(method, str) or not method:
        raise ConfigError("method: expected a non-empty string")
    if params is not None and not isinstance(params, dict):
        raise ConfigError(f"params: expected a dict, not {type(params).__name__}")


def completion_ref(ref: dict | str) -> dict:
    if isinstance(ref, dict):
        if ref.get("type") not in ("ref/prompt", "ref/resource"):
            raise ConfigError("ref: type must be ref/prompt or ref/resource")
        return dict(ref)
    if not isinstance(ref, str) or not ref:
        raise ConfigError("ref: expected a prompt name, a URI or a dict")
    if "://" in ref:
        return {"type": "ref/resource", "uri": ref}
    return {"type": "ref/prompt", "name": ref}


def completion_argument(argument: dict | tuple) -> dict:
    if isinstance(argument, tuple) and len(argument) == 2:
        argument = {"name": argument[0], "value": argument[1]}
    if not isinstance(argument, dict) or not isinstance(argument.get("name"), str):
        raise ConfigError("argument: expected {'name': ..., 'value': ...} or (name, value)")
    return {"name": argument["name"], "value": str(argument.get("value", ""))}
