"""The answers a served HTTP app writes itself: a JSON body (a JSON-RPC result or error) with
its HTTP status, the refusal of one stream too many (503 with ``Retry-After``), and the
headers an event stream opens with. Writing calls the WSGI ``start_response`` and never
blocks; nothing is raised (a failure is answered as its JSON-RPC error)."""
from __future__ import annotations

import json
import logging
from typing import Any, Callable, Iterable

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

# the logger the served app has always logged under
log = logging.getLogger("raider_sync.serving_http")

#: seconds a client refused for too many open streams is asked to wait
RETRY_AFTER = 5
#: the HTTP status of a JSON-RPC error in the stateless era (others: 200)
STATUS = {HEADER_MISMATCH: "400 Bad Request", MISSING_CAPABILITY: "400 Bad Request",
          UNSUPPORTED_VERSION: "400 Bad Request", INVALID_PARAMS: "400 Bad Request",
          INVALID_REQUEST: "400 Bad Request", PARSE_ERROR: "400 Bad Request",
          METHOD_NOT_FOUND: "404 Not Found"}
SSE_HEADERS = [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"),
               ("X-Accel-Buffering", "no")]  # a fronting nginx must not buffer a stream

StartResponse = Callable[[str, list], Any]


def accepts_streams(environ: dict) -> bool:
    """Whether the request's ``Accept`` lists ``text/event-stream``."""
    return "text/event-stream" in environ.get("HTTP_ACCEPT", "").lower()


def error_object(method: str, exc: BaseException) -> dict:
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


def failure(start_response: StartResponse, request_id: Any, method: str, exc: BaseException,
            modern: bool) -> Iterable[bytes]:
    """The error answer to ``method``'s failure ``exc`` (its HTTP status as the era has it)."""
    error = error_object(method, exc)
    return error_reply(start_response, request_id, error["code"], error["message"],
                       error.get("data"), modern=modern)


def busy(start_response: StartResponse, request_id: Any) -> Iterable[bytes]:
    """503 with ``Retry-After``: one more long-lived stream than ``max_streams``."""
    return error_reply(start_response, request_id, INTERNAL_ERROR,
                       "too many event streams are open; try again later",
                       status="503 Service Unavailable",
                       headers=[("Retry-After", str(RETRY_AFTER))])


def error_reply(start_response: StartResponse, request_id: Any, code: int, message: str,
                data: Any = None, *, modern: bool = True, status: str | None = None,
                headers: list | None = None) -> Iterable[bytes]:
    """A JSON-RPC error answer. Its status is ``status``, else the one the stateless era
    gives ``code`` (:data:`STATUS`); the handshake era answers 200 but for a body that is
    not JSON-RPC."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    if status is None:
        status = (STATUS.get(code, "200 OK") if modern or code in (PARSE_ERROR, INVALID_REQUEST)
                  else "200 OK")
    return reply(start_response, status, {"jsonrpc": "2.0", "id": request_id, "error": error},
                 headers)


def reply(start_response: StartResponse, status: str, body: Any,
          headers: list | None = None) -> Iterable[bytes]:
    """``body`` as JSON (None: no body) with ``status`` and ``headers``."""
    data = b"" if body is None else json.dumps(body, separators=(",", ":")).encode()
    start_response(status, [("Content-Type", "application/json"),
                            ("Content-Length", str(len(data))), *(headers or [])])
    return [data]

