"""A request of the stateless revision says in its headers what its body says
(``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``, a ``tools/call``'s ``Mcp-Param-*``):
:func:`check_headers` holds the one against the other. Nothing blocks; a mismatch raises
McpError -32020 HeaderMismatch."""
from __future__ import annotations

from typing import Any, Callable

from ..errors import McpError
from ..protocol.codes import HEADER_MISMATCH
from ..protocol.http_headers import (
    InvalidAnnotation,
    header_params,
    headers_problem,
    param_headers_problem,
)
from .served import meta_version


def _header(environ: dict, key: str) -> str | None:
    """A request header by its WSGI key, without the whitespace around it (RFC 9110 5.5)."""
    value = environ.get(key)
    return value.strip(" \t") if isinstance(value, str) else None


def check_headers(environ: dict, method: str, params: dict,
                  tool_schema: Callable[[Any], Any]) -> None:
    """The headers of a stateless request must say what its body says: MCP-Protocol-Version
    the revision its ``_meta`` names (when both are there), Mcp-Method and Mcp-Name its
    method and name, and a tools/call's Mcp-Param-* its arguments, by the tool's
    ``x-mcp-header`` annotations (``tool_schema(name)``: its input schema). McpError -32020
    HeaderMismatch otherwise."""
    said, meant = _header(environ, "HTTP_MCP_PROTOCOL_VERSION"), meta_version(params)
    if said is not None and meant is not None and said != meant:
        raise McpError(HEADER_MISMATCH, f"MCP-Protocol-Version {said!r} does not match the "
                                        f"revision {meant!r} the request's _meta names")
    problem = headers_problem(_header(environ, "HTTP_MCP_METHOD"),
                              _header(environ, "HTTP_MCP_NAME"), method, params)
    if problem is None and method == "tools/call":
        try:
            annotated = header_params(tool_schema(params.get("name")))
        except InvalidAnnotation:  # the tool's own fault: it is not held against the call
            annotated = {}
        if annotated:
            problem = param_headers_problem(annotated, params.get("arguments"), lambda name:
                                            _header(environ, _param_key(name)))
    if problem is not None:
        raise McpError(HEADER_MISMATCH, problem)


def _param_key(name: str) -> str:
    """The WSGI key of the Mcp-Param-``name`` header."""
    return "HTTP_MCP_PARAM_" + name.upper().replace("-", "_")

