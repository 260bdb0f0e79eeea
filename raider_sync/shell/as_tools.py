"""The shell tools offered as tools: a ToolServer, and per-run callables for an agent loop.

:func:`tool_server` builds the :class:`~raider_sync.ToolServer` of a
:class:`~raider_sync.shell.BashTools` (bash, bash_output, kill_shell, and monitor when it has
a task registry); :func:`async_tools` the :class:`AsyncTool` list of one run, whose caller
(recipient, call id, detached, working directory) is worked out at each call. Both hold the
BashTools weakly: a tool of one that is gone answers that the shell tools are closed, and
closing the server closes it.

Nothing here blocks or raises: a handler returns the future of the tool's ``_f`` method.
"""
from __future__ import annotations

import weakref
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Callable, Optional

from ..serve.toolserver import ToolServer, text_result
from ..threads.futures import resolved, then
from . import schemas
from .shells import Caller

CLOSED = "Error: the shell tools are closed"


@dataclass
class AsyncTool:
    """One shell tool for one run: ``tool(arguments, context=None)`` returns a future of
    an MCP result dict (``content``, ``isError``)."""
    name: str
    description: str
    input_schema: dict
    handler: Callable[..., Future]
    applies: Optional[Callable] = None

    def __call__(self, arguments: dict, context: dict | None = None) -> Future:
        return then(self.handler(arguments, context), lambda result: text_result(*result))

    def definition(self) -> dict:
        return {"name": self.name, "description": self.description, "inputSchema": self.input_schema}


@dataclass
class _ToolSpec:
    name: str
    description: str
    input_schema: dict
    method: str


def tool_specs(monitor: bool) -> list[_ToolSpec]:
    """The tools and the BashTools method (an ``_f`` one) each calls; monitor with ``monitor``."""
    specs = [_ToolSpec("bash", schemas.BASH_DESCRIPTION, schemas.BASH, "bash_f"),
             _ToolSpec("bash_output", schemas.BASH_OUTPUT_DESCRIPTION, schemas.BASH_OUTPUT,
                       "bash_output_f"),
             _ToolSpec("kill_shell", schemas.KILL_SHELL_DESCRIPTION, schemas.KILL_SHELL,
                       "kill_shell_f")]
    if monitor:
        specs.append(_ToolSpec("monitor", schemas.MONITOR_DESCRIPTION, schemas.MONITOR,
                               "monitor_f"))
    return specs


def tool_server(tools: Any) -> ToolServer:
    """A new ToolServer with the tools of the BashTools ``tools``, holding it weakly."""
    server = ToolServer(tools.name, call_timeout=tools.max_timeout + 60,
                        instructions="Shell tools: bash, bash_output, kill_shell"
                        + (", monitor" if tools.tasks is not None else "") + ".")
    for tool in tool_specs(tools.tasks is not None):
        server.add_tool(tool.name, _weak_handler(tools, tool.method),
                        description=tool.description, input_schema=tool.input_schema)
    server.on_close = _weak_close(tools)
    return server


def async_tools(tools: Any, recipient: Any = "main", detached: Any = False,
                working_directory: Any = None, applies: Callable | None = None) -> list[AsyncTool]:
    """See :meth:`BashTools.async_tools`."""
    ref = weakref.ref(tools)

    def caller_of(context: dict | None) -> Caller:
        context = context or {}
        return Caller(recipient=str(_value(recipient) or "main"),
                      call=context.get("call") or context.get("id"),
                      detached=bool(_value(detached)),
                      working_directory=_value(working_directory))

    result = []
    for spec in tool_specs(tools.tasks is not None):
        result.append(AsyncTool(spec.name, spec.description, spec.input_schema,
                                _weak_handler(tools, spec.method, ref, caller_of), applies))
    return result


def _weak_close(tools: Any) -> Callable[[], None]:
    """Close ``tools`` when its tool server is closed, without keeping ``tools`` alive."""
    ref = weakref.ref(tools)

    def close() -> None:
        target = ref()
        if target is not None:
            target.close()
    return close


def _weak_handler(tools: Any, method: str, ref=None, caller_of=None) -> Callable:
    """A handler that calls ``tools.<method>`` without keeping ``tools`` alive."""
    ref = ref or weakref.ref(tools)
    takes_caller = method in ("bash_f", "monitor_f")

    def handler(arguments: dict, context: dict | None = None) -> Future:
        target = ref()
        if target is None:
            return resolved((CLOSED, True))
        if takes_caller and caller_of is not None:
            return getattr(target, method)(arguments, caller_of(context))
        return getattr(target, method)(arguments)
    return handler


def _value(value: Any) -> Any:
    return value() if callable(value) else value
