"""A hub's calls by tool name: which server offers a name, and sending the call there.

:class:`Router` is the part of an :class:`~raider_sync.McpHub` that finds the server (a
connected client, or a mounted tool server) of an ``mcp__KEY__TOOL`` or plain name, sends the
call to it, and, when a reload replaced or removed that client before the call was sent,
sends it again to the server now in its place within what is left of the call's timeout.

The blocking :meth:`Router.call_tool` waits for the answer; :meth:`Router.call_tool_f` only
sends and starts no thread. Raised (or failed with): UnknownTool for a name nobody could offer,
InvalidArgument for bad arguments or a bad timeout, ToolTimeout when the time ran out while a
server was replaced, and whatever the server's own call raises.
"""
from __future__ import annotations

from concurrent.futures import Future
from typing import Any, Callable

from ..errors import NotConnected, RaiderError, ToolTimeout, UnknownTool
from ..threads.futures import Deadline, failed, settle
from .calls import seconds, tool_arguments, unknown_tool_message
from .lifecycle import UP
from .results import ToolResult
from .server import McpServer
from .tasks import TaskFuture


class Router:
    """Routes the calls of one hub. It asks the hub, at each call, for its ``clients()`` and
    ``mounted()`` tool servers, whether a client ``is_current()`` (not replaced or removed by
    a reload), and the hub's ``raise_on_error()`` default. Thread-safe as those are."""

    def __init__(self, *, clients: Callable[[], list[McpServer]], mounted: Callable[[], list[Any]],
                 is_current: Callable[[McpServer], bool], raise_on_error: Callable[[], bool]):
        self._clients = clients
        self._mounted = mounted
        self._is_current = is_current
        self._raise_on_error = raise_on_error

    def sources(self) -> list[Any]:
        """What offers tools now: the connected clients, then the mounted tool servers."""
        return [c for c in self._clients() if c.status in UP] + self._mounted()

    def tool_names(self) -> list[str]:
        names: list[str] = []
        for source in self.sources():
            names.extend(source.tool_names)
        return names

    def route(self, name: str) -> Any:
        """See :meth:`McpHub.route`."""
        clients = self._clients()
        for client in clients:
            if client.status in UP and client.original_name(name) is not None:
                return client
        for tool_server in self._mounted():
            if tool_server.original_name(name) is not None:
                return tool_server
        owners = [c for c in clients if name.startswith(f"mcp__{c.key}__")]
        if owners:
            return max(owners, key=lambda c: len(c.key))
        raise UnknownTool(unknown_tool_message(f"no server offers a tool named {name!r}", name,
                                               self.tool_names()))

    def call_tool_f(self, name: str, arguments: dict | str | None = None, *,
                    timeout: float | None = None, on_progress=None,
                    raise_on_error: bool | None = None, **deadlines: Any) -> Future:
        """See :meth:`McpHub.call_tool_f`; ``deadlines``: ``reset_on_progress``,
        ``max_total`` (for a server's tools; a mounted ToolServer answers at once)."""
        try:
            arguments = _checked(name, arguments, timeout, "McpHub.call_tool_f")
            target = self.route(name)
        except RaiderError as exc:
            return failed(exc)

        def send(target: Any, timeout: float | None) -> Future:
            return target.call_tool_f(name, arguments, timeout=timeout, on_progress=on_progress,
                                      **self._raising(target, raise_on_error),
                                      **_deadlines(target, deadlines))

        if not isinstance(target, McpServer):
            return send(target, timeout)
        return self._rerouted_f(send(target, timeout), target, name,
                                Deadline(_or_default(timeout, target)), send)

    def call_tool(self, name: str, arguments: dict | str | None = None, *,
                  timeout: float | None = None, on_progress=None,
                  raise_on_error: bool | None = None, **deadlines: Any) -> ToolResult:
        """See :meth:`McpHub.call_tool`."""
        arguments = _checked(name, arguments, timeout, "McpHub.call_tool")
        target = self.route(name)
        deadline = (Deadline(_or_default(timeout, target))
                    if isinstance(target, McpServer) else None)
        while True:
            try:
                return target.call_tool(name, arguments, timeout=timeout,
                                        on_progress=on_progress,
                                        **self._raising(target, raise_on_error),
                                        **_deadlines(target, deadlines))
            except NotConnected:
                if deadline is None or not self._was_replaced(target):
                    raise
                target, timeout = self.route(name), _left(deadline, name)

    def _was_replaced(self, target: Any) -> bool:
        """Whether ``target`` is a client a reload has replaced or removed since the call was
        routed to it. Such a client refuses the calls it has not sent (NotConnected): the
        hub sends them again to the server now in its place, which :meth:`route` finds."""
        if not isinstance(target, McpServer):
            return False
        return not self._is_current(target)

    def _rerouted_f(self, future: Future, target: McpServer, name: str, deadline: Deadline,
                    send: Callable[[Any, float], Future]) -> Future:
        """``future``, or, once it fails with NotConnected from a client a reload replaced,
        ``send(new_target, seconds_left)`` (see :meth:`call_tool`); no thread of its own."""
        outer = TaskFuture()  # mirrors the server's TaskFuture: its task, detach, poll
        current = [future]
        if isinstance(future, TaskFuture):
            outer.relay(future)

        def settled(done: Future, target: Any) -> None:
            error = None if done.cancelled() else done.exception()
            if isinstance(error, NotConnected) and self._was_replaced(target):
                try:
                    target = self.route(name)
                    current[0] = again = send(target, _left(deadline, name))
                    if isinstance(again, TaskFuture):
                        outer.relay(again)
                except RaiderError as exc:
                    settle(outer, error=exc)
                    return
                if outer.cancelled():
                    again.cancel()
                again.add_done_callback(lambda done: settled(done, target))
            elif done.cancelled():
                outer.cancel()
            else:
                settle(outer, result=None if error is not None else done.result(), error=error)

        def cancelled(done: Future) -> None:
            if done.cancelled():
                current[0].cancel()

        outer.add_done_callback(cancelled)
        future.add_done_callback(lambda done: settled(done, target))
        return outer

    def _raising(self, target: Any, raise_on_error: bool | None) -> dict:
        """The ``raise_on_error`` argument for ``target``: the call's, else the hub's. A
        mounted object with a ToolServer's face from before the option existed is not given
        it unless errors are to be raised."""
        if raise_on_error is None:
            raise_on_error = self._raise_on_error()
        if raise_on_error or isinstance(target, McpServer):
            return {"raise_on_error": raise_on_error}
        return {}


def _left(deadline: Deadline, name: str) -> float:
    """The seconds a call of ``name`` sent again has left; raises ToolTimeout when none."""
    left = deadline.left()
    if left <= 0:
        raise ToolTimeout(f"MCP tool call {name!r} timed out while its server was replaced")
    return left


def _checked(name: str, arguments: Any, timeout: Any, method: str) -> dict:
    """The arguments of a call as a dict; raises InvalidArgument for them or for a timeout
    (see raider_sync.threads.timeouts). The timeout's default is the server's: it is checked only."""
    seconds(timeout, 1.0, method=method)
    return tool_arguments(arguments, name)


def _or_default(timeout: float | None, target: McpServer) -> float:
    """A timeout :func:`_checked` passed, or the server's call timeout for None."""
    return target.call_timeout if timeout is None else timeout


def _deadlines(target: Any, deadlines: dict) -> dict:
    """``reset_on_progress``, ``max_total``, ``retry`` and the task options (``task_timeout``,
    ``on_status``, ``tasks``) for a server's call (see :meth:`McpServer.call_tool_f`); a
    mounted object is not given them."""
    unknown = set(deadlines) - {"reset_on_progress", "max_total", "task_timeout", "on_status",
                                "tasks", "retry"}
    if unknown:
        raise TypeError(f"call_tool() got unexpected keyword arguments: {', '.join(sorted(unknown))}")
    return {k: v for k, v in deadlines.items() if v is not None} if isinstance(
        target, McpServer) else {}
