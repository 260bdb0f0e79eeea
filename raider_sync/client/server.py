"""McpServer: the client of one configured MCP server, with a blocking API.

    srv = McpServer(config.server("files"))
    srv.start_f().result()               # never raises: look at srv.status / srv.reason
    srv.call_tool("mcp__files__read", {"path": "a.txt"}, timeout=30)
    srv.stop()

Every blocking method has a twin ending in ``_f`` that returns a ``concurrent.futures.Future``;
the blocking one waits on it. Calls are bounded by a deadline even when nobody waits: a call
that runs out is cancelled on the server (``notifications/cancelled``) and fails.

McpServer is a face over parts it owns, each with one job: a
:class:`~raider_sync.client.connection.Connection` (transport, session, era and status), a
:class:`~raider_sync.client.catalog.Catalog` (tools and cached lists), an
:class:`~raider_sync.client.asks.Asks` (every request but a tool call), a
:class:`~raider_sync.client.tool_calls.ToolCalls` (tool calls: their deadlines, the tasks they
become, their safe retries), an
:class:`~raider_sync.client.inbox.Inbox` (what the server sends unasked) and an
:class:`~raider_sync.client.eras.host.EraHost` (what the eras share across connections).
Every request goes one way: a timeout checked once by this face's rule, then
``Connection.when_up_f`` (the one status check), then the era's ``request_f``.
"""
from __future__ import annotations

import logging
import os
from concurrent.futures import Future
from typing import Any, Callable

from .._version import __version__
from ..config import RestartPolicy, ServerSpec
from ..errors import (
    ConfigError,
    InvalidArgument,
    NotConnected,
)
from ..jsonrpc import ProgressCallback, Session
from ..protocol import CLIENT_PROTOCOL_VERSION, KNOWN_PROTOCOL_VERSIONS
from ..threads.futures import Deadline, resolved, run_in_thread, wait_bounded
from ..transports import open_transport
from . import launch
from . import telemetry as _telemetry
from .asks import Asks
from .budget import ToolBudget, budget_of
from .calls import poll_seconds, seconds
from .capabilities import ClientCapabilities, Handler, Roots
from .catalog import Catalog
from .connection import Connection, Hooks
from .content import default_max_output_tokens, limit_content, visible_resources
from .eras import era_seam
from .eras.era_seam import Era, EraHost, EraSettings
from .events.opening import list_events, open_events
from .filters import ToolFilter
from .inbox import Inbox
from .lifecycle import UP, Restarts, live, restart_policy
from .retries import (
    DEFAULT_MAX_ATTEMPTS,
    Waiting,
    retry_choice,
)
from .surface import LogCallback, ResourceCallback
from .tasks import TaskFuture, TaskHandle, TaskStatus, TaskTracker
from .tool_calls import DEFAULT_MAX_TOTAL, ToolCalls, tasks_choice


class McpServer:
    """The client of one configured MCP server: stdio, Streamable HTTP or legacy HTTP+SSE.

    Options as the seed names them: ``startup_timeout_ms`` (default MCP_TIMEOUT, else 30000),
    ``base_env`` (default a copy of os.environ), ``kill_grace`` (seconds, default 2),
    ``on_status(server)``, ``max_output_tokens`` (default MAX_MCP_OUTPUT_TOKENS, else 25000),
    ``on_tools_changed(server)``, ``max_message_size`` (bytes; the spec's ``maxMessageSize``
    wins; default 64 MiB); answers to server requests (see :mod:`raider_sync.client.capabilities`):
    ``roots`` (file:// URIs or a callable), ``on_sampling(params)``, ``on_elicitation(params)``;
    ``raise_on_error`` (default False): calls raise ToolError for a tool's error result;
    ``auth``: an :class:`~raider_sync.auth.OAuth` (or ``fn(spec) -> OAuth``) for an HTTP
    server behind OAuth (default: one made from the entry's ``oauth`` block, which runs only
    when the server asks; an entry that sets its own ``Authorization`` header gets none,
    given or not, unless it has an ``oauth`` key). A server that needs a person to authorize
    and has no consent handler ends its start with status ``needs-auth``;
    ``allowed_tools``/``disabled_tools`` (names or globs, narrowing the spec's own),
    ``on_log(server, level, logger, data)``, ``on_resource_updated(server, uri)`` and
    ``telemetry`` (see :mod:`raider_sync.client.surface` and :mod:`raider_sync.client.telemetry`);
    ``protocol``, ``probe_timeout`` and ``max_input_rounds`` (see :mod:`raider_sync.client.eras`).
    ``restart`` (a :class:`RestartPolicy`, its dict, or True for the defaults; default the
    spec's ``restart``) restarts a crashed server on the next call. ``reset_on_progress`` and
    ``max_total`` are the defaults of :meth:`call_tool_f`'s, and so are ``task_timeout``
    and ``on_task_status`` (its ``on_status``); ``tasks`` ("auto", the default, or the
    spec's ``tasks``; True; False: no call becomes a task) is whether calls may become
    tasks (see :mod:`raider_sync.client.tasks` and docs/tasks.md).
    Thread-safe: any number of threads may call one server.
    """

    client_protocol_version = CLIENT_PROTOCOL_VERSION
    known_protocol_versions = KNOWN_PROTOCOL_VERSIONS

    def __init__(self, spec: ServerSpec, *, startup_timeout_ms: float | None = None,
                 base_env: dict[str, str] | None = None, kill_grace: float = 2.0,
                 on_status: Callable[["McpServer"], None] | None = None,
                 max_output_tokens: int | None = None,
                 on_tools_changed: Callable[["McpServer"], None] | None = None,
                 client_info: dict | None = None, roots: Roots | None = None,
                 on_sampling: Handler | None = None, on_elicitation: Handler | None = None,
                 max_message_size: int | None = None, raise_on_error: bool = False,
                 auth: Any = None, restart: RestartPolicy | dict | bool | None = None,
                 allowed_tools: list[str] | None = None, disabled_tools: list[str] | None = None,
                 on_log: LogCallback | None = None,
                 on_resource_updated: ResourceCallback | None = None, telemetry: Any = None,
                 protocol: str | None = None, probe_timeout: float = era_seam.PROBE_TIMEOUT,
                 max_input_rounds: int = era_seam.MAX_INPUT_ROUNDS,
                 reset_on_progress: bool | None = None, max_total: float | None = None,
                 tasks: Any = None, task_timeout: float | None = None,
                 on_task_status: Callable[[TaskStatus], None] | None = None,
                 retry: str | None = None, max_attempts: int = DEFAULT_MAX_ATTEMPTS):
        if not isinstance(spec, ServerSpec):
            raise TypeError(f"spec must be a ServerSpec (McpConfig.server(name)), "
                            f"not {type(spec).__name__}")
        self.spec = spec
        self.auth = launch.auth_for(spec, auth)
        self.startup_timeout_ms = (startup_timeout_ms if startup_timeout_ms is not None
                                   else launch.startup_timeout_ms())
        self.base_env = dict(os.environ if base_env is None else base_env)
        self._call_timeout = launch.call_timeout(spec)  # read once, like the other settings
        self.kill_grace = kill_grace
        if max_message_size is not None and (isinstance(max_message_size, bool) or not isinstance(
                max_message_size, int) or max_message_size <= 0):
            raise ConfigError(f"max_message_size must be a positive number of bytes, not "
                              f"{max_message_size!r}")
        self.max_message_size = max_message_size
        self.on_status = on_status
        self.max_output_tokens = max_output_tokens or default_max_output_tokens()
        self.on_tools_changed = on_tools_changed
        self.raise_on_error = raise_on_error
        self.client_info = client_info or {"name": "raider_sync", "version": __version__}
        self.client_handlers = ClientCapabilities(roots=roots, on_sampling=on_sampling,
                                                  on_elicitation=on_elicitation)
        self.log = logging.getLogger(f"raider_sync.server.{spec.key}")
        self.tool_filter = ToolFilter(spec.allowed_tools, spec.disabled_tools
                                      ).narrowed(ToolFilter(allowed_tools, disabled_tools))
        self.on_log = on_log
        self.on_resource_updated = on_resource_updated
        self.telemetry = _telemetry.resolve(telemetry)
        self.protocol = era_seam.check_choice(protocol or spec.protocol or "auto")
        self.probe_timeout = probe_timeout
        self.max_input_rounds = max_input_rounds
        #: the calls' defaults for deadlines that understand progress (see call_tool_f)
        self.reset_on_progress = reset_on_progress
        self.max_total = (None if max_total is None else
                          seconds(max_total, DEFAULT_MAX_TOTAL, "max_total", "McpServer"))
        self.tasks = tasks_choice(spec.tasks if tasks is None else tasks, "McpServer")
        self.task_timeout = (None if task_timeout is None else
                             seconds(task_timeout, 1.0, "task_timeout", "McpServer"))
        self.on_task_status = on_task_status
        #: when a tool call is sent again after the connection broke (see .retries)
        self.retry = retry_choice(retry or spec.retry or "safe", "McpServer")
        if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
            raise InvalidArgument(f"max_attempts of McpServer must be a whole number of at "
                                  f"least 1, not {max_attempts!r}")
        self.max_attempts = max_attempts
        #: tool calls sent again after the connection broke, since the server was made
        self.retries = 0
        self._repeats = Waiting()  # calls waiting to be sent again: stop fails them
        self.warnings: list[str] = []
        self._learn(None)  # era, protocol_version, capabilities, server_info, instructions
        self._host = EraHost(
            EraSettings(self.name, self.key, self.transport, self.fingerprint, self.protocol,
                        probe_timeout, max_input_rounds, self.client_info,
                        self.client_handlers.declared, self.client_handlers.handle, self.log,
                        tasks=self.tasks),
            relist=lambda seconds: self._catalog.fetch_tools(seconds),
            lists_changed=self._lists_changed,
            is_up=lambda: self.status in UP)
        self._catalog = Catalog(
            key=self.key, name=self.name, log=self.log, tool_filter=self.tool_filter,
            fetch_all=lambda *args: self._asks.fetch_all(*args), call_timeout=self.call_timeout,
            warnings=self.warnings, check_tool=self._check_tool,
            on_changed=lambda: self._inbox.tools_changed())
        self._inbox = Inbox(self, catalog=self._catalog, host=self._host,
                            handlers=self.client_handlers, log=self.log,
                            task_status=lambda *note: self._tasks.notified(*note))
        self._connection = Connection(
            name=self.name, key=self.key, log=self.log, host=self._host,
            startup_timeout_ms=self.startup_timeout_ms, kill_grace=kill_grace,
            restarts=Restarts(restart_policy(spec.restart if restart is None else restart)),
            hooks=Hooks(open_transport=self._open_transport,
                        handle_request=self._inbox.request,
                        handle_notification=self._inbox.notification,
                        opened=self._opened, forget=self._forget, status_changed=self._notify_status,
                        renewed=self._renewed, stopped=self._stopped,
                        observer=(self.telemetry.observer(self)
                                  if self.telemetry is not None else None)))
        self._asks = Asks(self, connection=self._connection, bound=self._bound, wait=self._wait,
                          log=self.log)
        self._tasks = TaskTracker(send=self._task_send, answer=self.client_handlers.handle,
                                  pool=self._host.pool, identity=self._task_identity,
                                  request_timeout=lambda: self.call_timeout, name=self.name)
        self._calls = ToolCalls(self, connection=self._connection, catalog=self._catalog,
                                tracker=self._tasks, waiting=self._repeats)
        live.add(self)

    def __repr__(self) -> str:
        return f"<McpServer {self.name!r} {self.transport} {self.status}>"

    def _repr_html_(self) -> str:
        from .notebook import server_html  # the Jupyter module, only in Jupyter
        return server_html(self)

    def __enter__(self) -> "McpServer":
        try:
            self.initialize()
        except BaseException:  # Ctrl-C or a start still running: nothing is left behind
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- what the spec says, and the connection ------------------------------------------

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def key(self) -> str:
        return self.spec.key

    @property
    def transport(self) -> str:
        return self.spec.transport

    @property
    def status(self) -> str:
        """configured, starting, connected, degraded, failed, needs-auth or stopped.

        ``degraded``: connected, but the last request could not reach the server (HTTP), or
        the last :meth:`ping` went unanswered; calls are still sent, and the next answer makes
        it ``connected`` again. ``failed``: the connection is gone (``reason`` says why)."""
        return self._connection.status

    @property
    def reason(self) -> str | None:
        """Why the server failed or stopped (with a stdio server's last stderr line)."""
        return self._connection.reason

    @property
    def call_timeout(self) -> float:
        """Seconds a call may take: the spec's ``timeout`` (ms), else MCP_TOOL_TIMEOUT (ms) as
        it was when the server object was made, else 600."""
        return self._call_timeout

    @property
    def child_env(self) -> dict[str, str]:
        """The environment a stdio server starts with: base_env without inherited plugin
        variables, the spec's env, CLAUDE_PROJECT_DIR and a plugin's root and data folders."""
        return launch.child_env(self.spec, self.base_env)

    @property
    def fingerprint(self) -> str:
        """What the server is started with, as one string: equal fingerprints talk to the
        same thing. A digest, so secrets in env and headers are never shown."""
        return launch.fingerprint(self.spec, self.base_env)

    @property
    def pid(self) -> int | None:
        """The process id of a running stdio server, else None."""
        return self._connection.pid

    @property
    def stderr_tail(self) -> list[str]:
        """The last lines a stdio server wrote to stderr."""
        return self._connection.stderr_tail

    @property
    def _session(self) -> Session | None:
        return self._connection.session

    @property
    def _transport(self) -> Any:
        return self._connection.transport

    def _open_transport(self) -> Any:
        """The transport of the spec, not yet started."""
        return open_transport(self.spec, env=self.child_env, kill_grace=self.kill_grace,
                              max_message_size=self.max_message_size, auth=self.auth)

    # -- start, restart and stop ---------------------------------------------------------

    def start_f(self) -> Future:
        """Connect in the background; a later call returns the same future, unless the start
        failed: then it starts anew (a stopped server is not started again: see
        :meth:`restart`).

        The future never fails: it resolves to this server, whose ``status`` is then
        connected or failed (with ``reason``). Transport, initialize, initialized and the
        tool list all happen within ``startup_timeout_ms``.
        """
        return self._connection.start_f(self)

    def initialize(self, timeout: float | None = None) -> Any:
        """Blocking :meth:`start_f`: returns this server once connected or failed (a failed
        server is started anew). A KeyboardInterrupt stops the server and propagates."""
        bound = seconds(timeout, self.startup_timeout_ms / 1000 + 2 * self.kill_grace + 5,
                        method="McpServer.initialize")
        try:
            return self.start_f().result(bound)
        except KeyboardInterrupt:
            self.stop()
            raise

    def restart_f(self) -> Future:
        """Close the connection (if any) and start anew, in the background, in any status,
        stopped included; a future of this server once connected or failed (it never fails).
        Calls made meanwhile wait for the start. A start already under way is not begun
        again: its future is returned."""
        return self._connection.restart_f(self, self._reopen)

    def restart(self, timeout: float | None = None) -> Any:
        """Blocking :meth:`restart_f`; ``timeout`` as for :meth:`initialize`."""
        bound = seconds(timeout, self.startup_timeout_ms / 1000 + 4 * self.kill_grace + 5,
                        method="McpServer.restart")
        return self.restart_f().result(bound)

    def stop(self, *, drain: float = 0.0, reason: str | None = None) -> None:
        """Stop the server: pending calls fail at once; a stdio process gets its stdin closed,
        then SIGTERM, then SIGKILL, ``kill_grace`` s apart. Status stopped. Safe to repeat.

        ``drain`` (s) first gives the calls already sent that long to be answered (blocking
        until they are, at most that long); calls made meanwhile fail with NotConnected and
        nothing of them is sent. ``reason`` (default "stopped by the client") becomes the
        stopped server's ``reason`` and is said by the ConnectionClosed of a call still
        unanswered. Raises InvalidArgument for a negative ``drain``."""
        drain = poll_seconds(drain, "drain", "McpServer.stop") or 0.0  # 0: no drain
        self._tasks.close()  # the tasks run on: their futures fail with TaskDetached
        self._repeats.close(NotConnected(f"MCP server {self.name!r} was stopped while a "
                                         f"call waited to be sent again"))
        if drain:
            self._connection.drain(reason or "stopped by the client", drain)
        self._connection.shutdown(grace=True, reason=reason)

    def stop_f(self) -> Future:
        """:meth:`stop` in the background; a future of None."""
        return run_in_thread(self.stop, f"raider-{self.key}-stop")

    def kill_now(self) -> None:
        """Kill a stdio process at once (SIGKILL to its group); status stopped."""
        self._connection.shutdown(grace=False)

    def _reopen(self) -> None:
        """A stopped server starts again: its own parts come back."""
        self._catalog.reopen()
        self._host.reopen()
        self._tasks.reopen()
        self._repeats.reopen()
        live.add(self)

    def _stopped(self) -> None:
        self._tasks.close()
        self._catalog.close()
        self._host.close()
        live.discard(self)

    def _notify_status(self) -> None:
        if self.on_status is not None:
            try:
                self.on_status(self)
            except Exception:  # noqa: BLE001
                self.log.exception("on_status failed")

    # -- what a connection learns --------------------------------------------------------

    def _learn(self, era: Era | None) -> None:
        """What the server said of itself, from the era that heard it (None: nothing yet)."""
        description = era.description if era is not None else None
        self.era: str | None = era.name if era is not None else None  # "legacy" or "modern"
        self.protocol_version: str | None = (description.protocol_version
                                             if description is not None else None)
        self.capabilities: dict = dict(description.capabilities) if description else {}
        self.server_info: dict = dict(description.server_info) if description else {}
        self.instructions: str | None = description.instructions if description else None

    def _opened(self, session: Session, era: Era, deadline: Deadline) -> None:
        """A new connection settled its era: learn, and list the tools within ``deadline``."""
        self._learn(era)
        self._catalog.opened()
        if "tools" in self.capabilities:  # a server without tools is not asked for them
            self._catalog.fetch_tools(deadline.left(), self._connection.startup_timeout_message())

    def _forget(self) -> None:
        """What a previous connection learnt is dropped before a new one."""
        self._learn(None)
        self._catalog.forget()

    def _renewed(self, session: Session, era: Era) -> None:
        """A new session in place of a forgotten one (on the thread of the request that found
        it gone): learn again, list again, subscribe again."""
        self._learn(era)
        self._catalog.forget_lists()
        self._catalog.queue_relist()
        # not on this thread: it is inside the transport's renewal, which the re-list (and so
        # a list_tools() in the callback) waits for
        session.run_in_order(self._inbox.tools_changed)
        session.run_in_order(self._asks.resubscribe)  # the new session has no subscriptions

    # -- sending -------------------------------------------------------------------------

    def _request_f(self, method: str, params: dict | None, bound: float,
                   **options: Any) -> Future:
        """``method`` sent the one way, within ``bound`` s (see :meth:`Asks.request_f`)."""
        return self._asks.request_f(method, params, bound, **options)

    def _wait(self, future: Future, timeout: float) -> Any:
        """The future's result, bounded; an interrupt cancels what the future stands for."""
        try:
            return wait_bounded(future, timeout)
        except BaseException:
            if not future.done():
                future.cancel()  # a request sends notifications/cancelled
            raise

    def _bound(self, timeout: Any, method: str) -> float:
        return seconds(timeout, self.call_timeout, method=f"McpServer.{method}")

    # -- tools ---------------------------------------------------------------------------

    @property
    def tool_names(self) -> list[str]:
        """The names the model sees (mcp__KEY__TOOL), in the server's order."""
        return [tool["name"] for tool in self._catalog.tools]

    @property
    def filtered_tools(self) -> list[str]:
        """The server's tools left out by ``allowed_tools``/``disabled_tools``."""
        return self._catalog.filtered

    def original_name(self, name: str) -> str | None:
        """The tool's name on the server, or None for a name it does not offer."""
        return self._catalog.original.get(name)

    def list_tools_f(self) -> Future:
        """A future of the tools under their prefixed names (copies); empty unless connected.
        While a re-list after tools/list_changed runs, it resolves when that is done."""
        if self.status not in UP:
            return resolved([])
        return self._catalog.tools_f()

    def list_tools(self, timeout: float | None = None) -> list[dict]:
        """Blocking :meth:`list_tools_f`; ``timeout`` defaults to the call timeout."""
        return self.list_tools_f().result(self._bound(timeout, "list_tools"))

    def _fetch_tools(self, timeout: float, timeout_message: str | None = None) -> None:
        self._catalog.fetch_tools(timeout, timeout_message)

    def _check_tool(self, tool: dict) -> str | None:
        era = self._connection.era
        return era.check_tool(tool) if era is not None else None

    def call_tool_f(self, name: str, arguments: dict | str | None = None, *,
                    timeout: float | None = None,
                    on_progress: ProgressCallback | None = None,
                    raise_on_error: bool | None = None,
                    reset_on_progress: bool | None = None,
                    max_total: float | None = None, task_timeout: float | None = None,
                    on_status: Callable[[TaskStatus], None] | None = None,
                    tasks: Any = None, retry: str | None = None) -> TaskFuture:
        """Call a tool by its prefixed (or original) name; a :class:`~raider_sync.TaskFuture`
        of the result, a :class:`~raider_sync.ToolResult` (a dict). Returns at once: the
        request is sent on a thread of the session.

        ``arguments``: a dict, or a JSON string of an object (as model APIs give them).
        The future fails with InvalidArgument (other arguments, a timeout that is not
        positive), NotConnected, UnknownTool, McpError (a JSON-RPC error answer),
        ConnectionClosed (the server went away) or ToolTimeout (after ``timeout`` s, default
        :attr:`call_timeout`, the call is cancelled on the server); with ToolError for an
        error result when ``raise_on_error`` (default: the server's option) is true. A call
        made while the server starts (or restarts) waits for it within the same ``timeout``;
        a failed server with a restart policy is restarted when a restart is due.
        ``on_progress(progress, total, message)`` receives the server's progress
        notifications.

        Deadlines that understand progress: with ``reset_on_progress`` (default: the
        server's, else on when ``on_progress`` is given; True without ``on_progress`` asks
        for progress all the same), ``timeout`` bounds the *silence* of the call: each
        progress notification starts it anew, and ``max_total`` s (default: the server's,
        else the greater of ``timeout`` and an hour) bound the whole call, progress or not.
        The ToolTimeout's ``kind`` says which passed ("idle" or "total").

        Tasks: a server may answer the call with a task (see docs/tasks.md); the future then
        follows it. ``timeout`` bounds the call until the server answered it, ``task_timeout``
        (s; default the server's, else the same rule as ``timeout``'s, from the task's
        creation; each change of the task counts as progress) the wait for the task after
        (then ``tasks/cancel``, and ToolTimeout with its ``handle``). ``on_status(status)``
        hears of each change of the task (default the server's ``on_task_status``).
        ``tasks`` ("auto", True, False; default the server's) whether the call may become a
        task. The future fails with TaskFailed, TaskCancelled, TaskExpired or TaskDetached.

        Safe retries: a call that met a broken connection (a crash, a restart, a cut HTTP
        connection) is sent again within the same deadline, at most ``max_attempts`` in all,
        when ``retry`` (default the server's, "safe") allows: "safe" repeats a call that
        never reached the server, or one whose tool says it only reads or is idempotent;
        "always" any; "never" none. See :mod:`raider_sync.client.retries`.
        """
        return self._calls.call_tool_f(
            name, arguments, timeout=timeout, on_progress=on_progress,
            raise_on_error=raise_on_error, reset_on_progress=reset_on_progress,
            max_total=max_total, task_timeout=task_timeout, on_status=on_status, tasks=tasks,
            retry=retry)

    def call_tool(self, name: str, arguments: dict | str | None = None, *,
                  timeout: float | None = None,
                  on_progress: ProgressCallback | None = None,
                  raise_on_error: bool | None = None,
                  reset_on_progress: bool | None = None,
                  max_total: float | None = None, task_timeout: float | None = None,
                  on_status: Callable[[TaskStatus], None] | None = None,
                  tasks: Any = None, retry: str | None = None) -> dict:
        """Blocking :meth:`call_tool_f`: the result dict, or the future's exception raised
        (the request is sent on this thread). A call that becomes a task blocks until the
        task ends (or ``task_timeout``). An interrupt (KeyboardInterrupt) while it waits
        cancels the call on the server (``notifications/cancelled``, or ``tasks/cancel``) and
        propagates; the server stays usable."""
        return self._calls.call_tool(
            name, arguments, timeout=timeout, on_progress=on_progress,
            raise_on_error=raise_on_error, reset_on_progress=reset_on_progress,
            max_total=max_total, task_timeout=task_timeout, on_status=on_status, tasks=tasks,
            retry=retry)

    def resume_task_f(self, handle: TaskHandle, *, timeout: float | None = None,
                      task_timeout: float | None = None,
                      on_status: Callable[[TaskStatus], None] | None = None,
                      raise_on_error: bool | None = None) -> TaskFuture:
        """Follow again the task ``handle`` names (see :meth:`resume_task`); returns at once."""
        return self._calls.resume_task_f(handle, timeout=timeout, task_timeout=task_timeout,
                                         on_status=on_status, raise_on_error=raise_on_error)

    def resume_task(self, handle: TaskHandle, *, timeout: float | None = None,
                    task_timeout: float | None = None,
                    on_status: Callable[[TaskStatus], None] | None = None,
                    raise_on_error: bool | None = None) -> Any:
        """Follow again the task ``handle`` names (saved by :meth:`TaskHandle.to_json`, maybe
        in another process) until it ends: its result, as :meth:`call_tool` gives it.
        ``timeout`` bounds the wait for a start, ``task_timeout`` (default as for a call)
        the wait for the task. An interrupt while it waits lets go of the task (it is not
        cancelled) and propagates. Raises TaskNotResumable for another server's task, for a
        stdio server's task outside the server process that ran it (a new McpServer starts
        a new process), for a wire the server's era does not speak; TaskExpired when the
        server no longer knows the task; otherwise as the call's future."""
        return self._calls.resume_task(handle, timeout=timeout, task_timeout=task_timeout,
                                       on_status=on_status, raise_on_error=raise_on_error)

    def _task_send(self, method: str, params: dict, deadline: Deadline,
                   **options: Any) -> Future:
        """A tasks/* request on the one request path, within ``deadline``."""
        return self._asks.request_f(method, params, max(deadline.left(), 0.001), **options)

    def _task_identity(self) -> dict:
        return self._calls.identity.of()

    def limit_content(self, content: list[dict], is_error: bool = False) -> list[dict]:
        """The content blocks with their text held to :attr:`max_output_tokens` (see
        :func:`raider_sync.client.content.limit_content`)."""
        return limit_content(content, is_error, max_output_tokens=self.max_output_tokens)

    def tool_budget(self, timeout: float | None = None) -> ToolBudget:
        """The estimated token cost of this server's (filtered) tool definitions; see
        :mod:`raider_sync.client.budget`."""
        return budget_of({self.name: self.list_tools(self._bound(timeout, "tool_budget"))})

    # -- prompts, resources, skills and ping ---------------------------------------------

    @property
    def has_prompts(self) -> bool:
        return self.status in UP and "prompts" in self.capabilities

    @property
    def has_resources(self) -> bool:
        return self.status in UP and "resources" in self.capabilities

    def list_prompts_f(self, cache: str = "use") -> Future:
        """A future of the server's prompts, listed on first use and again after
        prompts/list_changed. Empty unless connected; a failing prompts/list is empty.
        ``cache``: "use", "refresh" or "bypass" (see :mod:`raider_sync.client.eras.cache`)."""
        if not self.has_prompts:
            return resolved([])
        return self._catalog.cached_list("prompts/list", "prompts", _same, cache)

    def list_prompts(self, timeout: float | None = None, cache: str = "use") -> list[dict]:
        bound = self._bound(timeout, "list_prompts")
        return wait_bounded(self.list_prompts_f(cache), bound)

    def get_prompt_f(self, name: str, arguments: dict | None = None, *,
                     timeout: float | None = None) -> Future:
        """A future of prompts/get's result ({description, messages}); ``timeout`` (s,
        default the call timeout) bounds it, and the request is cancelled then."""
        return self._asks.get_prompt_f(name, arguments, timeout)

    def get_prompt(self, name: str, arguments: dict | None = None, *,
                   timeout: float | None = None) -> dict:
        """Blocking :meth:`get_prompt_f`; raises RequestTimeout after ``timeout`` s."""
        bound = self._bound(timeout, "get_prompt")
        return self._wait(self.get_prompt_f(name, arguments, timeout=bound), bound)

    def list_resources_f(self, cache: str = "use") -> Future:
        """A future of the server's resources, cached like the prompts; ``ui://`` resources
        and those of type text/html;profile=mcp-app are left out."""
        if not self.has_resources:
            return resolved([])
        return self._catalog.cached_list("resources/list", "resources", visible_resources,
                                         cache)

    def list_resources(self, timeout: float | None = None, cache: str = "use") -> list[dict]:
        bound = self._bound(timeout, "list_resources")
        return wait_bounded(self.list_resources_f(cache), bound)

    def list_resource_templates_f(self) -> Future:
        """A future of the server's resource templates (resources/templates/list), cached."""
        if not self.has_resources:
            return resolved([])
        return self._catalog.cached_list("resources/templates/list", "resourceTemplates", _same)

    def list_resource_templates(self, timeout: float | None = None) -> list[dict]:
        bound = self._bound(timeout, "list_resource_templates")
        return wait_bounded(self.list_resource_templates_f(), bound)

    def read_resource_f(self, uri: str, *, timeout: float | None = None,
                        cache: str = "use") -> Future:
        """A future of resources/read's contents: ``[{uri, mimeType, text | blob}]``.
        ``cache`` applies to a stateless server's cacheable answers."""
        return self._asks.read_resource_f(uri, timeout, cache)

    def read_resource(self, uri: str, *, timeout: float | None = None,
                      cache: str = "use") -> list[dict]:
        bound = self._bound(timeout, "read_resource")
        return self._wait(self.read_resource_f(uri, timeout=bound, cache=cache), bound)

    def list_skills_f(self, *, timeout: float | None = None) -> Future:
        """A future of the server's skills (``skills/list``, every page): entries with their
        ``uri``, ``frontmatter`` and ``resources`` (size and digest per file). Nothing is read.
        See :mod:`raider_sync.client.skills`."""
        return self._asks.list_skills_f(timeout)

    def list_skills(self, *, timeout: float | None = None) -> list[dict]:
        bound = self._bound(timeout, "list_skills")
        return wait_bounded(self.list_skills_f(timeout=bound), bound)

    def get_skill_f(self, uri: str, *, timeout: float | None = None) -> Future:
        """A future of one skill, every file read and verified (size, sha256 digest, SKILL.md's
        frontmatter against its entry): ``{uri, frontmatter, body, files}``. Fails with
        SkillRejected on any mismatch, before anything more is read."""
        return self._asks.get_skill_f(uri, timeout)

    def get_skill(self, uri: str, *, timeout: float | None = None) -> dict:
        bound = self._bound(timeout, "get_skill")
        return wait_bounded(self.get_skill_f(uri, timeout=bound), bound)

    def ping(self, timeout: float = 10.0) -> None:
        """Send ``ping`` (a stateless server has none: ``server/discover`` instead); raises
        when the server does not answer within ``timeout`` s. The outcome shows in
        :attr:`status`: unanswered, a connected server reads ``degraded``; answered, a
        degraded one reads ``connected`` again."""
        self._asks.ping(timeout)

    # -- server log messages, completion, subscriptions, any method ----------------------

    def set_log_level_f(self, level: str, *, timeout: float | None = None) -> Future:
        """Ask the server to send log messages of ``level`` and above (``logging/setLevel``;
        in the stateless era, every request from now on carries ``logLevel``, and the future
        is resolved at once); a future of None. Raises ConfigError for a level that is not
        one of :data:`~raider_sync.client.surface.LOG_LEVELS`; the future fails with
        McpError when a handshake-era server has no logging."""
        return self._asks.set_log_level_f(level, timeout)

    def set_log_level(self, level: str, *, timeout: float | None = None) -> None:
        """Blocking :meth:`set_log_level_f`."""
        bound = self._bound(timeout, "set_log_level")
        wait_bounded(self.set_log_level_f(level, timeout=bound), bound)

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
        return self._asks.complete_f(ref, argument, context, timeout)

    def complete(self, ref: dict | str, argument: dict | tuple, context: dict | None = None,
                 *, timeout: float | None = None) -> dict:
        """Blocking :meth:`complete_f`."""
        bound = self._bound(timeout, "complete")
        return wait_bounded(self.complete_f(ref, argument, context, timeout=bound), bound)

    @property
    def subscriptions(self) -> list[str]:
        """The resource URIs this client has subscribed to, sorted."""
        return self._asks.subscriptions

    def subscribe_f(self, uri: str, *, timeout: float | None = None) -> Future:
        """Subscribe to changes of the resource ``uri`` (``resources/subscribe``); a future
        of None. The server's ``notifications/resources/updated`` for it then reach
        ``on_resource_updated(server, uri)``; a new HTTP session (after the server forgot
        the old one) subscribes again. The future fails with McpError when the server does
        not offer subscriptions."""
        return self._asks.subscribe_f(uri, timeout)

    def subscribe(self, uri: str, *, timeout: float | None = None) -> None:
        """Blocking :meth:`subscribe_f`."""
        bound = self._bound(timeout, "subscribe")
        wait_bounded(self.subscribe_f(uri, timeout=bound), bound)

    def unsubscribe_f(self, uri: str, *, timeout: float | None = None) -> Future:
        """End a subscription (``resources/unsubscribe``); a future of None."""
        return self._asks.unsubscribe_f(uri, timeout)

    def unsubscribe(self, uri: str, *, timeout: float | None = None) -> None:
        """Blocking :meth:`unsubscribe_f`."""
        bound = self._bound(timeout, "unsubscribe")
        wait_bounded(self.unsubscribe_f(uri, timeout=bound), bound)

    def listen(self, *, tools: bool = False, prompts: bool = False, resources: bool = False,
               uris=(), timeout: float | None = None):
        """Subscribe to changes: the tool, prompt or resource lists, and updates of the
        resources ``uris``. A :class:`~raider_sync.client.eras.listen.Subscription` (context
        manager; ``next(timeout)``, ``events(timeout)``), the same in both eras (see
        :mod:`raider_sync.client.eras.listen`). Blocks until the listen is open: in the stateless
        era until the server acknowledges ``subscriptions/listen``, in the handshake era for
        ``resources/subscribe`` (``timeout`` s each, default the call timeout). Raises
        NotConnected; McpError for a listen the server refuses (one that serves no
        ``subscriptions/listen`` among them), at once rather than at ``next``;
        SubscriptionEnded or RequestTimeout for one it ends, or does not acknowledge, first."""
        return self._asks.listen(tools=tools, prompts=prompts, resources=resources, uris=uris,
                                 timeout=timeout)

    def list_events(self, *, timeout: float | None = None) -> list[dict]:
        """The event types the server declares (``events/list``, every page; experimental:
        the events extension is a draft, docs/events.md): ``name``, ``description``,
        ``delivery``, ``inputSchema``, ``payloadSchema``. Blocks at most ``timeout`` s
        (default the call timeout). Raises McpError -32601 for a server that does not offer
        events (not of the stateless era, or without the extension), NotConnected,
        RequestTimeout."""
        return list_events(self, self._bound(timeout, "list_events"))

    def events(self, name: str, arguments: dict | None = None, *, mode: str = "auto",
               cursor: str | None = None, max_age: float | None = None,
               poll_floor: float = 1.0, heartbeat: float = 30.0,
               timeout: float | None = None):
        """Subscribe to the event ``name`` with ``arguments`` (experimental, docs/events.md):
        a running :class:`~raider_sync.client.events.EventSubscription` (context manager;
        ``next(timeout)``, iteration, ``cursor``, ``truncated``, ``close()``). ``mode``:
        "poll" (``events/poll`` on a thread, waiting what the server asks but at least
        ``poll_floor`` s), "push" (an ``events/stream`` kept open, opened again from the
        last cursor after ``2 * heartbeat`` s of silence) or "auto" (push where the event
        offers it). ``cursor`` (a stored ``sub.cursor``) resumes after it; None starts now.
        ``max_age`` (s) replays nothing older. Blocks for the first poll, or until the
        stream is active, at most ``timeout`` s (default the call timeout; each poll is
        bounded by it too). Raises McpError (-32601 for a server without events, the
        server's refusal: -32023 an unknown event, -32026 a mode not offered, -32602 bad
        arguments), InvalidArgument, NotConnected, RequestTimeout."""
        return open_events(self, self._connection, name, arguments, mode=mode, cursor=cursor,
                           max_age=max_age, poll_floor=poll_floor, heartbeat=heartbeat,
                           timeout=self._bound(timeout, "events"))

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
        return self._asks.request_any_f(method, params, timeout, on_progress)

    def request(self, method: str, params: dict | None = None, *,
                timeout: float | None = None, on_progress: ProgressCallback | None = None) -> Any:
        """Blocking :meth:`request_f` (the request is sent on this thread); an interrupt
        while it waits cancels the request on the server and propagates."""
        return self._asks.request_any(method, params, timeout, on_progress)

    @classmethod
    def in_process(cls, tool_server: Any, **options: Any) -> Any:
        """A client of ``tool_server`` (a :class:`ToolServer`) in this process: no
        subprocess, the same JSON-RPC session and the same API as any server, its messages
        passed through queues as JSON. ``options`` are McpServer's. Start it as any other.
        Raises TypeError for anything but a ToolServer."""
        make = getattr(tool_server, "in_process_client", None)
        if not callable(make):
            raise TypeError(f"tool_server must be a ToolServer, not {type(tool_server).__name__}")
        return make(**options)

    # -- what the server sends -----------------------------------------------------------

    def _lists_changed(self) -> None:
        """Every list may have changed unannounced: fetch them again."""
        self._catalog.forget_lists()
        if "tools" in self.capabilities:
            self._catalog.tools_changed()


def _same(items: list) -> list:
    return items
