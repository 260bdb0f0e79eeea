"""Serving a ToolServer as a real MCP server, in either protocol era.

    serve_stdio(tool_server)      # blocks until stdin ends

Answers initialize (the client's revision when raider_sync knows it, else its own), ping,
tools/list (paginated), tools/call, resources/list, resources/read, prompts/list and
prompts/get, and sends notifications/tools/list_changed when the tools change after the
client said initialized. A client of the stateless revision (2026-07-28) is answered in that
era instead (see :mod:`raider_sync.serve.served`): ``server/discover``, every request checked
for its ``_meta``, results marked ``resultType: complete``, and ``subscriptions/listen``
streams that carry the tool list's changes.
"""
from __future__ import annotations

import contextlib
import os
import sys
import threading
from concurrent.futures import Future
from typing import Any, BinaryIO, Callable, Iterator

from ..client.eras.modern import CACHEABLE
from ..client.results import text_result
from ..errors import McpError, ToolTimeout, UnknownTool
from ..jsonrpc import MethodNotFound, Session
from ..protocol import CLIENT_PROTOCOL_VERSION, KNOWN_PROTOCOL_VERSIONS
from ..protocol import events as events_wire
from ..protocol.codes import INVALID_PARAMS
from ..protocol.messages import valid_id
from ..transports.stream import StreamTransport
from . import skills_served
from .client_links import (
    ROUND_METHODS,
    RequestLink,
    input_required_result,
    round_answers,
    stateless_context,
)
from .context import LOG_LEVELS, Context, InputRequired
from .served import (
    ServedEra,
    check_envelope,
    discover_result,
    listen_ack,
    listen_notification,
    listen_result,
    stateless_error,
)
from .tasks import TASK_METHODS, TASKS_EXTENSION

PAGE_SIZE = 100
SERVE_WORKERS = 16

Notify = Callable[[str, dict], None]
Ask = Callable[[str, dict, float], Future]


def progress_params(token: Any, progress: float, total: float | None = None,
                    message: str | None = None) -> dict:
    """The params of the ``notifications/progress`` a handler's report becomes."""
    params: dict[str, Any] = {"progressToken": token, "progress": progress}
    if total is not None:
        params["total"] = total
    if message:
        params["message"] = message
    return params


class ToolServerAnswers:
    """What a served ToolServer answers, whatever carries the requests (stdio, HTTP)."""

    #: whether one client's session is served: then its ``logging/setLevel``, its resource
    #: subscriptions and the contexts of its running requests (which notifications/cancelled
    #: reaches) are kept; an app that answers every client at once keeps none of them
    one_client = False

    def __init__(self, tool_server, *, page_size: int = PAGE_SIZE):
        self.tool_server = tool_server
        self.page_size = page_size
        #: the least severe level of the log messages sent in the handshake era
        self.log_level = "debug"
        #: what the client said of itself at initialize (None: unknown, nothing is refused)
        self.client_capabilities: dict | None = None
        self.client_info: dict | None = None
        self.protocol_version: str | None = None
        #: the URIs the client subscribed to (the handshake era's resources/subscribe)
        self.subscriptions: set[str] = set()
        #: the contexts of the requests whose handlers run, by request id (one client only)
        self._running: dict[Any, Context] = {}
        self._subscriptions_lock = threading.Lock()

    def met(self, params: dict) -> None:
        """What the client said of itself at ``initialize``, for its handlers' contexts."""
        capabilities, info = params.get("capabilities"), params.get("clientInfo")
        self.client_capabilities = capabilities if isinstance(capabilities, dict) else {}
        self.client_info = info if isinstance(info, dict) else None
        self.protocol_version = params.get("protocolVersion")

    def cancelled(self, request_id: Any) -> None:
        """``notifications/cancelled`` of ``request_id``: its handler's context says so."""
        with self._subscriptions_lock:
            context = self._running.get(request_id) if valid_id(request_id) else None
        if context is not None:
            context.cancel()

    def cancel_running(self) -> None:
        """Tell every running handler its request is cancelled (the client is gone)."""
        with self._subscriptions_lock:
            contexts = list(self._running.values())
        for context in contexts:
            context.cancel()

    @contextlib.contextmanager
    def _handling(self, context: Context, on_context: Callable[[Context], None] | None
                  ) -> Iterator[Context]:
        """While a handler runs with ``context``: the carrier hears of it (``on_context``),
        and where one client is served, a notifications/cancelled of its request reaches
        it."""
        if on_context is not None:
            on_context(context)
        request_id = context.request_id
        kept = self.one_client and valid_id(request_id)
        if kept:
            with self._subscriptions_lock:
                self._running[request_id] = context
        try:
            yield context
        finally:
            if kept:
                with self._subscriptions_lock:
                    if self._running.get(request_id) is context:
                        del self._running[request_id]

    def _progress_sender(self, token: Any):
        return None  # nothing to send progress on

    def _answer(self, method: str, params: dict, on_progress=None, *,
                answers: dict | None = None, notify: Notify | None = None,
                ask: Ask | None = None, request_id: Any = None,
                close_stream: Callable[[], None] | None = None,
                on_context: Callable[[Context], None] | None = None) -> Any:
        """The result of one request (raises McpError, MethodNotFound, and InputRequired
        when a handler ends a round of the stateless era). A tools/call blocks until the
        tool answers; its progress goes to ``on_progress``, by default
        :meth:`_progress_sender` of its token. A handler's context (:meth:`_context`) sends
        with ``notify`` and asks with ``ask``; ``answers`` (not None) are the client's
        answers of the stateless era."""
        server = self.tool_server
        if method == "initialize":
            return self._initialize(params)
        if method == "ping":
            return {}
        if method == "logging/setLevel":
            return self._set_log_level(params.get("level"))
        if method == "tools/list":
            return self._page(server.list_tools(), "tools", params)
        if method == "tools/call":
            token = (params.get("_meta") or {}).get("progressToken")
            if on_progress is None and token is not None:
                on_progress = self._progress_sender(token)
            if answers is not None:  # the stateless era: the call may be a task's
                tasked = server.call_as_task(params, answers=answers, notify=notify,
                                             on_progress=on_progress)
                if tasked is not None:
                    return tasked
            context = self._context(params, on_progress, answers, notify, ask, request_id,
                                    close_stream)
            try:  # bounded by the tool server's call timeout: a stuck handler frees its worker
                with self._handling(context, on_context):
                    return server.call_tool(params.get("name", ""),
                                            params.get("arguments") or {},
                                            on_progress=on_progress, context=context)
            except UnknownTool as exc:
                raise McpError(INVALID_PARAMS, str(exc)) from None
            except ToolTimeout as exc:
                return text_result(str(exc), is_error=True)
        if method in skills_served.METHODS and server.has_skills:
            return skills_served.answer(server.skills, method, params, self._page)
        if method == "resources/list" and server.has_resources:
            return self._page(server.list_resources(), "resources", params)
        if method == "resources/templates/list" and server.has_resources:
            return self._page(server.list_resource_templates(), "resourceTemplates", params)
        if method in ("resources/subscribe", "resources/unsubscribe") and server.has_resources:
            return self._subscribe(params.get("uri"), method == "resources/subscribe")
        if method == "completion/complete" and server.has_completions:
            return server.complete(params.get("ref"), params.get("argument"),
                                   params.get("context"))
        if method == "resources/read" and server.has_resources:
            return {"contents": server.read_resource(params.get("uri", ""))}
        if method == "prompts/list" and server.has_prompts:
            return self._page(server.list_prompts(), "prompts", params)
        if method == "prompts/get" and server.has_prompts:
            context = self._context(params, None, answers, notify, ask, request_id,
                                    close_stream)
            with self._handling(context, on_context):
                return server.get_prompt(params.get("name", ""), params.get("arguments") or {},
                                         context=context)
        raise MethodNotFound(method)

    def _context(self, params: dict, on_progress, answers: dict | None,
                 notify: Notify | None, ask: Ask | None, request_id: Any = None,
                 close_stream: Callable[[], None] | None = None) -> Context:
        """The context of one request's handler: of the stateless era when ``answers`` is
        given, else of the handshake era (a client reached with ``notify`` and ``ask``).
        ``close_stream`` ends the HTTP stream that carries the answer, for the client to
        resume."""
        if answers is not None:
            context = stateless_context(params, notify, answers, on_progress)
        else:
            meta = params.get("_meta")
            context = Context(
                meta=meta if isinstance(meta, dict) else None,
                client_capabilities=self.client_capabilities, client_info=self.client_info,
                protocol_version=self.protocol_version,
                link=RequestLink(notify, ask, close_stream) if notify is not None else None,
                on_progress=on_progress, log_level=self.log_level)
        context.request_id = request_id
        return context

    def _subscribe(self, uri: Any, subscribed: bool) -> dict:
        """``resources/subscribe`` and ``unsubscribe`` of the handshake era: where a session
        keeps them (:attr:`one_client`), its client gets
        ``notifications/resources/updated`` for the URI."""
        if not self.one_client:
            raise MethodNotFound("resources/subscribe")
        if not isinstance(uri, str) or not uri:
            raise McpError(INVALID_PARAMS, "uri must be a non-empty string")
        with self._subscriptions_lock:
            (self.subscriptions.add if subscribed else self.subscriptions.discard)(uri)
        return {}

    def _set_log_level(self, level: Any) -> dict:
        """``logging/setLevel``: checked, and kept where there is a session to keep it."""
        if level not in LOG_LEVELS:
            raise McpError(INVALID_PARAMS, f"level must be one of {', '.join(LOG_LEVELS)}")
        if self.one_client:
            self.log_level = level
        return {}

    def _answer_modern(self, method: str, params: dict, on_progress=None,
                       notify: Notify | None = None,
                       on_context: Callable[[Context], None] | None = None,
                       request_id: Any = None) -> Any:
        """The answer to a request of the stateless revision (its _meta checked first); a
        handler's log messages and progress go out with ``notify``."""
        check_envelope(params)
        if method == "server/discover":
            server = self.tool_server
            return discover_result(self._capabilities(modern=True), server.server_info,
                                   server.instructions)
        if method in ("ping", "initialize", "logging/setLevel", "resources/subscribe",
                      "resources/unsubscribe", "subscriptions/listen"):
            raise MethodNotFound(method)  # not part of the stateless revision (or not here)
        if method in TASK_METHODS:
            return self.tool_server.served_tasks.answer(method, params)
        if method in events_wire.METHODS and self.tool_server.has_events:
            if method == events_wire.STREAM:  # a stream its carrier holds open, not an answer
                raise MethodNotFound(method)
            return {"resultType": "complete",
                    **self.tool_server.served_events.answer(method, params)}
        answers = None
        try:
            if method in ROUND_METHODS:  # the methods whose handlers may ask the client
                name = str(params.get("uri") if method == "resources/read"
                           else params.get("name"))
                answers = round_answers(self.tool_server.state_secret, method, name, params)
                try:
                    result = self._answer(method, params, on_progress, answers=answers,
                                          notify=notify, on_context=on_context,
                                          request_id=request_id)
                except InputRequired as exc:
                    return input_required_result(self.tool_server.state_secret, method, name,
                                                 exc)
            else:
                result = self._answer(method, params, on_progress)
        except McpError as exc:
            raise stateless_error(exc, method, params) from None
        if not isinstance(result, dict):
            return result
        # fresh for no time: the lists may change, and are announced
        if method in CACHEABLE + skills_served.METHODS:
            result = {"ttlMs": 0, "cacheScope": "public", **result}
        return {"resultType": "complete", **result}

    def _capabilities(self, modern: bool = False) -> dict:
        """What the server offers; in the stateless era resources can be listened to
        (:meth:`ToolServer.resource_updated`), in the handshake era not subscribed to."""
        server = self.tool_server
        capabilities: dict[str, Any] = {"tools": {"listChanged": True}}
        if not modern:
            capabilities["logging"] = {}
        if server.has_resources:
            capabilities["resources"] = {"listChanged": False,
                                         "subscribe": modern or self.one_client}
        if server.has_prompts:
            capabilities["prompts"] = {"listChanged": False}
        if server.has_completions:
            capabilities["completions"] = {}
        extensions: dict[str, Any] = {}
        if server.has_skills:
            extensions.update(skills_served.capability())
        if modern and server.offers_tasks:
            extensions[TASKS_EXTENSION] = {}
        if modern and server.has_events:
            extensions[events_wire.EXTENSION] = {"listChanged": False}
        if extensions:
            capabilities["extensions"] = extensions
        return capabilities

    def _initialize(self, params: dict) -> dict:
        server = self.tool_server
        asked = params.get("protocolVersion")
        capabilities = self._capabilities()
        result = {"protocolVersion": asked if asked in KNOWN_PROTOCOL_VERSIONS else CLIENT_PROTOCOL_VERSION,
                  "capabilities": capabilities, "serverInfo": dict(server.server_info)}
        if server.instructions:
            result["instructions"] = server.instructions
        return result

    def _page(self, items: list, field: str, params: dict) -> dict:
        try:
            start = int(params.get("cursor") or 0)
        except ValueError:
            raise McpError(INVALID_PARAMS, "invalid cursor") from None
        page: dict[str, Any] = {field: items[start:start + self.page_size]}
        if start + self.page_size < len(items):
            page["nextCursor"] = str(start + self.page_size)
        return page



class ServedSession(ToolServerAnswers):
    """One client's conversation with a ToolServer over a transport."""

    one_client = True

    def __init__(self, tool_server, transport, *, page_size: int = PAGE_SIZE):
        super().__init__(tool_server, page_size=page_size)
        self._initialized = threading.Event()
        self._ended = threading.Event()
        self.session = Session(transport, name=f"{tool_server.key}-served",
                               handle_request=self._request,
                               handle_notification=self._notification,
                               on_close=lambda error: self._ended.set(),
                               request_workers=SERVE_WORKERS)
        self.transport = transport
        self.era = ServedEra()
        self._listens: dict[Any, tuple[threading.Event, dict]] = {}
        self._listens_lock = threading.Lock()

    def run(self) -> None:
        """Serve until the client goes away. Blocks."""
        self.tool_server.add_listener(self._tools_changed)
        self.tool_server.add_resource_listener(self._resource_updated)
        self.tool_server.served_tasks.add_listener(self._task_changed)
        try:
            self.session.open()
            self._ended.wait()
        finally:
            self.tool_server.remove_listener(self._tools_changed)
            self.tool_server.remove_resource_listener(self._resource_updated)
            self.tool_server.served_tasks.remove_listener(self._task_changed)
            with self._listens_lock:
                listens, self._listens = list(self._listens.values()), {}
            for ended, _ in listens:  # their handler threads answer and end
                ended.set()
            # the requests read before the input ended are still answered
            self.session.close(finish_received=True)
            self.transport.close()

    # -- requests ------------------------------------------------------------------------

    def _request(self, method: str, params: dict) -> Any:
        request_id = self.session.current_request_id()
        if self.era.claim(method, params) == "legacy":
            if method == "initialize":
                self.met(params)
            return self._answer(method, params, notify=self.session.notify, ask=self._ask,
                                request_id=request_id)
        if method == "subscriptions/listen":
            check_envelope(params)
            return self._listen(params)
        if method == events_wire.STREAM and self.tool_server.has_events:
            check_envelope(params)
            return self._events_stream(params)
        return self._answer_modern(method, params, notify=self.session.notify,
                                   request_id=request_id)

    def _ask(self, method: str, params: dict, timeout: float) -> Future:
        """A question to the client, from a handler's thread: the future of its answer
        (cancelling it tells the client)."""
        return self.session.request_f(method, params, timeout=timeout)

    def _listen(self, params: dict) -> dict:
        """One subscriptions/listen stream: acknowledged, then fed by _tools_changed until
        the client cancels it or goes away. Blocks this handler thread meanwhile."""
        request_id = self.session.current_request_id()
        ack = listen_ack(params, request_id, {"toolsListChanged": True,
                                              "resourceSubscriptions": True,
                                              "taskIds": self.tool_server.offers_tasks})
        ended = threading.Event()
        with self._listens_lock:
            self._listens[request_id] = (ended, ack["notifications"])
        self.session.notify("notifications/subscriptions/acknowledged", ack)
        ended.wait()
        return listen_result(request_id)

    def _events_stream(self, params: dict) -> dict:
        """One events/stream: its notifications sent until the client cancels it (or goes
        away). Blocks this handler thread meanwhile; kept among the listens, which is where
        notifications/cancelled and the session's end reach it."""
        request_id = self.session.current_request_id()
        feed = self.tool_server.served_events.feed(params, request_id)  # McpError: refused
        ended = threading.Event()
        with self._listens_lock:
            self._listens[request_id] = (ended, {})  # an empty filter: no list changes
        try:
            for message in feed.messages(ended.is_set):
                self.session.notify(message["method"], message["params"])
        finally:
            with self._listens_lock:
                self._listens.pop(request_id, None)
        return listen_result(request_id)

    def _progress_sender(self, token: Any):
        """An on_progress that sends notifications/progress for the request's token."""
        def send(progress: float, total: float | None = None, message: str | None = None) -> None:
            self.session.notify("notifications/progress",
                                progress_params(token, progress, total, message))
        return send

    # -- notifications -------------------------------------------------------------------

    def _notification(self, method: str, params: dict) -> None:
        if method == "notifications/initialized":
            self._initialized.set()
        elif method == "notifications/cancelled":
            with self._listens_lock:
                listen = self._listens.pop(params.get("requestId"), None)
            if listen is not None:
                listen[0].set()
            self.cancelled(params.get("requestId"))

    def _tools_changed(self, _server) -> None:
        if self._initialized.is_set():
            self.session.notify("notifications/tools/list_changed")
        self._to_listens(tools_changed=True)

    def _resource_updated(self, uri: str) -> None:
        with self._subscriptions_lock:
            subscribed = uri in self.subscriptions
        if subscribed:  # the handshake era's subscription
            self.session.notify("notifications/resources/updated", {"uri": uri})
        self._to_listens(uri=uri)

    def _task_changed(self, task: dict) -> None:
        self._to_listens(task=task)

    def _to_listens(self, **change: Any) -> None:
        with self._listens_lock:
            listens = [(rid, honored) for rid, (_, honored) in self._listens.items()]
        for request_id, honored in listens:
            message = listen_notification(honored, request_id, **change)
            if message is not None:
                self.session.notify(message["method"], message["params"])


def serve_stdio(tool_server, *, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None,
                page_size: int = PAGE_SIZE) -> None:
    """Serve ``tool_server`` over stdin/stdout until stdin ends. Blocks.

    Without explicit streams, the protocol is written to a private copy of file descriptor 1
    and fd 1 itself is pointed at stderr while serving, so stray prints (of handlers or child
    processes) land on stderr instead of corrupting the stream. ``page_size`` is how many
    tools (resources, prompts) one page of a list answer holds.
    """
    restore_fd = None
    if stdout is None:
        sys.stdout.flush()
        protocol_fd = os.dup(1)
        restore_fd = os.dup(1)
        os.dup2(2, 1)
        stdout = os.fdopen(protocol_fd, "wb")
    if stdin is None:
        stdin = sys.stdin.buffer
    try:
        ServedSession(tool_server, StreamTransport(stdin, stdout, name=tool_server.key),
                      page_size=page_size).run()
    finally:
        if restore_fd is not None:
            stdout.close()
            os.dup2(restore_fd, 1)
            os.close(restore_fd)
