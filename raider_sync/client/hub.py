"""McpHub: every configured MCP server, started together, called by tool name.

    hub = McpHub(McpConfig.load(".mcp.json"), kill_grace=2)
    hub.start_f().result()               # all in parallel; never raises
    hub.tools()                          # mcp__KEY__TOOL of the connected servers + mounted ones
    hub.call_tool("mcp__files__read", {"path": "a.txt"})
    hub.reload(McpConfig.load(".mcp.json"))   # keeps clients whose fingerprint is unchanged
    hub.stop()

One :class:`McpServer` per configured entry. A slow or failing server delays or fails no other:
each starts on its own thread, and :meth:`start_f` only gathers their futures. Local tool
servers (a :class:`ToolServer`: shell tools, the resource tools) are mounted beside them and
answer under their own plain names. The hub holds the servers; a call by tool name is routed
by its :class:`~raider_sync.client.hub_calls.Router`, and what a reload keeps, replaces and
stops is worked out by :mod:`raider_sync.client.hub_reload`.
"""
from __future__ import annotations

import logging
import threading
from concurrent.futures import Future
from typing import Any

from ..config import McpConfig, ServerSpec, find_named
from ..errors import InvalidArgument, RaiderError, UnknownServer
from ..threads.futures import all_done, failed, then
from . import hub_reload
from .budget import ToolBudget, budget_of
from .calls import poll_seconds, seconds
from .hub_calls import Router
from .hub_reload import ReloadResult
from .results import ToolResult
from .server import McpServer

log = logging.getLogger("raider_sync.hub")

_DEFAULT_TIMEOUT_S = 60.0
#: how long a reload lets a replaced or removed server answer the calls already sent to it
_DEFAULT_DRAIN_S = 30.0


class McpHub:
    """The clients of every server of ``config`` (an :class:`McpConfig`, or its dict form),
    plus mounted tool servers.

    ``server_options`` go to every :class:`McpServer` (``startup_timeout_ms``, ``kill_grace``,
    ``on_status``, ``base_env``, ``max_output_tokens``, ``raise_on_error``, ``allowed_tools``,
    ``disabled_tools``, ``on_log``, ...); ``raise_on_error`` holds for the mounted tool
    servers' calls too. Thread-safe: tools may be called
    from any number of threads, also while :meth:`reload` runs. Threads it starts (one per
    server while stopping) are joined before the method returns.
    """

    def __init__(self, config: McpConfig | dict, **server_options: Any):
        if isinstance(config, dict):
            config = McpConfig.from_dict(config)
        if not isinstance(config, McpConfig):
            raise TypeError(f"config must be an McpConfig, not {type(config).__name__}")
        self.config = config
        self.server_options = dict(server_options)
        self._lock = threading.RLock()
        self._reload_lock = threading.Lock()
        self._clients: dict[str, McpServer] = {
            spec.name: self._new_client(spec) for spec in config.servers}
        self._mounted: list[Any] = []
        self._retiring: list[McpServer] = []  # replaced or removed, draining in a reload
        self._started = False
        # the calls by tool name: a part that asks the hub what it holds at each call
        self._router = Router(clients=lambda: self.clients, mounted=lambda: self.mounted,
                              is_current=self._is_current,
                              raise_on_error=lambda: bool(
                                  self.server_options.get("raise_on_error", False)))

    def __repr__(self) -> str:
        return f"<McpHub {[(c.name, c.status) for c in self.clients]!r}>"

    def _repr_html_(self) -> str:
        from .notebook import hub_html  # the Jupyter module, only in Jupyter
        return hub_html(self)

    def __enter__(self) -> "McpHub":
        try:
            self.start()
        except BaseException:  # Ctrl-C or a start still running: nothing is left behind
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _new_client(self, spec: ServerSpec) -> McpServer:
        return McpServer(spec, **self.server_options)

    def _is_current(self, client: McpServer) -> bool:
        """Whether ``client`` is still the hub's (not replaced nor removed by a reload)."""
        with self._lock:
            return self._clients.get(client.name) is client

    # -- the servers ---------------------------------------------------------------------

    @property
    def clients(self) -> list[McpServer]:
        """The configured servers' clients, in the order of the configuration."""
        with self._lock:
            return list(self._clients.values())

    @property
    def mounted(self) -> list[Any]:
        """The mounted tool servers, in the order they were mounted."""
        with self._lock:
            return list(self._mounted)

    def client(self, name: str) -> McpServer:
        """The client of the server named ``name`` (as configured, or by its key). Raises
        UnknownServer, whose message lists the configured servers."""
        clients = self.clients
        client = find_named(clients, name)
        if client is not None:
            return client
        raise UnknownServer(f'Server "{name}" not found. Available servers: '
                            f'{", ".join(c.name for c in clients)}')

    def statuses(self) -> dict[str, str]:
        """``{name: status}`` of every configured server: a health check (see
        :attr:`McpServer.status`; ``connected`` and ``degraded`` servers take calls)."""
        return {client.name: client.status for client in self.clients}

    def mount(self, tool_server: Any) -> Any:
        """Offer the tools of ``tool_server`` (a :class:`ToolServer`, or anything with its
        face) beside the servers' tools; returns it. Mounting hands it over: :meth:`stop`
        stops it too. Mounting the same object twice mounts it once."""
        with self._lock:
            if not any(m is tool_server for m in self._mounted):
                self._mounted.append(tool_server)
        return tool_server

    def unmount(self, tool_server: Any) -> None:
        """Take a mounted tool server away again (it is not stopped)."""
        with self._lock:
            self._mounted = [m for m in self._mounted if m is not tool_server]

    # -- start ---------------------------------------------------------------------------

    def start_f(self) -> Future:
        """Start every server, all in parallel; a future that resolves to this hub once every
        one is connected or failed (look at their ``status``/``reason``). Never fails.
        Servers already started are not started again (failed ones are started anew);
        servers a later :meth:`reload` adds start at once."""
        with self._lock:
            self._started = True
            clients = list(self._clients.values())
        return then(all_done([client.start_f() for client in clients]), lambda _: self)

    def start(self, timeout: float | None = None) -> "McpHub":
        """Blocking :meth:`start_f`. ``timeout`` (s) defaults to the longest startup timeout
        plus the stop grace of a failed start; a start still running then raises
        TimeoutError (the servers keep starting). A KeyboardInterrupt stops every server
        and propagates."""
        bound = seconds(timeout, max([c.startup_timeout_ms / 1000 + 2 * c.kill_grace + 5
                                      for c in self.clients] or [0.0]) + 5,
                        method="McpHub.start")
        try:
            return self.start_f().result(bound)
        except KeyboardInterrupt:
            self.stop()
            raise

    def restart_f(self, name: str) -> Future:
        """:meth:`McpServer.restart_f` of the server named ``name``: a future of that client
        once connected or failed. Raises UnknownServer."""
        return self.client(name).restart_f()

    def restart(self, name: str, timeout: float | None = None) -> McpServer:
        """Blocking :meth:`restart_f`: the client, connected or failed. Calls to it made
        meanwhile wait for the start. Raises UnknownServer."""
        seconds(timeout, 1.0, method="McpHub.restart")  # its default is the server's
        return self.client(name).restart(timeout)

    # -- tools ---------------------------------------------------------------------------

    def tools_f(self) -> Future:
        """A future of every tool: the prefixed tools of the connected servers, then those of
        the mounted tool servers."""
        sources = self._router.sources()
        futures = [_guarded(source.list_tools_f) for source in sources]

        def collect(_: Any) -> list[dict]:
            tools: list[dict] = []
            for source, future in zip(sources, futures, strict=True):
                try:
                    tools.extend(future.result(0))
                except Exception as exc:  # noqa: BLE001 - a failing list lists nothing
                    log.warning("listing the tools of %s failed: %s", source.name, exc)
            return tools

        return then(all_done(futures), collect)

    def tools(self, timeout: float | None = None) -> list[dict]:
        """Blocking :meth:`tools_f`; ``timeout`` (s, default 60) bounds the wait for a server
        that is re-listing its tools."""
        return self.tools_f().result(seconds(timeout, _DEFAULT_TIMEOUT_S, method="McpHub.tools"))

    def tool_budget_f(self) -> Future:
        """A future of the :class:`~raider_sync.client.budget.ToolBudget` of every tool
        :meth:`tools` lists: each tool's estimated token cost and each server's sum."""
        sources = self._router.sources()
        futures = [_guarded(source.list_tools_f) for source in sources]

        def collect(_: Any) -> ToolBudget:
            groups: dict[str, list[dict]] = {}
            for source, future in zip(sources, futures, strict=True):
                if future.exception() is None:
                    groups.setdefault(source.name, []).extend(future.result())
            return budget_of(groups)

        return then(all_done(futures), collect)

    def tool_budget(self, timeout: float | None = None) -> ToolBudget:
        """Blocking :meth:`tool_budget_f`; ``timeout`` as for :meth:`tools`."""
        return self.tool_budget_f().result(seconds(timeout, _DEFAULT_TIMEOUT_S,
                                                   method="McpHub.tool_budget"))

    def resource_templates(self, server: str | None = None, *,
                           timeout: float | None = None) -> list[dict]:
        """The resource templates of every connected server (or of ``server``), each with
        the ``server`` it belongs to. Blocks up to ``timeout`` s per server (default its
        call timeout); raises UnknownServer for a name not configured."""
        seconds(timeout, 1.0, method="McpHub.resource_templates")  # default: each server's
        clients = [self.client(server)] if server is not None else self.clients
        return [{"server": client.name, **template} for client in clients
                for template in client.list_resource_templates(timeout)]

    @property
    def tool_names(self) -> list[str]:
        return self._router.tool_names()

    # -- calls ---------------------------------------------------------------------------

    def route(self, name: str) -> Any:
        """The server (client or mounted tool server) that offers tool ``name``.

        A prefixed name of a configured server that does not offer it (not connected, or no
        such tool) goes to that server, whose call then fails with NotConnected or
        UnknownTool. Raises UnknownTool for a name nobody could offer."""
        return self._router.route(name)

    def call_tool_f(self, name: str, arguments: dict | str | None = None, *,
                    timeout: float | None = None, on_progress=None,
                    raise_on_error: bool | None = None, reset_on_progress: bool | None = None,
                    max_total: float | None = None, task_timeout: float | None = None,
                    on_status: Any = None, tasks: Any = None,
                    retry: str | None = None) -> Future:
        """Call tool ``name`` on the server that offers it; a future of the result dict.
        Fails as that server's ``call_tool_f`` fails, or with UnknownTool (see :meth:`route`);
        with ToolError for an error result when ``raise_on_error`` (default: the hub's
        option) is true. ``timeout`` (s) defaults to that server's call timeout. A call a
        reload's replaced client refuses goes to the server now in its place, within what
        is left of ``timeout``. ``reset_on_progress``, ``max_total``, ``task_timeout``,
        ``on_status``, ``tasks`` and ``retry`` are the server's :meth:`McpServer.call_tool_f`'s (a
        mounted ToolServer's calls take none of them); a server's call returns a
        :class:`~raider_sync.TaskFuture`."""
        return self._router.call_tool_f(name, arguments, timeout=timeout,
                                        on_progress=on_progress, raise_on_error=raise_on_error,
                                        reset_on_progress=reset_on_progress,
                                        max_total=max_total, task_timeout=task_timeout,
                                        on_status=on_status, tasks=tasks, retry=retry)

    def call_tool(self, name: str, arguments: dict | str | None = None, *,
                  timeout: float | None = None, on_progress=None,
                  raise_on_error: bool | None = None, reset_on_progress: bool | None = None,
                  max_total: float | None = None, task_timeout: float | None = None,
                  on_status: Any = None, tasks: Any = None,
                  retry: str | None = None) -> ToolResult:
        """Blocking :meth:`call_tool_f`: the result dict, or the failure raised (ToolTimeout
        after ``timeout`` s; InvalidArgument for arguments that are neither a dict nor a
        JSON string of an object, or a timeout that is not positive)."""
        return self._router.call_tool(name, arguments, timeout=timeout,
                                      on_progress=on_progress, raise_on_error=raise_on_error,
                                      reset_on_progress=reset_on_progress, max_total=max_total,
                                      task_timeout=task_timeout, on_status=on_status,
                                      tasks=tasks, retry=retry)

    def resume_task_f(self, handle: Any, **options: Any) -> Future:
        """:meth:`McpServer.resume_task_f` on the client whose key ``handle.server`` names
        (a failed future of UnknownServer when there is none)."""
        try:
            client = self._task_client(handle)
        except RaiderError as exc:
            return failed(exc)
        return client.resume_task_f(handle, **options)

    def resume_task(self, handle: Any, **options: Any) -> ToolResult:
        """:meth:`McpServer.resume_task` on the client whose key ``handle.server`` names.
        Raises UnknownServer when there is none, else as that method."""
        return self._task_client(handle).resume_task(handle, **options)

    def _task_client(self, handle: Any) -> McpServer:
        server = getattr(handle, "server", None)
        if not isinstance(server, str):
            raise InvalidArgument(f"handle must be a TaskHandle (TaskHandle.from_json), not "
                                  f"{type(handle).__name__}")
        return self.client(server)

    # -- reload and stop -----------------------------------------------------------------

    def reload(self, config: McpConfig | dict, *, drain: float = _DEFAULT_DRAIN_S) -> ReloadResult:
        """Take the servers of ``config``: a client whose ``fingerprint`` is unchanged is
        kept (a failed, stopped or needs-auth one is retried, e.g. after a login); new and
        changed ones are started if the hub has been started (see :meth:`start_f` to wait
        for them), and take the calls from then on (a call waits for its server's start
        within its own timeout); removed and changed ones are stopped, in parallel, once the
        calls already sent to them are answered or ``drain`` s (default 30) have passed
        (see :meth:`McpServer.stop`). Blocks until they are stopped. Returns what changed.
        Raises InvalidArgument for a negative ``drain``."""
        if isinstance(config, dict):
            config = McpConfig.from_dict(config)
        # 0 (no drain) is allowed; checked before anything changes
        drain = poll_seconds(drain, "drain", "McpHub.reload") or 0.0
        with self._reload_lock:
            with self._lock:
                old = dict(self._clients)
            plan = hub_reload.plan(old, config, self._new_client)
            with self._lock:
                # started before anyone sees them, so a call routed to one waits for its
                # start instead of finding it "configured"; and under the lock, so a stop
                # meanwhile sees (and stops) what was started
                if self._started:
                    for name in plan.started:
                        plan.clients[name].start_f()
                self._clients = plan.clients
                self.config = config
                self._retiring = plan.retired  # a stop meanwhile cuts their drain short
            try:
                hub_reload.stop_all(plan.retired, drain, plan.stop_reasons())
            finally:
                with self._lock:
                    self._retiring = []
        return plan.result()

    def stop(self) -> None:
        """Stop every server and mounted tool server, all in parallel; returns when they are
        stopped (each within its own ``kill_grace`` steps), the servers a reload is draining
        too. Safe to repeat."""
        with self._lock:
            self._started = False
            everything = list(self._clients.values()) + self._retiring + list(self._mounted)
        hub_reload.stop_all(everything)


def _guarded(start: Any) -> Future:
    try:
        return start()
    except Exception as exc:  # noqa: BLE001
        return failed(exc)


