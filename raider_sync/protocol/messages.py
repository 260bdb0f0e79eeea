"""JSON-RPC 2.0 messages as MCP narrows them: encoding, decoding, telling their kinds apart.

    encode_message({"jsonrpc": "2.0", "id": 1, "method": "ping"})   # compact UTF-8 JSON
    decode_message(b'{"jsonrpc": "2.0", "id": 1, "result": {}}')    # the parsed object
    request_id_of(message)     # the id of a request; None for a notification or an answer
    answers(message, 1)        # whether it (or a batch) holds the answer to request 1
    error_reply(1, INTERNAL_ERROR, "it broke")   # an error answer to send
    error_of(answer["error"])  # an error answer received, as an McpError

Pure functions: nothing here blocks or sends anything.
"""
from __future__ import annotations

import json
from typing import Any

from ..errors import McpError
from .codes import INTERNAL_ERROR

#: the default bound on one received message (a stdio line, an SSE event, an HTTP body)
DEFAULT_MAX_MESSAGE_SIZE = 64 * 1024 * 1024


def size_text(size: int) -> str:
    """``size`` bytes for people: ``64 MiB``, ``1.5 KiB``, ``100 bytes``."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.4g} {unit}"
    return f"{size} bytes"


class MessageTooLong(Exception):
    """Raised by a reader of lines (and the SSE parser) for a line or event over the limit;
    each reader turns it into the error of its request or connection."""

    def __init__(self, limit: int):
        super().__init__(f"more than {size_text(limit)}")
        self.limit = limit


def encode_message(message: Any) -> bytes:
    """One message as compact UTF-8 JSON. Raises ValueError (NaN, infinities) or TypeError
    (objects) for what JSON cannot carry, before anything is sent; a lone surrogate, which
    UTF-8 cannot carry, is sent escaped (still valid JSON)."""
    text = _ENCODER.encode(message)
    try:
        return text.encode()
    except UnicodeEncodeError:
        return _ASCII_ENCODER.encode(message).encode()


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_ASCII_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False)


def decode_message(data: str | bytes) -> Any:
    """One received message parsed. Raises ValueError for anything that is not JSON, also
    for nesting too deep for the parser (which raises RecursionError) and invalid UTF-8."""
    if isinstance(data, str) and data.startswith("\ufeff"):
        data = data[1:]  # a byte order mark, which json.loads takes only in bytes
    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError("JSON nested too deeply to parse") from None


def looks_like_jsonrpc(message: Any) -> bool:
    """Whether a parsed message has the shape of JSON-RPC (an object naming ``jsonrpc``, or
    a batch of them): used to tell a server's stray output from its messages."""
    if isinstance(message, list):
        return bool(message) and all(looks_like_jsonrpc(item) for item in message)
    return isinstance(message, dict) and "jsonrpc" in message


def is_request(message: Any) -> bool:
    """Whether ``message`` is a request: it names a method and has an id (so an answer with
    the same id is awaited)."""
    return isinstance(message, dict) and "method" in message and "id" in message


def is_notification(message: Any) -> bool:
    """Whether ``message`` is a notification: it names a method and has no id."""
    return isinstance(message, dict) and "method" in message and "id" not in message


def request_id_of(message: Any) -> Any:
    """The id of a request; None for a notification or an answer."""
    return message.get("id") if isinstance(message, dict) and "method" in message else None


def is_response(message: dict) -> bool:
    """Whether a received object is an answer (a result or an error, and no method)."""
    return "method" not in message and ("result" in message or "error" in message)


def answers(message: Any, request_id: Any) -> bool:
    """Whether ``message`` (or a batch) holds the answer to the request ``request_id``."""
    if isinstance(message, dict):
        return "method" not in message and message.get("id") == request_id
    if isinstance(message, list):
        return any(answers(item, request_id) for item in message)
    return False


def valid_id(value: Any) -> bool:
    """Whether ``value`` may be a request's id: a string or an integer, as MCP narrows
    JSON-RPC (never null, a boolean or a structure)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def request_problem(message: dict) -> str | None:
    """What makes ``message`` (an object that is not an answer) an invalid JSON-RPC 2.0
    request or notification, else None; every served request is checked with this, whatever
    carried it. The answer to an invalid one is -32600 Invalid Request, with its id when
    :func:`valid_id` (else null); an invalid notification is not answered."""
    if message.get("jsonrpc") != "2.0":
        return 'jsonrpc must be "2.0"'
    if not isinstance(message.get("method"), str):
        return "method must be a string" if "method" in message else "method is missing"
    if "params" in message and not isinstance(message["params"], dict):
        return "params must be an object"
    if "id" in message and not valid_id(message["id"]):
        return "id must be a string or an integer"
    return None


def error_reply(request_id: Any, code: int, message: str, data: Any = None) -> dict:
    """The error answer to the request ``request_id``."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def error_code(value: Any) -> int:
    """A JSON-RPC error code; a peer's malformed one counts as an internal error."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return INTERNAL_ERROR


def error_of(error: Any) -> McpError:
    """The ``error`` member of an error answer received, as an McpError (whatever is
    malformed in it read as leniently as can be)."""
    error = error if isinstance(error, dict) else {}
    return McpError(error_code(error.get("code")), str(error.get("message", "error")),
                    error.get("data"))


def error_in_body(body: str) -> dict | None:
    """The JSON-RPC error an HTTP error body carries (the stateless revision answers its
    refusals so), else None."""
    try:
        message = json.loads(body)
    except ValueError:
        return None
    error = message.get("error") if isinstance(message, dict) else None
    if isinstance(error, dict) and isinstance(error.get("code"), int):
        return error
    return None
