"""What an :class:`McpServer` offers beside tools, prompts and resources (a mixin of it).

Server log messages (``on_log``, :meth:`set_log_level`), completion (:meth:`complete`),
resource subscriptions (:meth:`subscribe`, ``on_resource_updated``), requests for methods
raider_sync does not wrap (:meth:`request`), tool filtering (``allowed_tools``,
``disabled_tools``), the token budget of the tools, telemetry and the in-process connection
(:meth:`in_process`).
"""
from __future__ import annotations

import logging
from concurrent.futures import Future
from typing import Any, Callable, Iterable, Optional

from . import telemetry as _telemetry
from .budget import ToolBudget, budget_of
from ..errors import ConfigError, McpError, RaiderError
from .filters import ToolFilter
from .calls import seconds
from ..threads.futures import failed, then, wait_bounded
from ..jsonrpc import METHOD_NOT_FOUND, ProgressCallback
from .lifecycle import UP

#: the MCP log levels (RFC 5424's), least severe first, and the stdlib level each maps to
LOG_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "notice": logging.INFO,
              "warning": logging.WARNING, "error": logging.ERROR, "critical": logging.CRITICAL,
              "alert": logging.CRITICAL, "emergency": logging.CRITICAL}

LogCallback = Callable[[Any, str, Optional[str], Any], None]
ResourceCallback = Callable[[Any, str], None]


class ServerSurface:
    """Mixed into :class:`McpServer`; relies on its ``spec``, ``capabilities``, ``status``,
    ``log``, ``call_timeout``, ``_lock``, ``_session`` and ``_request_f``."""

    def _init_surface(self, *, allowed_tools: Optional[Iterable[str]],
                      disabled_tools: Optional[Iterable[str]], on_log: Optional[LogCallback],
                      on_resource_updated: Optional[ResourceCallback], telemetry: Any) -> None:
        self.tool_filter = ToolFilter(self.spec.allowed_tools, self.spec.disabled_tools
                                      ).narrowed(ToolFilter(allowed_tools, disabled_tools))
        self.filtered_tools: list[str] = []
        self.on_log = on_log
        self.on_resource_updated = on_resource_updated
        self.telemetry = _telemetry.resolve(telemetry)
        self._observer = self.telemetry.observer(self) if self.telemetry is not None else None
        self._subscriptions: set[str] = set()

    # -- server log messages -------------------------------------------------------------

    def set_log_level_f(self, level: str, *, timeout: float | None = None) -> Future:
        """Ask the server to send log messages of ``level`` and above (``logging/setLevel``);
        a future of None. Raises ConfigError for a level that is not one of
        :data:`LOG_LEVELS`; the future fails with McpError when the server has no logging."""
        if level not in LOG_LEVELS:
            raise ConfigError(f"level: {level!r} is not an MCP log level "
                              f"(use {', '.join(LOG_LEVELS)})")
        try:
            bound = seconds(timeout, self.call_timeout, method="McpServer.set_log_level_f")
        except RaiderError as exc:
            return failed(exc)
        refused = self._lacks("logging", "logging")
        if refused is not None:
            return refused
        return then(self._request_f("logging/setLevel", {"level": level}, bound), _none)

    def set_log_level(self, level: str, *, timeout: float | None = None) -> None:
        """Blocking :meth:`set_log_level_f`."""
        bound = seconds(timeout, self.call_timeout, method="McpServer.set_log_level")
        wait_bounded(self.set_log_level_f(level, timeout=bound), bound)

    def _on_server_log(self, params: dict) -> None:
        """notifications/message: to this server's stdlib logger, then to ``on_log``."""
        level = str(params.get("level") or "info")
        logger = params.get("logger") if isinstance(params.get("logger"), str) else None
        data = params.get("data")
        self.log.log(LOG_LEVELS.get(level, logging.INFO), "%s%s",
                     f"[{logger}] " if logger else "", data)
        if self.on_log is not None:
            try:
                self.on_log(self, level, logger, data)
            except Exception:  # noqa: BLE001 - a user's callback must not stop dispatch
                self.log.exception("on_log failed")

    # -- completion ----------------------------------------------------------------------

    def complete_f(self, ref: dict | str, argument: dict | tuple, context: dict | None = None,
                   *, timeout: float | None = None) -> Future:
        """Ask for completions of an argument's value (``completion/complete``); a future of
        ``{values, total?, hasMore?}``.

        ``ref`` is ``{"type": "ref/prompt", "name": ...}`` or ``{"type": "ref/resource",
        "uri": ...}``, or a string: a URI (template) when it has ``://``, else a prompt name.
        ``argument`` is ``{"name": ..., "value": ...}`` or a ``(name, value)`` pair;
        ``context`` the values of arguments already chosen, ``{name: value}``. Raises
        ConfigError naming a malformed argument; the future fails with McpError when the
        server has no completions."""
        params = {"ref": _ref(ref), "argument": _argument(argument)}
        if context:
            if not isinstance(context, dict):
                raise ConfigError("context: expected a dict of argument names to values")
            arguments = context.get("arguments", context)
            params["context"] = {"arguments": {str(k): str(v) for k, v in arguments.items()}}
        try:
            bound = seconds(timeout, self.call_timeout, method="McpServer.complete_f")
        except RaiderError as exc:
            return failed(exc)
        refused = self._lacks("completions", "completion")
        if refused is not None:
            return refused
        return then(self._request_f("completion/complete", params, bound),
                    lambda result: dict((result or {}).get("completion") or {"values": []}))

    def complete(self, ref: dict | str, argument: dict | tuple, context: dict | None = None,
                 *, timeout: float | None = None) -> dict:
        """Blocking :meth:`complete_f`."""
        bound = seconds(timeout, self.call_timeout, method="McpServer.complete")
        return wait_bounded(self.complete_f(ref, argument, context, timeout=bound), bound)

    # -- resource subscriptions ----------------------------------------------------------

    @property
    def subscriptions(self) -> list[str]:
        """The resource URIs this client has subscribed to, sorted."""
        with self._lock:
            return sorted(self._subscriptions)

    def subscribe_f(self, uri: str, *, timeout: float | None = None) -> Future:
        """Subscribe to changes of the resource ``uri`` (``resources/subscribe``); a future
        of None. The server's ``notifications/resources/updated`` for it then reach
        ``on_resource_updated(server, uri)``; a new HTTP session (after the server forgot
        the old one) subscribes again. The future fails with McpError when the server does
        not offer subscriptions."""
        if not isinstance(uri, str) or not uri:
            raise ConfigError("uri: expected a non-empty string")
        try:
            bound = seconds(timeout, self.call_timeout, method="McpServer.subscribe_f")
        except RaiderError as exc:
            return failed(exc)
        refused = self._lacks("resources", "resource subscriptions", "subscribe")
        if refused is not None:
            return refused
        return then(self._request_f("resources/subscribe", {"uri": uri}, bound),
                    lambda _: self._subscribed(uri, True))

    def subscribe(self, uri: str, *, timeout: float | None = None) -> None:
        """Blocking :meth:`subscribe_f`."""
        bound = seconds(timeout, self.call_timeout, method="McpServer.subscribe")
        wait_bounded(self.subscribe_f(uri, timeout=bound), bound)

    def unsubscribe_f(self, uri: str, *, timeout: float | None = None) -> Future:
        """End a subscription (``resources/unsubscribe``); a future of None."""
        if not isinstance(uri, str) or not uri:
            raise ConfigError("uri: expected a non-empty string")
        try:
            bound = seconds(timeout, self.call_timeout, method="McpServer.unsubscribe_f")
        except RaiderError as exc:
            return failed(exc)
        self._subscribed(uri, False)
        refused = self._lacks("resources", "resource subscriptions", "subscribe")
        if refused is not None:
            return refused
        return then(self._request_f("resources/unsubscribe", {"uri": uri}, bound), _none)

    def unsubscribe(self, uri: str, *, timeout: float | None = None) -> None:
        """Blocking :meth:`unsubscribe_f`."""
        bound = seconds(timeout, self.call_timeout, method="McpServer.unsubscribe")
        wait_bounded(self.unsubscribe_f(uri, timeout=bound), bound)

    def _subscribed(self, uri: str, subscribed: bool) -> None:
        with self._lock:
            if subscribed:
                self._subscriptions.add(uri)
            else:
                self._subscriptions.discard(uri)

    def _resubscribe(self) -> None:
        """Subscribe again to every URI, in a new session that knows none of them (after a
        Streamable HTTP server forgot the old one). Failures are logged."""
        def logged(uri: str, done: Future) -> None:
            if not done.cancelled() and done.exception() is not None:
                self.log.warning("subscribing again to %s failed: %s", uri, done.exception())
        for uri in self.subscriptions:
            self.subscribe_f(uri).add_done_callback(lambda done, uri=uri: logged(uri, done))

    def _on_resource_updated(self, params: dict) -> None:
        uri = params.get("uri")
        if self.on_resource_updated is None or not isinstance(uri, str):
            return
        try:
            self.on_resource_updated(self, uri)
        except Exception:  # noqa: BLE001 - a user's callback must not stop dispatch
            self.log.exception("on_resource_updated failed")

    # -- any method ----------------------------------------------------------------------

    def request_f(self, method: str, params: dict | None = None, *,
                  timeout: float | None = None,
                  on_progress: ProgressCallback | None = None) -> Future:
        """Send a request raider_sync does not wrap; a future of the server's result as
        sent. Returns at once. Sent like every other request: a request made while the server
        starts waits for the start within the same ``timeout``; in the stateless era it
        carries the ``_meta`` and headers of the era, and a ``tools/call``, ``prompts/get``
        or ``resources/read`` goes through ``input_required`` rounds (answered by the
        client's handlers, at most ``max_input_rounds``). Bounded like every call: after
        ``timeout`` s (default :attr:`call_timeout`) it is cancelled on the server and fails
        with RequestTimeout; cancelling the future cancels it too. Fails with NotConnected,
        McpError or ConnectionClosed. Raises ConfigError for a method that is not a
        non-empty string or params that are not a dict."""
        _check_request(method, params)
        try:
            bound = seconds(timeout, self.call_timeout, method="McpServer.request_f")
        except RaiderError as exc:
            return failed(exc)
        return self._request_f(method, params, bound, cache="refresh",
                               on_progress=on_progress)

    def request(self, method: str, params: dict | None = None, *,
                timeout: float | None = None, on_progress: ProgressCallback | None = None) -> Any:
        """Blocking :meth:`request_f` (the request is sent on this thread); an interrupt
        while it waits cancels the request on the server and propagates."""
        _check_request(method, params)
        bound = seconds(timeout, self.call_timeout, method="McpServer.request")
        return self._wait(self._request_f(method, params, bound, inline=True, cache="refresh",
                                          on_progress=on_progress), bound)

    # -- what the tools cost -------------------------------------------------------------

    def tool_budget(self, timeout: float | None = None) -> ToolBudget:
        """The estimated token cost of this server's (filtered) tool definitions; see
        :mod:`raider_sync.client.budget`."""
        bound = seconds(timeout, self.call_timeout, method="McpServer.tool_budget")
        return budget_of({self.name: self.list_tools(bound)})

    # -- in process ----------------------------------------------------------------------

    @classmethod
    def in_process(cls, tool_server: Any, **options: Any) -> Any:
        """A client of ``tool_server`` (a :class:`ToolServer`) in this process: no
        subprocess, the same JSON-RPC session and the same API as any server, its messages
        passed through queues as JSON. ``options`` are McpServer's. Start it as any other."""
        from ..serve.inprocess import InProcessServer
        return InProcessServer(tool_server, **options)

    # -- helpers -------------------------------------------------------------------------

    def _lacks(self, capability: str, what: str, sub: str | None = None) -> Optional[Future]:
        """A failed future when the connected server does not declare ``capability``."""
        if self.status not in UP:
            return None
        declared = self.capabilities.get(capability)
        if capability in self.capabilities and (
                sub is None or (isinstance(declared, dict) and declared.get(sub))):
            return None
        return failed(McpError(METHOD_NOT_FOUND, f"MCP server {self.name!r} does not offer "
                                                 f"{what} (capability {capability}"
                                                 f"{'.' + sub if sub else ''})"))


def _none(_: Any) -> None:
    return None


def _check_request(method: Any, params: Any) -> None:
    if not isinstance(method, str) or not method:
        raise ConfigError("method: expected a non-empty string")
    if params is not None and not isinstance(params, dict):
        raise ConfigError(f"params: expected a dict, not {type(params).__name__}")


def _ref(ref: dict | str) -> dict:
    if isinstance(ref, dict):
        if ref.get("type") not in ("ref/prompt", "ref/resource"):
            raise ConfigError("ref: type must be ref/prompt or ref/resource")
        return dict(ref)
    if not isinstance(ref, str) or not ref:
        raise ConfigError("ref: expected a prompt name, a URI or a dict")
    if "://" in ref:
        return {"type": "ref/resource", "uri": ref}
    return {"type": "ref/prompt", "name": ref}


def _argument(argument: dict | tuple) -> dict:
    if isinstance(argument, tuple) and len(argument) == 2:
        argument = {"name": argument[0], "value": argument[1]}
    if not isinstance(argument, dict) or not isinstance(argument.get("name"), str):
        raise ConfigError("argument: expected {'name': ..., 'value': ...} or (name, value)")
    return {"name": argument["name"], "value": str(argument.get("value", ""))}
