"""A ToolServer served over Streamable HTTP, as a WSGI app, in both protocol eras.

    app = wsgi_app(tool_server)                   # any WSGI server; waitress for example:
    serve_http(tool_server, "127.0.0.1", 8080)    # blocks (waitress, the gateway extra)

Stateless by construction: no session is kept, so any number of workers can stand behind a
load balancer. Every POST is answered on its own with one JSON answer.

- A request of the stateless revision (``MCP-Protocol-Version: 2026-07-28``, or the stateless
  ``_meta``) is checked: ``Mcp-Method`` must equal the body's method and, for the named methods,
  ``Mcp-Name`` the body's name or URI, else HTTP 400 with -32020. Its ``_meta`` must carry the
  revision and client capabilities (400, -32602). An unknown method is a 404 with -32601.
- Anything else is the handshake era without a session: ``initialize`` is answered (with no
  ``Mcp-Session-Id``), and every later request on its own.
- Notifications are accepted with 202. GET and DELETE are 405: there is no stream to open
  and no session to end, and so no ``subscriptions/listen`` and no progress notifications.
"""
from __future__ import annotations

import json
import logging
from typing import Any, Callable, Iterable

from .eras.modern import MODERN_VERSIONS
from .eras.served import has_envelope
from .errors import McpError
from .jsonrpc import INTERNAL_ERROR, METHOD_NOT_FOUND, MethodNotFound
from .serving import ToolServerAnswers
from .transports.http_headers import headers_problem

log = logging.getLogger("raider_sync.serving_http")

MAX_BODY = 4 * 1024 * 1024
_STATUS = {-32020: "400 Bad Request", -32021: "400 Bad Request", -32022: "400 Bad Request",
           -32602: "400 Bad Request", -32600: "400 Bad Request", -32700: "400 Bad Request",
           METHOD_NOT_FOUND: "404 Not Found"}

StartResponse = Callable[[str, list], Any]


def wsgi_app(tool_server, *, page_size: int = 100) -> Callable[[dict, StartResponse], Iterable[bytes]]:
    """A WSGI app that serves ``tool_server`` at any path (mount it where you like).
    Thread-safe; each request blocks its worker until the tool answers (the tool server's
    call timeout bounds it)."""
    answers = ToolServerAnswers(tool_server, page_size=page_size)

    def app(environ: dict, start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD") != "POST":
            return _reply(start_response, "405 Method Not Allowed", None, [("Allow", "POST")])
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > MAX_BODY:
            return _reply(start_response, "413 Payload Too Large", None)
        try:
            message = json.loads(environ["wsgi.input"].read(length) or b"null")
        except ValueError:
            return _error(start_response, None, -32700, "the body is not JSON")
        if not isinstance(message, dict) or not isinstance(message.get("method"), str):
            return _error(start_response, None, -32600, "the body is not a JSON-RPC request")
        if "id" not in message:
            return _reply(start_response, "202 Accepted", None)
        method = message["method"]
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        modern = (environ.get("HTTP_MCP_PROTOCOL_VERSION") in MODERN_VERSIONS
                  or (method != "initialize" and has_envelope(params)))
        try:
            if modern:
                _check_headers(environ, method, params)
                result = answers._answer_modern(method, params)
            else:
                result = answers._answer(method, params)
        except MethodNotFound:
            return _error(start_response, message["id"], METHOD_NOT_FOUND,
                          f"Method not found: {method}", modern=modern)
        except McpError as exc:
            return _error(start_response, message["id"], exc.code, exc.message, exc.data,
                          modern=modern)
        except Exception as exc:  # noqa: BLE001 - a handler's failure is the client's answer
            log.exception("answering %s failed", method)
            return _error(start_response, message["id"], INTERNAL_ERROR,
                          f"{type(exc).__name__}: {exc}")
        return _reply(start_response, "200 OK",
                      {"jsonrpc": "2.0", "id": message["id"], "result": result})

    return app


def _check_headers(environ: dict, method: str, params: dict) -> None:
    """Mcp-Method and Mcp-Name must say what the body says (-32020 otherwise)."""
    problem = headers_problem(environ.get("HTTP_MCP_METHOD"), environ.get("HTTP_MCP_NAME"),
                              method, params)
    if problem is not None:
        raise McpError(-32020, problem)


def _error(start_response: StartResponse, request_id: Any, code: int, message: str,
           data: Any = None, *, modern: bool = True) -> Iterable[bytes]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    status = _STATUS.get(code, "200 OK") if modern or code in (-32700, -32600) else "200 OK"
    return _reply(start_response, status, {"jsonrpc": "2.0", "id": request_id, "error": error})


def _reply(start_response: StartResponse, status: str, body: Any,
           headers: list | None = None) -> Iterable[bytes]:
    data = b"" if body is None else json.dumps(body, separators=(",", ":")).encode()
    start_response(status, [("Content-Type", "application/json"),
                            ("Content-Length", str(len(data))), *(headers or [])])
    return [data]


def serve_http(tool_server, host: str = "127.0.0.1", port: int = 8080, **waitress_options) -> None:
    """Serve ``tool_server`` over Streamable HTTP with waitress until interrupted. Blocks.
    Raises ImportError without waitress (the gateway extra), OSError for a busy address."""
    import waitress
    waitress.serve(wsgi_app(tool_server), host=host, port=port, **waitress_options)
