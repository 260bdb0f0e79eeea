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

Stateless by construction: no session is kept, so any number of workers can stand behind a
load balancer. Every POST is answered on its own, with one JSON answer or, where the
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
  ``_meta``) is checked: ``Mcp-Method`` must equal the body's method and, for the named methods,
  ``Mcp-Name`` the body's name or URI, else HTTP 400 with -32020. Its ``_meta`` must carry the
  revision and client capabilities (400, -32602). An unknown method is a 404 with -32601.
- Anything else is the handshake era without a session: ``initialize`` is answered (with no
  ``Mcp-Session-Id``), and every later request on its own.
- Notifications (and answers, which a ToolServer never asked for) are accepted with 202.
  DELETE is 405: there is no session to end.
"""
from __future__ import annotations

import json
import logging
from typing import Any, Callable, Iterable

from ..client.eras.modern import MODERN_VERSIONS
from ..errors import McpError
from ..jsonrpc import MethodNotFound
from ..protocol.codes import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_CAPABILITY,
    PARSE_ERROR,
    UNSUPPORTED_VERSION,
)
from ..protocol.http_headers import headers_problem
from ..protocol.messages import is_response, request_problem, valid_id
from ..protocol.sse_events import KEEP_ALIVE
from ..threads.futures import run_in_thread
from .context import takes_context
from .questions import Questions
from .served import check_envelope, has_envelope, listen_ack
from .serving import ToolServerAnswers, progress_params
from .serving_streams import KEEPALIVE, MAX_STREAMS, StreamHub

log = logging.getLogger("raider_sync.serving_http")

MAX_BODY = 4 * 1024 * 1024
#: where the app answers unless told otherwise (the path MCP clients are usually given)
DEFAULT_PATH = "/mcp"
#: seconds a client refused for too many open streams is asked to wait
RETRY_AFTER = 5
#: seconds serve_http waits, on the way out, for the open streams to end
CLOSE_GRACE = 2.0
_STATUS = {HEADER_MISMATCH: "400 Bad Request", MISSING_CAPABILITY: "400 Bad Request",
           UNSUPPORTED_VERSION: "400 Bad Request", INVALID_PARAMS: "400 Bad Request",
           INVALID_REQUEST: "400 Bad Request", PARSE_ERROR: "400 Bad Request",
           METHOD_NOT_FOUND: "404 Not Found"}
_SSE_HEADERS = [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"),
                ("X-Accel-Buffering", "no")]  # a fronting nginx must not buffer a stream

StartResponse = Callable[[str, list], Any]


def wsgi_app(tool_server, *, path: str | None = DEFAULT_PATH, page_size: int = 100,
             max_streams: int = MAX_STREAMS, keepalive: float = KEEPALIVE) -> "ToolServerApp":
    """A WSGI app that serves ``tool_server`` at ``path`` (default ``/mcp``; None: at every
    path, for a dispatcher of your own); see :class:`ToolServerApp`. Raises ValueError for a
    ``path`` that does not begin with ``/``, a negative ``max_streams`` or a ``keepalive``
    that is not a positive number of seconds."""
    return ToolServerApp(tool_server, path=path, page_size=page_size, max_streams=max_streams,
                         keepalive=keepalive)


class ToolServerApp:
    """The WSGI app of :func:`wsgi_app`. Thread-safe. A JSON answer blocks its worker until
    the tool answers (the tool server's call timeout bounds it); a stream holds its worker
    until it ends. ``path`` is where it answers, below its mount point (``PATH_INFO``; None:
    everywhere), 404 elsewhere. ``max_streams`` bounds the long-lived streams (listen, GET);
    ``keepalive`` is the seconds of silence after which a stream gets a comment.
    :meth:`close` ends the open streams (call it before stopping the WSGI server)."""

    def __init__(self, tool_server, *, path: str | None = DEFAULT_PATH, page_size: int = 100,
                 max_streams: int = MAX_STREAMS, keepalive: float = KEEPALIVE):
        if path is not None and (not isinstance(path, str) or not path.startswith("/")):
            raise ValueError(f"path must begin with '/', not {path!r}")
        self.path = path
        self.tool_server = tool_server
        self.answers = ToolServerAnswers(tool_server, page_size=page_size)
        self.questions = Questions(f"{tool_server.key}-http")
        self.streams = StreamHub(tool_server, max_streams=max_streams, keepalive=keepalive)

    def close(self, timeout: float = 0.0) -> bool:
        """End every open stream gracefully (a listen stream with its answer) and refuse new
        ones with 503; then wait at most ``timeout`` s for the streams to be sent to the end.
        True when none is left open. Safe to call twice."""
        self.streams.close()
        return self.streams.wait_idle(timeout)

    def __call__(self, environ: dict, start_response: StartResponse) -> Iterable[bytes]:
        if self.path is not None and (environ.get("PATH_INFO") or "/") != self.path:
            return _reply(start_response, "404 Not Found", None)
        verb = environ.get("REQUEST_METHOD")
        if verb == "GET":
            return self._get(environ, start_response)
        if verb != "POST":
            return _reply(start_response, "405 Method Not Allowed", None,
                          [("Allow", "GET, POST")])
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > MAX_BODY:
            return _reply(start_response, "413 Payload Too Large", None)
        kind = environ.get("CONTENT_TYPE", "").split(";", 1)[0].strip().lower()
        if kind != "application/json":
            return _error(start_response, None, INVALID_REQUEST,
                          f"Content-Type must be application/json, not {kind or 'missing'}",
                          status="415 Unsupported Media Type")
        try:
            message = json.loads(environ["wsgi.input"].read(length) or b"null")
        except ValueError:
            return _error(start_response, None, PARSE_ERROR, "the body is not JSON")
        if not isinstance(message, dict):
            return _error(start_response, None, INVALID_REQUEST,
                          "Invalid Request: the body must be one JSON-RPC message object")
        if is_response(message):  # a client's answer to a handler's question, or stray
            self.questions.answered(message)
            return _reply(start_response, "202 Accepted", None)
        problem = request_problem(message)
        if problem is not None:
            request_id = message.get("id") if valid_id(message.get("id")) else None
            return _error(start_response, request_id, INVALID_REQUEST,
                          f"Invalid Request: {problem}")
        if "id" not in message:
            return _reply(start_response, "202 Accepted", None)
        method = message["method"]
        params = message.get("params", {})
        modern = (environ.get("HTTP_MCP_PROTOCOL_VERSION") in MODERN_VERSIONS
                  or (method != "initialize" and has_envelope(params)))
        streams = _accepts_streams(environ)
        try:
            if modern:
                _check_headers(environ, method, params)
                if method == "subscriptions/listen":
                    return self._listen(environ, start_response, message["id"], params,
                                        streams)
            token = (params.get("_meta") or {}).get("progressToken") \
                if isinstance(params.get("_meta"), dict) else None
            if streams and (method == "tools/call" and token is not None
                            or self._may_talk(method, params)):
                if modern:
                    check_envelope(params)  # refused with its HTTP status, before the stream
                    if method == "tools/call":  # so is a task tool called without the extension
                        self.tool_server.is_task_call(params)
                return self._streamed_call(environ, start_response, message["id"], method,
                                           params, token, modern)
            result = (self.answers._answer_modern if modern else self.answers._answer)(
                method, params)
        except Exception as exc:  # noqa: BLE001 - mapped to the client's answer
            return _failure(start_response, message["id"], method, exc, modern)
        return _reply(start_response, "200 OK",
                      {"jsonrpc": "2.0", "id": message["id"], "result": result})

    # -- streams -------------------------------------------------------------------------

    def _get(self, environ: dict, start_response: StartResponse) -> Iterable[bytes]:
        """The handshake era's GET stream (the tool list's changes); 405 in the stateless
        era, 406 without ``Accept: text/event-stream``."""
        if environ.get("HTTP_MCP_PROTOCOL_VERSION") in MODERN_VERSIONS:
            return _reply(start_response, "405 Method Not Allowed", None, [("Allow", "POST")])
        if not _accepts_streams(environ):
            return _error(start_response, None, INVALID_REQUEST, "GET opens an event stream: "
                          "Accept must list text/event-stream", status="406 Not Acceptable")
        stream = self.streams.open()
        if stream is None:
            return _busy(start_response, None)
        start_response("200 OK", list(_SSE_HEADERS))
        return stream.body(disconnected=environ.get("waitress.client_disconnected"),
                           opening=KEEP_ALIVE)

    def _listen(self, environ: dict, start_response: StartResponse, request_id: Any,
                params: dict, streams: bool) -> Iterable[bytes]:
        check_envelope(params)
        if not streams:
            return _error(start_response, request_id, INVALID_REQUEST, "subscriptions/listen is "
                          "answered with an event stream: Accept must list text/event-stream",
                          status="406 Not Acceptable")
        ack = listen_ack(params, request_id, {
            "toolsListChanged": True, "resourceSubscriptions": self.tool_server.has_resources})
        stream = self.streams.open(request_id, ack["notifications"])
        if stream is None:
            return _busy(start_response, request_id)
        start_response("200 OK", list(_SSE_HEADERS))
        first = {"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                 "params": ack}
        return stream.body([first], disconnected=environ.get("waitress.client_disconnected"))

    def _may_talk(self, method: str, params: dict) -> bool:
        """Whether the handler of a request takes a context, and so may send log messages
        or (in the handshake era) ask the client: its answer is then a stream."""
        registry = self.tool_server._registry
        if method == "tools/call":
            found = registry.tools.get(params.get("name"))
            return found is not None and found.wants_context
        if method == "prompts/get":
            prompt = registry.prompts.get(params.get("name"))
            return prompt is not None and takes_context(prompt.render)
        return False

    def _streamed_call(self, environ: dict, start_response: StartResponse, request_id: Any,
                       method: str, params: dict, token: Any,
                       modern: bool) -> Iterable[bytes]:
        """A request answered as a stream: its progress, log messages and (in the handshake
        era) questions to the client, then its answer. The handler runs on a thread of its
        own (it ends with the call, bounded by the call timeout) while this worker sends
        what it reports."""
        stream = self.streams.call_stream()

        def notify(name: str, notification: dict) -> None:
            stream.put({"jsonrpc": "2.0", "method": name, "params": notification})

        def progress(value: float, total: float | None = None, text: str | None = None) -> None:
            notify("notifications/progress", progress_params(token, value, total, text))

        on_progress = progress if token is not None else None
        if modern:
            def answer() -> Any:
                return self.answers._answer_modern(method, params, on_progress, notify=notify)
        else:
            def answer() -> Any:
                return self.answers._answer(method, params, on_progress, notify=notify,
                                            ask=self.questions.asker(stream.put))
        future = run_in_thread(answer, f"raider-{self.tool_server.key}-http-call")

        def done(settled) -> None:
            error = settled.exception()
            if error is None:
                stream.end({"jsonrpc": "2.0", "id": request_id, "result": settled.result()})
            else:
                stream.end({"jsonrpc": "2.0", "id": request_id,
                            "error": _error_object(method, error)})
        future.add_done_callback(done)
        start_response("200 OK", list(_SSE_HEADERS))
        return stream.body(disconnected=environ.get("waitress.client_disconnected"))


def _accepts_streams(environ: dict) -> bool:
    return "text/event-stream" in environ.get("HTTP_ACCEPT", "").lower()


def _error_object(method: str, exc: BaseException) -> dict:
    """The JSON-RPC error object of a failed answer."""
    if isinstance(exc, MethodNotFound):
        return {"code": METHOD_NOT_FOUND, "message": f"Method not found: {method}"}
    if isinstance(exc, McpError):
        error: dict[str, Any] = {"code": exc.code, "message": exc.message}
        if exc.data is not None:
            error["data"] = exc.data
        return error
    log.error("answering %s failed", method, exc_info=exc)
    return {"code": INTERNAL_ERROR, "message": f"{type(exc).__name__}: {exc}"}


def _failure(start_response: StartResponse, request_id: Any, method: str, exc: BaseException,
             modern: bool) -> Iterable[bytes]:
    error = _error_object(method, exc)
    return _error(start_response, request_id, error["code"], error["message"],
                  error.get("data"), modern=modern)


def _busy(start_response: StartResponse, request_id: Any) -> Iterable[bytes]:
    return _error(start_response, request_id, INTERNAL_ERROR,
                  "too many event streams are open; try again later",
                  status="503 Service Unavailable",
                  headers=[("Retry-After", str(RETRY_AFTER))])


def _check_headers(environ: dict, method: str, params: dict) -> None:
    """Mcp-Method and Mcp-Name must say what the body says (-32020 otherwise)."""
    problem = headers_problem(environ.get("HTTP_MCP_METHOD"), environ.get("HTTP_MCP_NAME"),
                              method, params)
    if problem is not None:
        raise McpError(HEADER_MISMATCH, problem)


def _error(start_response: StartResponse, request_id: Any, code: int, message: str,
           data: Any = None, *, modern: bool = True, status: str | None = None,
           headers: list | None = None) -> Iterable[bytes]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    if status is None:
        status = (_STATUS.get(code, "200 OK") if modern or code in (PARSE_ERROR, INVALID_REQUEST)
                  else "200 OK")
    return _reply(start_response, status, {"jsonrpc": "2.0", "id": request_id, "error": error},
                  headers)


def _reply(start_response: StartResponse, status: str, body: Any,
           headers: list | None = None) -> Iterable[bytes]:
    data = b"" if body is None else json.dumps(body, separators=(",", ":")).encode()
    start_response(status, [("Content-Type", "application/json"),
                            ("Content-Length", str(len(data))), *(headers or [])])
    return [data]


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
    go to :func:`wsgi_app`. Raises ImportError without waitress (the gateway extra), OSError
    for a busy address."""
    from .wsgi_server import Serving

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
