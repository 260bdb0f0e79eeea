"""The per-message HTTP headers of MCP 2026-07-28: Mcp-Method, Mcp-Name and Mcp-Param-*.

    encode_value("café")                      # '=?base64?Y2Fmw6k=?='
    header_params(tool["inputSchema"])        # {"Region": ("region",)}, or raises InvalidAnnotation
    message_headers(message, params_of_tool)  # the headers one POST carries
    param_headers_problem(params, arguments, received)   # what a server refuses, or None

Every POST of the stateless revision carries ``Mcp-Method`` (the JSON-RPC method) and, for
``tools/call`` and ``prompts/get``, ``Mcp-Name`` = ``params.name``, for ``resources/read`` the
``params.uri``, for the tasks extension's ``tasks/get``, ``tasks/update`` and ``tasks/cancel``
the ``params.taskId``. A tool's input schema may annotate a property with ``x-mcp-header: NAME``; the
argument at that property is then mirrored into ``Mcp-Param-NAME``. Values that are not plain
printable ASCII travel as ``=?base64?<base64 of UTF-8>?=``.

Pure functions: nothing here blocks or sends anything.
"""
from __future__ import annotations

import base64
import re
from typing import Any, Callable, Mapping

from ..errors import RaiderError

ANNOTATION = "x-mcp-header"
#: RFC 9110 token characters (all patterns are used with fullmatch: ``$`` would let a
#: trailing newline through)
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_PRINTABLE = re.compile(r"[\x20-\x7e]*")
_SENTINEL = re.compile(r"=\?base64\?.*\?=", re.IGNORECASE | re.DOTALL)
MAX_SAFE_INTEGER = 2 ** 53 - 1
_HEADER_TYPES = ("string", "integer", "boolean")
#: methods whose Mcp-Name is params.name, the one whose Mcp-Name is params.uri, and the
#: tasks extension's, whose Mcp-Name is params.taskId
_NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri",
          "tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId"}


class InvalidAnnotation(RaiderError):
    """A tool's ``x-mcp-header`` annotations break the rules; the message says which."""


def encode_value(value: str) -> str:
    """A header value for ``value``: as is when it is printable ASCII without leading or
    trailing whitespace (and does not look like an encoded value), else base64-encoded UTF-8
    between ``=?base64?`` and ``?=``."""
    if (_PRINTABLE.fullmatch(value) and value == value.strip(" ")
            and not _SENTINEL.fullmatch(value)):
        return value
    return "=?base64?" + base64.b64encode(value.encode("utf-8", "surrogatepass")).decode() + "?="


def decode_value(value: str) -> str:
    """The text an encoded header value carries (the inverse of :func:`encode_value`).
    Raises ValueError for a malformed ``=?base64?...?=`` value."""
    if value[:9].lower() == "=?base64?" and value.endswith("?=") and len(value) >= 11:
        return base64.b64decode(value[9:-2], validate=True).decode("utf-8")
    return value


def param_value(value: Any) -> str | None:
    """An argument as an Mcp-Param value: strings as they are (encoded), integers in decimal,
    booleans ``true``/``false``; None (omit the header) for null and anything else."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return encode_value(value)
    return None


def header_params(schema: Any) -> dict[str, tuple[str, ...]]:
    """The ``x-mcp-header`` annotations of an input schema: header name -> the path of
    property names to its value. Only properties reached through ``properties`` count.
    Raises InvalidAnnotation for an annotation that is not a non-empty RFC 9110 token, that
    repeats another case-insensitively, or that sits on a property whose type is not one
    string, integer or boolean."""
    found: dict[str, tuple[str, ...]] = {}
    seen: set[str] = set()

    def walk(node: Any, path: tuple[str, ...]) -> None:
        if not isinstance(node, dict):
            return
        if path and ANNOTATION in node:
            name = node[ANNOTATION]
            where = ".".join(path)
            if not isinstance(name, str) or not _TOKEN.fullmatch(name):
                raise InvalidAnnotation(f"property {where!r}: {ANNOTATION} {name!r} is not a "
                                        f"header name (a non-empty token of ASCII letters, "
                                        f"digits and !#$%&'*+-.^_`|~)")
            if name.lower() in seen:
                raise InvalidAnnotation(f"property {where!r}: {ANNOTATION} {name!r} repeats "
                                        f"another annotation of the tool")
            kind = node.get("type")
            if kind not in _HEADER_TYPES:
                raise InvalidAnnotation(f"property {where!r}: {ANNOTATION} {name!r} is on a "
                                        f"property of type {kind!r}; only string, integer and "
                                        f"boolean values can be headers")
            seen.add(name.lower())
            found[name] = path
        properties = node.get("properties")
        if isinstance(properties, dict):
            for key, sub in properties.items():
                walk(sub, path + (str(key),))

    walk(schema, ())
    return found


def argument_headers(params: Mapping[str, tuple[str, ...]], arguments: Any) -> dict[str, str]:
    """The Mcp-Param-* headers for a call's ``arguments``: one per annotated property that has
    a string, integer or boolean value (null and missing ones are left out). An integer
    beyond ±(2^53-1) is left out too: it cannot round-trip through JSON numbers."""
    headers: dict[str, str] = {}
    for name, path in params.items():
        encoded = _header_value(_value_at(arguments, path))
        if encoded is not None:
            headers[f"Mcp-Param-{name}"] = encoded
    return headers


def _value_at(arguments: Any, path: tuple[str, ...]) -> Any:
    value: Any = arguments
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _header_value(value: Any) -> str | None:
    """The Mcp-Param value of an argument, None when it has none (see argument_headers)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_SAFE_INTEGER:
        return None
    return param_value(value)


def param_headers_problem(params: Mapping[str, tuple[str, ...]], arguments: Any,
                          received: Callable[[str], str | None]) -> str | None:
    """Why a tools/call's Mcp-Param-* headers disagree with its ``arguments``, by the tool's
    annotations ``params`` (:func:`header_params`), else None; ``received(name)`` is the
    value of ``Mcp-Param-<name>`` as received (None: absent). The problems: a header missing
    where :func:`argument_headers` would send one; a value that begins ``=?base64?`` and
    ends ``?=`` but is not base64 (padding, characters) of UTF-8; a header present where the
    argument is null or absent, or one no header can carry (an object, a float), or where it
    differs from the argument (compared decoded). What a server answers with -32020."""
    for name, path in params.items():
        header = f"Mcp-Param-{name}"
        value = _value_at(arguments, path)
        said = received(name)
        if said is None:
            if _header_value(value) is not None:
                return f"{header} is missing, but the arguments hold its value"
            continue
        try:
            text = decode_value(said)
        except ValueError:  # binascii.Error and UnicodeDecodeError are ValueErrors
            return f"{header} {said!r} is not valid base64 of UTF-8 text"
        if value is None:
            return f"{header} is sent, but the arguments hold no value for it"
        rendered = param_value(value)  # an integer beyond 2^53 too: it can still be compared
        if rendered is None or text != decode_value(rendered):
            return f"{header} {said!r} does not match the argument"
    return None


def message_headers(message: Mapping[str, Any],
                    tool_params: Callable[[str], Mapping[str, tuple[str, ...]]] | None = None
                    ) -> dict[str, str]:
    """The stateless revision's headers for one outgoing message: Mcp-Method for a request
    or notification, Mcp-Name for the named methods, Mcp-Param-* for a tools/call whose tool
    has annotations (``tool_params(name)`` gives them). Nothing for an answer."""
    method = message.get("method")
    if not isinstance(method, str):
        return {}
    headers = {"Mcp-Method": method}
    params = message.get("params")
    params = params if isinstance(params, dict) else {}
    field = _NAMED.get(method)
    if field is not None and isinstance(params.get(field), str):
        headers["Mcp-Name"] = encode_value(params[field])
    if method == "tools/call" and tool_params is not None and isinstance(params.get("name"), str):
        annotated = tool_params(params["name"])
        if annotated:
            headers.update(argument_headers(annotated, params.get("arguments")))
    return headers


def headers_problem(said_method: str | None, said_name: str | None, method: Any,
                    params: Mapping[str, Any]) -> str | None:
    """Why a request's Mcp-Method and Mcp-Name headers (as received) disagree with its body's
    method and name or URI, else None. What a server or relay answers with -32020."""
    if said_method != method:
        return f"Mcp-Method {said_method!r} does not match the body's method {method!r}"
    field = _NAMED.get(method) if isinstance(method, str) else None
    if field is None:
        return None
    try:
        name = decode_value(said_name) if said_name is not None else None
    except ValueError:
        name = None
    if name != params.get(field):
        return f"Mcp-Name {said_name!r} does not match the body's {field}"
    return None
