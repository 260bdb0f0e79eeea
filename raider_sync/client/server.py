"""McpServer: the client of one configured MCP server, with a blocking API.

    srv = McpServer(config.server("files"))
    srv.start_f().result()               # never raises: look at srv.status / srv.reason
    srv.call_tool("mcp__files__read", {"path": "a.txt"}, timeout=30)
    srv.stop()

Every blocking method has a twin ending in ``_f`` that returns a ``concurrent.futures.Future``;
the blocking one waits on it. Calls are bounded by a deadline even when nobody waits: a call
that runs out is cancelled on the server (``notifications/cancelled``) and fails.
"""
from __future__ import annotations

import atexit
import copy
import logging
import os
import threading
from concurrent.futures import Future
from typing import Any, Callable

from .._version import __version__
from . import launch
from .capabilities import ClientCapabilities, Handler, Roots
from .calls import seconds, tool_arguments, unknown_tool_message
from ..config import RestartPolicy, ServerSpec, tool_name
from .content import default_max_output_tokens, limit_content, strip_private_meta
from ..errors import (ConfigError, McpError, NotConnected, RaiderError, RequestTimeout,
                     ToolTimeout, TransportError, UnknownTool, UnsupportedProtocol,
                     last_stderr_line)
from ..threads.futures import Deadline, Deadlines, failed, resolved, then, wait_bounded
from ..jsonrpc import ProgressCallback, Session
from .lifecycle import UP, InFlight, Lifecycle, Restarts, live, restart_policy, when_started
from .listings import Listings
from .results import ToolResult
from ..protocol import (CLIENT_PROTOCOL_VERSION, KNOWN_PROTOCOL_VERSIONS,
                       STATELESS_REASON, UNSUPPORTED_PROTOCOL_VERSION, check_initialize_result,
                       initialize_params, translate_initialize_error)
from .surface import LogCallback, ResourceCallback, ServerSurface
from ..protocol.codes import INTERNAL_ERROR
from ..transports import open_transport
from ..transports.statuses import Status, classify_error
from ..threads.workers import Workers
from .eras import era_seam


class McpServer(Lifecycle, Listings, ServerSurface):
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
    spec's ``restart``) restarts a crashed server on the next call.
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
                 max_input_rounds: int = era_seam.MAX_INPUT_ROUNDS):
        if not isinstance(spec, ServerSpec):
            raise TypeError(f"spec must be a ServerSpec (McpConfig.server(name)), "
                            f"not {type(spec).__name__}")
        self.spec = spec
        self.auth = _auth_for(spec, auth)
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
        self._init_surface(allowed_tools=allowed_tools, disabled_tools=disabled_tools,
                           on_log=on_log, on_resource_updated=on_resource_updated,
                           telemetry=telemetry)
        self.protocol = era_seam.check_choice(protocol or spec.protocol or "auto")
        self.probe_timeout = probe_timeout
        self.max_input_rounds = max_input_rounds
        self.era: str | None = None  # "legacy" or "modern" once connected
        self._era = era_seam.EraSeam(self)

        self._lock = threading.RLock()
        self._status = "configured"
        self._reason: str | None = None
        self.protocol_version: str | None = None
        self.server_info: dict = {}
        self.instructions: str | None = None
        self.capabilities: dict = {}
        self.warnings: list[str] = []
        self._transport = None
        self._transport_claimed = False  # one thread, and only one, closes the transport
        self._session: Session | None = None
        self._start_future: Future | None = None
        self._start_thread: threading.Thread | None = None
        self._generation = 0  # one per start: what an older connection says is ignored
        self._restarts = Restarts(restart_policy(spec.restart if restart is None else restart))
        self._start_waits: Deadlines | None = None
        self._in_flight = InFlight()  # what a draining stop waits for
        self._tools: list[dict] = []
        self._original: dict[str, str] = {}
        self._output_schemas: dict[str, dict] = {}  # by original name
        self._tools_future: Future = resolved([])
        self._relist_queued = False
        self._tools_asked = 0  # tools/list fetches begun, and the newest whose answer is set
        self._tools_set = 0
        self._lists: dict[str, Future] = {}
        self._background = self._new_background()
        live.add(self)

    def _new_background(self) -> Workers:
        # the server's own, not a lane of its session's pool: re-lists run one at a time,
        # and this pool lasts as long as the server, across its connections
        return Workers(1, f"raider-{self.key}-relist")

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

    # -- what the spec says --------------------------------------------------------------

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
        return self._status

    @property
    def reason(self) -> str | None:
        """Why the server failed or stopped (with a stdio server's last stderr line)."""
        return self._reason

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
        transport = self._transport
        return getattr(transport, "pid", None) if self._status in ("starting", *UP) else None

    @property
    def stderr_tail(self) -> list[str]:
        """The last lines a stdio server wrote to stderr."""
        return self._transport.stderr_tail if self._transport is not None else []

    # -- the handshake (start, restart and stop: see Lifecycle) ---------------------------

    def _open_transport(self):
        """The transport of the spec, not yet started."""
        return open_transport(self.spec, env=self.child_env, kill_grace=self.kill_grace,
                              max_message_size=self.max_message_size, auth=self.auth)

    def _handshake(self, session: Session, deadline: Deadline,
                   timeout_message: str | None = None,
                   version: str = CLIENT_PROTOCOL_VERSION) -> None:
        """initialize, then notifications/initialized; raises what refuses the server."""
        try:
            result = session.request(
                "initialize", initialize_params(self._client_capabilities(), self.client_info,
                                                version),
                timeout=deadline.left(), cancellable=False,
                timeout_message=timeout_message or self._startup_timeout_message())
        except McpError as exc:
            raise translate_initialize_error(exc) from None
        except TransportError as exc:  # the stateless revision's refusal over HTTP
            if classify_error(exc) is Status.STATELESS_REFUSAL:
                raise UnsupportedProtocol(UNSUPPORTED_PROTOCOL_VERSION, STATELESS_REASON) from None
            raise
        self.protocol_version = check_initialize_result(result)
        self.era = "legacy"
        self.capabilities = dict(result.get("capabilities") or {})
        self.server_info = dict(result.get("serverInfo") or {})
        self.instructions = result.get("instructions")
        # HTTP: MCP-Protocol-Version from now on, and the GET stream opens
        session.transport.negotiated(self.protocol_version, deadline.left())
        session.notify("notifications/initialized")

    def _renew_session(self, timeout: float) -> None:
        """A new session in place of one the server forgot (HTTP 404); called by the JSON-RPC
        session on the thread of a request that found it gone (a session thread when the GET
        stream did). The tools are listed again."""
        session = self._session
        if session is None or self._status not in UP:
            raise self._not_connected()
        self._handshake(session, Deadline(timeout),
                        f"starting a new session timed out after {timeout:.3g} s")
        with self._lock:
            self._lists.clear()
        self._queue_relist()
        # not on this thread: it is inside the session's renewal, which the re-list (and so
        # a list_tools() in the callback) waits for
        session.run_in_order(self._call_on_tools_changed)
        session.run_in_order(self._resubscribe)  # the new session has no subscriptions

    def _startup_timeout_message(self) -> str:
        return f"startup timed out after {self.startup_timeout_ms / 1000:g} s (MCP_TIMEOUT)"

    def _describe_failure(self, exc: BaseException) -> str:
        if isinstance(exc, UnsupportedProtocol):
            message = exc.message
        elif isinstance(exc, McpError):
            message = f"the server answered with an error: {exc}"
        else:
            message = str(exc)
        last = last_stderr_line(self.stderr_tail)
        if last and last not in message:
            message = f"{message} (last stderr line: {last})"
        hint = self._transport.diagnosis if self._transport is not None else None
        if hint:
            message = f"{message}: {hint}"
        return message or type(exc).__name__

    def _client_capabilities(self) -> dict:
        return self.client_handlers.declared()

    # -- tools ---------------------------------------------------------------------------

    @property
    def tool_names(self) -> list[str]:
        """The names the model sees (mcp__KEY__TOOL), in the server's order."""
        return [tool["name"] for tool in self._tools]

    def original_name(self, name: str) -> str | None:
        """The tool's name on the server, or None for a name it does not offer."""
        return self._original.get(name)

    def list_tools_f(self) -> Future:
        """A future of the tools under their prefixed names (copies); empty unless connected.
        While a re-list after tools/list_changed runs, it resolves when that is done."""
        if self._status not in UP:
            return resolved([])
        return then(self._tools_future, lambda _: copy.deepcopy(self._tools))

    def list_tools(self, timeout: float | None = None) -> list[dict]:
        """Blocking :meth:`list_tools_f`; ``timeout`` defaults to the call timeout."""
        return self.list_tools_f().result(seconds(timeout, self.call_timeout,
                                                  method="McpServer.list_tools"))

    def _fetch_tools(self, timeout: float, timeout_message: str | None = None) -> None:
        """tools/list, every page, within ``timeout`` s; then the tools are set, unless the
        answer to a later tools/list is set already (the start's list and a re-list after an
        early list_changed overlap, and the threads that set them race)."""
        with self._lock:
            self._tools_asked += 1
            asked = self._tools_asked
        self._set_tools(self._fetch_all("tools/list", "tools", timeout, timeout_message), asked)

    def _set_tools(self, tools: list[dict], asked: int | None = None) -> None:
        listed: list[dict] = []
        original: dict[str, str] = {}
        output_schemas: dict[str, dict] = {}
        warnings: list[str] = []
        filtered: list[str] = []
        for tool in tools:
            if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                warnings.append(f"a tool without a name was dropped: {str(tool)[:100]}")
                continue
            prefixed = tool_name(self.key, tool["name"])
            if not self.tool_filter.allows(tool["name"], prefixed):
                filtered.append(tool["name"])  # allowedTools/disabledTools: not offered
                continue
            problem = self._era.check_tool(tool)
            if problem is not None:
                warnings.append(problem)
                continue
            if prefixed in original:
                warnings.append(
                    f"tool {tool['name']!r} dropped: its name {prefixed} collides with "
                    f"tool {original[prefixed]!r}")
                continue
            original[prefixed] = tool["name"]
            if isinstance(tool.get("outputSchema"), dict):
                output_schemas[tool["name"]] = tool["outputSchema"]
            listed.append({**tool, "name": prefixed})
        with self._lock:
            if asked is not None:
                if asked < self._tools_set:
                    return  # an older answer than the one set
                self._tools_set = asked
            self._tools, self._original = listed, original
            self._output_schemas = output_schemas
            self.filtered_tools = filtered
            # a re-list finds the same problems again: say each once
            self.warnings.extend(w for w in warnings if w not in self.warnings)

    def call_tool_f(self, name: str, arguments: dict | str | None = None, *,
                    timeout: float | None = None,
                    on_progress: ProgressCallback | None = None,
                    raise_on_error: bool | None = None) -> Future:
        """Call a tool by its prefixed (or original) name; a future of the result, a
        :class:`~raider_sync.ToolResult` (a dict). Returns at once: the request is sent on a
        thread of the session.

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
        """
        try:
            bound = seconds(timeout, self.call_timeout, method="McpServer.call_tool_f")
        except RaiderError as exc:
            return failed(exc)
        return self._call_tool_f(name, arguments, bound, on_progress, raise_on_error,
                                 inline=False)

    def call_tool(self, name: str, arguments: dict | str | None = None, *,
                  timeout: float | None = None,
                  on_progress: ProgressCallback | None = None,
                  raise_on_error: bool | None = None) -> dict:
        """Blocking :meth:`call_tool_f`: the result dict, or the future's exception raised
        (the request is sent on this thread). An interrupt (KeyboardInterrupt) while it
        waits cancels the call on the server (``notifications/cancelled``) and propagates;
        the server stays usable."""
        bound = seconds(timeout, self.call_timeout, method="McpServer.call_tool")
        return self._wait(self._call_tool_f(name, arguments, bound, on_progress, raise_on_error,
                                            inline=True), bound)

    def _call_tool_f(self, name: str, arguments: Any, bound: float,
                     on_progress: ProgressCallback | None, raise_on_error: bool | None,
                     inline: bool) -> Future:
        """The call of :meth:`call_tool_f`; ``bound`` is the timeout already checked."""
        try:
            arguments = tool_arguments(arguments, name)
        except RaiderError as exc:
            return failed(exc)
        raising = self.raise_on_error if raise_on_error is None else raise_on_error

        def call(left: float, inline: bool) -> Future:
            session = self._session
            if self._status not in UP or session is None:
                return failed(self._not_connected())
            original = self._original.get(name)
            if original is None and name in self._original.values():
                original = name
            if original is None:
                return failed(UnknownTool(unknown_tool_message(
                    f"MCP server {self.name!r} has no tool {name!r}", name, self.tool_names)))
            return self._era.request_f(
                session, "tools/call", {"name": original, "arguments": arguments},
                timeout=left, on_progress=on_progress, timeout_error=ToolTimeout,
                timeout_message=f"MCP tool call timed out after {bound:g} s",
                transform=lambda result: self._shape_result(result, name, original, raising),
                inline=inline, wait=inline)  # inline: the blocking call_tool waits next

        return self._when_up_f(bound, call, inline, ToolTimeout, "MCP tool call")

    def _when_up_f(self, timeout: float, send: Callable[[float, bool], Future], inline: bool,
                   timeout_error: type[RequestTimeout] = RequestTimeout,
                   what: str = "the request") -> Future:
        """``send(seconds_left, inline)`` now when connected; after the start when starting
        (a due restart of a failed server begins first); else a future failed with
        NotConnected."""
        if self._status in UP:  # the usual case, read unlocked: a stop meanwhile fails the send
            return self._counted(send, timeout, inline)
        why = self._maybe_restart() if self._status == "failed" else ""
        with self._lock:
            status, start = self._status, self._start_future
            waits = self._waits() if status == "starting" else None
        if status in UP:
            return self._counted(send, timeout, inline)
        if status != "starting" or start is None or waits is None:
            return failed(self._not_connected(why))

        def after_start(left: float) -> Future:
            if self._status not in UP:
                return failed(self._not_connected())
            return self._counted(send, left, False)

        return when_started(start, timeout, after_start, waits, lambda: timeout_error(
            f"{what} timed out after {timeout:g} s: MCP server {self.name!r} was still "
            f"starting"))

    def _counted(self, send: Callable[[float, bool], Future], left: float,
                 inline: bool) -> Future:
        """``send(left, inline)``, counted until its future settles (a draining stop waits
        for it); once a drain has begun, a future failed with NotConnected, nothing sent."""
        refused = self._in_flight.enter()
        if refused is not None:
            return failed(NotConnected(f"MCP server {self.name!r} is not connected "
                                       f"(stopping: {refused})"))
        try:
            future = send(left, inline)
        except BaseException:
            self._in_flight.leave()
            raise
        future.add_done_callback(self._in_flight.leave)
        return future

    def _waits(self) -> Deadlines:
        """The timer of calls waiting for a start (the lock is held)."""
        if self._start_waits is None:
            self._start_waits = Deadlines(f"{self.key}-start-waits")
        return self._start_waits

    def _wait(self, future: Future, timeout: float) -> Any:
        """The future's result, bounded; an interrupt cancels what the future stands for."""
        try:
            return wait_bounded(future, timeout)
        except BaseException:
            if not future.done():
                future.cancel()  # a request sends notifications/cancelled
            raise

    def _shape_result(self, result: Any, name: str = "", original: str = "",
                      raising: bool = False) -> dict:
        if not isinstance(result, dict):
            raise McpError(INTERNAL_ERROR, f"tools/call answered with {type(result).__name__}, not an object")
        result = ToolResult(strip_private_meta(result), tool=name,
                            output_schema=self._output_schemas.get(original))
        if isinstance(result.get("content"), list):
            result["content"] = self.limit_content(result["content"], bool(result.get("isError")))
        return result.raise_for_error() if raising else result

    def limit_content(self, content: list[dict], is_error: bool = False) -> list[dict]:
        """The content blocks with their text held to :attr:`max_output_tokens` (see
        :func:`raider_sync.client.content.limit_content`)."""
        return limit_content(content, is_error, max_output_tokens=self.max_output_tokens)

    # -- what the server sends -----------------------------------------------------------

    def _handle_request(self, method: str, params: dict) -> Any:
        if method == "ping":
            return {}
        return self.client_handlers.handle(method, params)

    def _handle_notification(self, method: str, params: dict) -> None:
        self._era.offer(method, params)
        if method == "notifications/tools/list_changed":
            self._tools_changed()
        elif method == "notifications/prompts/list_changed":
            with self._lock:
                self._lists.pop("prompts/list", None)
        elif method == "notifications/resources/list_changed":
            with self._lock:
                self._lists.pop("resources/list", None)
                self._lists.pop("resources/templates/list", None)
        elif method == "notifications/message":
            self._on_server_log(params)
        elif method == "notifications/resources/updated":
            self._on_resource_updated(params)

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
        bound = seconds(timeout, self.call_timeout, method="McpServer.listen")
        return self._era.listen(tools=tools, prompts=prompts, resources=resources, uris=uris,
                                timeout=bound)

    def _lists_changed(self) -> None:
        """Every list may have changed unannounced: fetch them again."""
        with self._lock:
            self._lists.clear()
        if "tools" in self.capabilities:
            self._tools_changed()

    def _tools_changed(self) -> None:
        # the re-list is under way before on_tools_changed runs, so a list_tools() it (or
        # anyone it wakes) calls waits for the fresh list instead of getting the old one
        self._queue_relist()
        self._call_on_tools_changed()

    def _queue_relist(self) -> None:
        """Have the tools listed again in the background; list_tools() waits for it."""
        with self._lock:
            queued = self._relist_queued
            if not queued:
                self._relist_queued = True
                if self._tools_future.done():
                    self._tools_future = Future()
                future = self._tools_future
        if not queued:
            try:
                self._background.submit(self._relist, future)
            except RuntimeError:
                future.set_result(None)

    def _call_on_tools_changed(self) -> None:
        if self.on_tools_changed is not None:
            try:
                self.on_tools_changed(self)
            except Exception:  # noqa: BLE001 - a user's callback must not stop dispatch
                self.log.exception("on_tools_changed failed")

    def _relist(self, future: Future) -> None:
        with self._lock:
            self._relist_queued = False
        try:
            self._fetch_tools(self.call_timeout)
        except Exception as exc:  # noqa: BLE001 - keep the old list
            self.warnings.append(f"re-listing the tools failed: {exc}")
        with self._lock:
            if self._relist_queued:
                return  # a newer list_changed came meanwhile: its re-list settles the future
        if not future.done():
            future.set_result(None)



def _stop_forgotten_servers() -> None:
    """Kill the processes of servers a program forgot to stop."""
    for server in list(live):
        try:
            server.kill_now()
        except Exception:  # noqa: BLE001
            pass


# At exit the interpreter joins every pool thread before atexit hooks run; a pool thread still
# reading the answer of a pending call would hold the exit until the call's deadline. The
# threading hook runs before that join (hooks run newest first; concurrent.futures registered
# its join when it was imported, before this module); atexit is the fallback.
if hasattr(threading, "_register_atexit"):
    threading._register_atexit(_stop_forgotten_servers)  # type: ignore[attr-defined]
atexit.register(_stop_forgotten_servers)


def _auth_for(spec: ServerSpec, auth: Any):
    """The OAuth of an HTTP server: ``auth`` (an OAuth, bound to the server; or a factory
    called with the spec), else one made from the entry's oauth block. None for stdio, and
    for an entry that sets its own ``Authorization`` header without an ``oauth`` key: OAuth
    does not take such an entry over unless the entry asks for it (or a factory does)."""
    if spec.transport not in ("http", "sse"):
        return None
    from ..auth import OAuth
    own_header = spec.oauth is None and any(
        name.lower() == "authorization" for name in spec.headers)
    if auth is None:
        return None if own_header else OAuth.for_spec(spec)
    if isinstance(auth, OAuth):
        return None if own_header else auth.bind(spec.url, spec.name)
    if callable(auth):
        made = auth(spec)
        if made is None:
            return None
        if not isinstance(made, OAuth):
            raise TypeError(f"auth factory must return an OAuth, not {type(made).__name__}")
        return made.bind(spec.url, spec.name)
    raise TypeError(f"auth must be an OAuth or a factory fn(spec) -> OAuth, not "
                    f"{type(auth).__name__}")
