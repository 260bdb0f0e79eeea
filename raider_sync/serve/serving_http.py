"""A ToolServer served over Streamable HTTP, as a WSGI app, in both protocol eras.

    app = wsgi_app(tool_server)                   # any WSGI server; waitress for example:
    serve_http(tool_server, "127.0.0.1", 8080)    # blocks (waitress, the gateway extra)
    app.close()                                   # end the open streams gracefully

The app answers at one path (``path``, default ``/mcp``, below where the WSGI server mounts
it; ``path=None`` answers at every path) and 404 elsewhere. A POST must be
``Content-Type: application/json`` (else 415) and hold one valid JSON-RPC 2.0 message: a
request or notification that is not (``params`` that are not an object, a missing or
ill-typed ``method`` or ``id``) is 400 with -32600 Invalid Request, by the same check a
stdio session makes (:func:`raider_sync.jsonrpc.request_problem`); a batch is refused alike.

Against DNS rebinding, any request whose ``Host`` or ``Origin`` is not allowed is refused
with 403 and a JSON-RPC error (-32600) before anything else (:mod:`.rebinding`). The app
cannot know the address it is served on, so by default it allows the loopback names
(``localhost``, ``127.0.0.1``, ``[::1]``, any port) and no other: ``allowed_hosts`` and
``allowed_origins`` name more (``serve_http`` on an address that is not a loopback one allows
every host, unless told otherwise).

Stateless by default: no session is kept, so any number of workers can stand behind a
load balancer (``sessions=True`` gives the handshake era's clients sessions instead, kept in
the process: :mod:`.http_sessions`). Every POST is answered on its own, with one JSON answer or, where the
protocol needs one, an event stream (:mod:`.serving_streams`):

- ``subscriptions/listen`` (the stateless era) is answered with a stream that stays open: the
  acknowledgement, then the tool list's changes and the updates of the resources asked for
  (:meth:`ToolServer.resource_updated`), until the client goes or the app is closed (the
  stream then gets its answer). It needs ``Accept: text/event-stream`` (else 406).
- a ``tools/call`` with a ``progressToken`` from a client that accepts event streams is
  answered with a stream of its progress notifications, then its result (both eras).
- GET with ``Accept: text/event-stream`` (the handshake era) opens a stream of the tool
  list's changes; in the stateless era (``MCP-Protocol-Version: 2026-07-28``) GET is 405.

Each open stream holds one thread of the WSGI server. Listen and GET streams are long-lived,
so at most ``max_streams`` are open at once; one more is refused with 503 and
``Retry-After``. Give the server more threads than that (``serve_http`` does: twice as many),
or the calls queue behind the streams.

- A request of the stateless revision (``MCP-Protocol-Version: 2026-07-28``, or the stateless
  ``_meta``) is checked: ``MCP-Protocol-Version`` must name the revision its ``_meta`` names
  (when both are there), ``Mcp-Method`` the body's method, ``Mcp-Name`` (for the named
  methods) the body's name or URI, and a ``tools/call``'s ``Mcp-Param-*`` headers the
  arguments the tool's ``x-mcp-header`` annotations name
  (:func:`~raider_sync.protocol.http_headers.param_headers_problem`), else HTTP 400 with
  -32020. Its ``_meta`` must carry the revision and client capabilities (400, -32602), a
  revision served (400, -32022). An unknown method is a 404 with -32601; a resource not
  there is 400 with -32602 and ``data.uri`` (the handshake era's answer: -32002).
- Anything else is the handshake era: without sessions, ``initialize`` is answered (with no
  ``Mcp-Session-Id``), and every later request on its own; with sessions, ``initialize``
  opens one and every later request must name it (400 without, 404 for an unknown one),
  GET opens or (``Last-Event-ID``) resumes one of its streams, and DELETE ends it.
- A request whose handler takes a context is answered as a stream when the client accepts
  one: its log messages and (handshake era) questions to the client go on it.
- Notifications and answers to the handlers' questions are accepted with 202. Without
  sessions, DELETE is 405: there is no session to end.
"""
from __future__ import annotations

import functools
import json
from typing import Any, Callable, Iterable

from ..client.eras.modern import META_LOG_LEVEL, MODERN_VERSIONS
from ..protocol import events as events_wire
from ..protocol.codes import INVALID_REQUEST, PARSE_ERROR
from ..protocol.messages import is_response, request_problem, valid_id
from ..protocol.sse_events import KEEP_ALIVE
from ..threads.futures import run_in_thread
from .context import Context
from .events.feeds import sse_body
from .header_checks import check_headers
from .http_replies import (  # noqa: F401 - RETRY_AFTER importable from here as before
    RETRY_AFTER,
    SSE_HEADERS,
    StartResponse,
    accepts_streams,
    busy,
    error_object,
    error_reply,
    failure,
    reply,
)
from .http_sessions import HttpSession, Sessions
from .questions import Questions
from .rebinding import ANY, HostCheck, is_loopback
from .resumable import parse_event_id
from .served import check_envelope, has_envelope, listen_ack
from .server_card import SUFFIX as CARD_SUFFIX
from .server_card import answer_card
from .serving import ToolServerAnswers, progress_params
from .serving_streams import KEEPALIVE, MAX_STREAMS, StreamHub, sse_message

MAX_BODY = 4 * 1024 * 1024
#: where the app answers unless told otherwise (the path MCP clients are usually given)
DEFAULT_PATH = "/mcp"
#: seconds serve_http waits, on the way out, for the open streams to end
CLOSE_GRACE = 2.0


def wsgi_app(tool_server, *, path: str | None = DEFAULT_PATH, page_size: int = 100,
             max_streams: int = MAX_STREAMS, keepalive: float = KEEPALIVE,
             allowed_hosts: Iterable[str] | None = None,
             allowed_origins: Iterable[str] | None = None,
             sessions: bool = False,
             server_card: bool | dict = False) -> "ToolServerApp":
    """A WSGI app that serves ``tool_server`` at ``path`` (default ``/mcp``; None: at every
    path, for a dispatcher of your own); see :class:`ToolServerApp`. By default it answers
    only requests whose ``Host`` is a loopback name (``allowed_hosts`` adds others). With
    ``sessions``, a client of the handshake era gets a session (``Mcp-Session-Id``, see
    :mod:`.http_sessions`); without, every request is answered on its own. With
    ``server_card`` (True, or a dict of fields laid over the card made), ``GET
    <path>/server-card`` answers the server's card (:mod:`.server_card`). Raises
    ValueError for a ``path`` that does not begin with ``/``, a negative ``max_streams``, a
    ``keepalive`` that is not a positive number of seconds, or a malformed entry of
    ``allowed_hosts`` or ``allowed_origins``."""
    return ToolServerApp(tool_server, path=path, page_size=page_size, max_streams=max_streams,
                         keepalive=keepalive, allowed_hosts=allowed_hosts,
                         allowed_origins=allowed_origins, sessions=sessions,
                         server_card=server_card)


class ToolServerApp:
    """The WSGI app of :func:`wsgi_app`. Thread-safe. A JSON answer blocks its worker until
    the tool answers (the tool server's call timeout bounds it); a stream holds its worker
    until it ends. ``path`` is where it answers, below its mount point (``PATH_INFO``; None:
    everywhere), 404 elsewhere. ``max_streams`` bounds the long-lived streams (listen, GET);
    ``keepalive`` is the seconds of silence after which a stream gets a comment.
    :meth:`close` ends the open streams (call it before stopping the WSGI server).

    Against DNS rebinding, a request whose ``Host`` is not an allowed host, or whose
    ``Origin`` is not an allowed origin, is refused with 403 and a JSON-RPC error
    (:mod:`.rebinding`). The app cannot know the address its server listens on, so by
    default it allows the loopback names only (``localhost``, ``127.0.0.1``, ``[::1]``, any
    port): an app reached under another name (a public host behind a proxy, a framework's
    mount) names it in ``allowed_hosts`` (``["mcp.example.com"]``; ``["*"]``: every host),
    and the browser origins that may call it in ``allowed_origins`` (default: those whose
    host is an allowed host)."""

    def __init__(self, tool_server, *, path: str | None = DEFAULT_PATH, page_size: int = 100,
                 max_streams: int = MAX_STREAMS, keepalive: float = KEEPALIVE,
                 allowed_hosts: Iterable[str] | None = None,
                 allowed_origins: Iterable[str] | None = None, sessions: bool = False,
                 server_card: bool | dict = False):
        if path is not None and (not isinstance(path, str) or not path.startswith("/")):
            raise ValueError(f"path must begin with '/', not {path!r}")
        if not isinstance(server_card, (bool, dict)):
            raise ValueError(f"server_card must be True, False or a dict of card fields, not "
                             f"{type(server_card).__name__}")
        self.path = path
        #: the fields laid over the server card made per request, or None: no card served
        self.card: dict | None = (dict(server_card) if isinstance(server_card, dict)
                                  else {} if server_card else None)
        self.hosts = HostCheck(allowed_hosts, allowed_origins)
        self.tool_server = tool_server
        self.answers = ToolServerAnswers(tool_server, page_size=page_size)
        self.questions = Questions(f"{tool_server.key}-http")
        self.streams = StreamHub(tool_server, max_streams=max_streams, keepalive=keepalive)
        #: the handshake era's sessions (``sessions=True``), else None: every request alone
        self.sessions = (Sessions(tool_server, page_size=page_size, keepalive=keepalive)
                         if sessions else None)

    def close(self, timeout: float = 0.0) -> bool:
        """End every open stream gracefully (a listen stream with its answer) and every
        session, and refuse new ones with 503; then wait at most ``timeout`` s for the
        streams to be sent to the end. True when none is left open. Safe to call twice."""
        self.streams.close()
        if self.sessions is not None:
            self.sessions.close()
        return self.streams.wait_idle(timeout)

    def _session(self, environ: dict, start_response: StartResponse, request_id: Any = None
                 ) -> tuple[HttpSession | None, Iterable[bytes] | None]:
        """The session a handshake-era request names, or the refusal to send: 400 without
        ``Mcp-Session-Id``, 404 for one that is unknown or ended."""
        assert self.sessions is not None
        session_id = environ.get("HTTP_MCP_SESSION_ID")
        if not session_id:
            return None, error_reply(start_response, request_id, INVALID_REQUEST,
                                     "Bad Request: Mcp-Session-Id header is required",
                                     status="400 Bad Request")
        session = self.sessions.get(session_id)
        if session is None:
            return None, error_reply(start_response, request_id, INVALID_REQUEST,
                                     "Session not found", status="404 Not Found")
        return session, None

    def __call__(self, environ: dict, start_response: StartResponse) -> Iterable[bytes]:
        where = environ.get("PATH_INFO") or "/"
        card = self.card is not None and where == (self.path or "").rstrip("/") + CARD_SUFFIX
        if not card and self.path is not None and where != self.path:
            return reply(start_response, "404 Not Found", None)
        refused = self.hosts.problem(environ)
        if refused is not None:
            return error_reply(start_response, None, INVALID_REQUEST, refused, status="403 Forbidden")
        if card:
            return answer_card(self.tool_server, environ, start_response, self.path or "",
                               self.card)
        verb = environ.get("REQUEST_METHOD")
        if verb == "GET":
            return self._get(environ, start_response)
        if verb == "DELETE" and self.sessions is not None:
            if not self.sessions.end(environ.get("HTTP_MCP_SESSION_ID")):
                return error_reply(start_response, None, INVALID_REQUEST, "Session not found",
                                   status="404 Not Found")
            return reply(start_response, "204 No Content", None)
        if verb != "POST":
            allowed = "GET, POST, DELETE" if self.sessions is not None else "GET, POST"
            return reply(start_response, "405 Method Not Allowed", None, [("Allow", allowed)])
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > MAX_BODY:
            return reply(start_response, "413 Payload Too Large", None)
        kind = environ.get("CONTENT_TYPE", "").split(";", 1)[0].strip().lower()
        if kind != "application/json":
            return error_reply(start_response, None, INVALID_REQUEST,
                               f"Content-Type must be application/json, not {kind or 'missing'}",
                               status="415 Unsupported Media Type")
        try:
            message = json.loads(environ["wsgi.input"].read(length) or b"null")
        except ValueError:
            return error_reply(start_response, None, PARSE_ERROR, "the body is not JSON")
        if not isinstance(message, dict):
            return error_reply(start_response, None, INVALID_REQUEST,
                               "Invalid Request: the body must be one JSON-RPC message object")
        if is_response(message):  # a client's answer to a handler's question, or stray
            self.questions.answered(message)
            return reply(start_response, "202 Accepted", None)
        problem = request_problem(message)
        if problem is not None:
            request_id = message.get("id") if valid_id(message.get("id")) else None
            return error_reply(start_response, request_id, INVALID_REQUEST,
                               f"Invalid Request: {problem}")
        method = message["method"]
        params = message.get("params", {})
        modern = (environ.get("HTTP_MCP_PROTOCOL_VERSION") in MODERN_VERSIONS
                  or (method != "initialize" and has_envelope(params)))
        answers: ToolServerAnswers = self.answers
        opened: list = []
        if self.sessions is not None and not modern:
            session: HttpSession | None
            if method == "initialize" and "id" in message:
                session = self.sessions.open()
                session.met(params)
                opened = [("Mcp-Session-Id", session.session_id)]
            else:
                session, refusal = self._session(environ, start_response, message.get("id"))
                if refusal is not None:
                    return refusal
            assert session is not None
            answers = session
            if method == "notifications/cancelled" and isinstance(params, dict):
                session.cancelled(params.get("requestId"))
        if "id" not in message:
            return reply(start_response, "202 Accepted", None)
        streams = accepts_streams(environ)
        try:
            if modern:
                check_headers(environ, method, params, self._tool_schema)
                if method == "subscriptions/listen":
                    return self._listen(environ, start_response, message["id"], params,
                                        streams)
                if method == events_wire.STREAM and self.tool_server.has_events:
                    return self._events_stream(environ, start_response, message["id"],
                                               params, streams)
            token = (params.get("_meta") or {}).get("progressToken") \
                if isinstance(params.get("_meta"), dict) else None
            if streams and (method == "tools/call" and token is not None
                            or self._may_talk(method, params, modern)):
                if modern:
                    check_envelope(params)  # refused with its HTTP status, before the stream
                    if method == "tools/call":  # so is a task tool called without the extension
                        self.tool_server.is_task_call(params)
                return self._streamed_call(environ, start_response, message["id"], method,
                                           params, token, modern, answers)
            result = (answers._answer_modern(method, params) if modern else
                      answers._answer(method, params, request_id=message["id"]))
        except Exception as exc:  # noqa: BLE001 - mapped to the client's answer
            return failure(start_response, message["id"], method, exc, modern)
        return reply(start_response, "200 OK",
                     {"jsonrpc": "2.0", "id": message["id"], "result": result}, opened)

    def _tool_schema(self, name: Any) -> Any:
        """The input schema of the tool ``name`` (None: no such tool)."""
        for tool in self.tool_server.list_tools():
            if tool.get("name") == name:
                return tool.get("inputSchema")
        return None

    # -- streams -------------------------------------------------------------------------

    def _get(self, environ: dict, start_response: StartResponse) -> Iterable[bytes]:
        """The handshake era's GET stream (the tool list's changes; with sessions, also the
        updates of the session's subscribed resources, and ``Last-Event-ID`` resumes a
        stream); 405 in the stateless era, 406 without ``Accept: text/event-stream``."""
        if environ.get("HTTP_MCP_PROTOCOL_VERSION") in MODERN_VERSIONS:
            return reply(start_response, "405 Method Not Allowed", None, [("Allow", "POST")])
        if not accepts_streams(environ):
            return error_reply(start_response, None, INVALID_REQUEST, "GET opens an event stream: "
                               "Accept must list text/event-stream", status="406 Not Acceptable")
        if self.sessions is not None:
            return self._session_get(environ, start_response)
        stream = self.streams.open()
        if stream is None:
            return busy(start_response, None)
        start_response("200 OK", list(SSE_HEADERS))
        return stream.body(disconnected=environ.get("waitress.client_disconnected"),
                           opening=KEEP_ALIVE)

    def _session_get(self, environ: dict, start_response: StartResponse) -> Iterable[bytes]:
        """A session's GET: the rest of the stream ``Last-Event-ID`` names, or a new stream
        of the session's notifications (404 for an event of a stream not kept)."""
        session, refusal = self._session(environ, start_response)
        if refusal is not None:
            return refusal
        assert session is not None
        last = parse_event_id(environ.get("HTTP_LAST_EVENT_ID"))
        gone = environ.get("waitress.client_disconnected")
        if last is not None:
            resumed = session.stream(last[0])
            if resumed is None:
                return error_reply(start_response, None, INVALID_REQUEST,
                                   "no stream to resume by that Last-Event-ID",
                                   status="404 Not Found")
            body = self.streams.hold(lambda: resumed.body(after=last[1], priming=False,
                                                          disconnected=gone))
        else:
            body = self.streams.hold(lambda: session.new_stream("g").body(disconnected=gone))
        if body is None:  # a session's streams count against max_streams too
            return busy(start_response, None)
        start_response("200 OK", list(SSE_HEADERS))
        return body

    def _listen(self, environ: dict, start_response: StartResponse, request_id: Any,
                params: dict, streams: bool) -> Iterable[bytes]:
        check_envelope(params)
        if not streams:
            return error_reply(start_response, request_id, INVALID_REQUEST, "subscriptions/listen is "
                               "answered with an event stream: Accept must list text/event-stream",
                               status="406 Not Acceptable")
        ack = listen_ack(params, request_id, {
            "toolsListChanged": True, "resourceSubscriptions": self.tool_server.has_resources,
            "taskIds": self.tool_server.offers_tasks})
        stream = self.streams.open(request_id, ack["notifications"])
        if stream is None:
            return busy(start_response, request_id)
        start_response("200 OK", list(SSE_HEADERS))
        first = {"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                 "params": ack}
        return stream.body([first], disconnected=environ.get("waitress.client_disconnected"))

    def _events_stream(self, environ: dict, start_response: StartResponse, request_id: Any,
                       params: dict, streams: bool) -> Iterable[bytes]:
        """An ``events/stream`` (the events extension): a refused subscription is answered
        with its error; else a long-lived stream (counted against ``max_streams``) of the
        subscription's notifications, until the client goes or the app closes."""
        check_envelope(params)
        if not streams:
            return error_reply(start_response, request_id, INVALID_REQUEST, "events/stream is "
                               "answered with an event stream: Accept must list text/event-stream",
                               status="406 Not Acceptable")
        feed = self.tool_server.served_events.feed(params, request_id)
        body = self.streams.hold(lambda: sse_body(
            feed, sse_message, disconnected=environ.get("waitress.client_disconnected"),
            closed=lambda: self.streams.closed))
        if body is None:
            return busy(start_response, request_id)
        start_response("200 OK", list(SSE_HEADERS))
        return body

    def _may_talk(self, method: str, params: dict, modern: bool) -> bool:
        """Whether the handler of a request takes a context, and so may send log messages
        or (in the handshake era) ask the client: its answer is then a stream. In the
        stateless era only a request that asked for log messages is streamed (questions
        end the round instead), so that an error keeps its HTTP status."""
        if modern and not (isinstance(params.get("_meta"), dict)
                           and params["_meta"].get(META_LOG_LEVEL)):
            return False
        return self.tool_server.takes_context(method, params.get("name"))

    def _streamed_call(self, environ: dict, start_response: StartResponse, request_id: Any,
                       method: str, params: dict, token: Any, modern: bool,
                       answers: ToolServerAnswers) -> Iterable[bytes]:
        """A request answered as a stream: its progress, log messages and (in the handshake
        era) questions to the client, then its answer. The handler runs on a thread of its
        own (it ends with the call, bounded by the call timeout) while this worker sends
        what it reports."""
        session = answers if isinstance(answers, HttpSession) else None
        stream: Any = session.new_stream() if session is not None else self.streams.call_stream()
        contexts: list[Context] = []
        if session is None:  # no session to resume in: a client that goes cancels the call
            stream.on_abandon = functools.partial(_cancel_all, contexts)

        def notify(name: str, notification: dict) -> None:
            stream.put({"jsonrpc": "2.0", "method": name, "params": notification})

        def progress(value: float, total: float | None = None, text: str | None = None) -> None:
            notify("notifications/progress", progress_params(token, value, total, text))

        on_progress = progress if token is not None else None
        if modern:
            def answer() -> Any:
                return answers._answer_modern(method, params, on_progress, notify=notify,
                                              on_context=contexts.append)
        else:
            def answer() -> Any:
                return answers._answer(method, params, on_progress, notify=notify,
                                       ask=self.questions.asker(stream.put),
                                       request_id=request_id,
                                       close_stream=getattr(stream, "cut", None),
                                       on_context=contexts.append)
        # the body before the handler starts: a stream the handler closes at once is closed
        body = stream.body(disconnected=environ.get("waitress.client_disconnected"))
        future = run_in_thread(answer, f"raider-{self.tool_server.key}-http-call")

        def done(settled) -> None:
            error = settled.exception()
            if error is None:
                stream.end({"jsonrpc": "2.0", "id": request_id, "result": settled.result()})
            else:
                stream.end({"jsonrpc": "2.0", "id": request_id,
                            "error": error_object(method, error)})
        future.add_done_callback(done)
        start_response("200 OK", list(SSE_HEADERS))
        return body


def _cancel_all(contexts: list[Context]) -> None:
    for context in contexts:
        context.cancel()



def serve_http(tool_server, host: str = "127.0.0.1", port: int = 8080, *,
               max_streams: int = MAX_STREAMS, threads: int | None = None,
               on_serving: Callable[[str], Any] | None = None, **app_options: Any) -> None:
    """Serve ``tool_server`` over Streamable HTTP with waitress until interrupted
    (KeyboardInterrupt, which it returns after). Blocks.

    Port 0 picks a free port; ``on_serving(url)`` is told the app's URL (``path`` included)
    once the socket listens. waitress gets ``threads`` threads (default twice
    ``max_streams``, at least 8), and the settings the gateway serves with (a client that
    goes is noticed while its stream is open). On the way out the app is closed, and the
    open streams are given :data:`CLOSE_GRACE` seconds to end gracefully. ``app_options``
    go to :func:`wsgi_app`. Without ``allowed_hosts``, a server on a loopback address
    answers the loopback names only (against DNS rebinding), and one on any other address
    every host, as it is reached at names it cannot know. Raises ImportError without
    waitress (the gateway extra), OSError for a busy address."""
    from .wsgi_server import Serving

    if app_options.get("allowed_hosts") is None and not is_loopback(host):
        app_options["allowed_hosts"] = [ANY]
    app = wsgi_app(tool_server, max_streams=max_streams, **app_options)
    serving = Serving(app, host, port, threads=threads or max(8, 2 * max_streams))
    try:
        serving.start()  # the loop in a thread, so that it still sends while the streams end
        if on_serving is not None:
            on_serving(serving.url + (app.path or ""))
        while serving._thread is not None and serving._thread.is_alive():
            serving._thread.join(0.5)  # wakes for Ctrl-C
    except KeyboardInterrupt:
        pass
    finally:
        app.close(CLOSE_GRACE)  # the streams' last answers go out before the sockets close
        serving.stop()
