"""What the gateway reads from a request of MCP's stateless revision (2026-07-28).

    problem(environ, body)             # why the headers and the body disagree, or None
    refusal(body, problem)             # the -32020 answer

A stateless POST names its method in ``Mcp-Method`` and, for tools/call, prompts/get and
resources/read, its name or URI in ``Mcp-Name`` (for the tasks extension's tasks/get,
tasks/update and tasks/cancel, the task id); routers and key policies may act on those
headers alone. So the gateway checks they say what the body says before relaying: a client
must not route one method past a policy under another's name. A request is stateless as a
server tells (``MCP-Protocol-Version: 2026-07-28``, or the stateless ``_meta`` on anything but
initialize) or when it carries ``Mcp-Method``: leaving the headers out does not skip the
check. ``Mcp-Param-*`` headers pass through untouched (every ``Mcp-`` header does). Requests
of the handshake era are relayed unchecked. Nothing here blocks.
"""
from __future__ import annotations

import json
from typing import Any, Optional

from ..protocol.codes import HEADER_MISMATCH
from ..protocol.http_headers import headers_problem
from ..protocol.revisions import MODERN_VERSIONS
from ..serve.served import has_envelope

_UNPARSED = object()


def problem(environ: dict, body: bytes, message: Any = _UNPARSED) -> Optional[str]:
    """Why a stateless POST's Mcp-Method and Mcp-Name headers disagree with its body (a header
    left out disagrees too), else None; None for a request of the handshake era. ``message``
    is the body already parsed (None when it is not JSON), so it is parsed once per request."""
    said = environ.get("HTTP_MCP_METHOD")
    version = environ.get("HTTP_MCP_PROTOCOL_VERSION")
    if message is _UNPARSED:
        try:
            message = json.loads(body) if body else None
        except (ValueError, UnicodeDecodeError, RecursionError):
            message = None
    method = message.get("method") if isinstance(message, dict) else None
    params = message.get("params") if isinstance(message, dict) else None
    params = params if isinstance(params, dict) else {}
    # the server's own test of a stateless request (serving_http), or Mcp-Method sent
    modern = isinstance(version, str) and version.strip(" \t") in MODERN_VERSIONS
    if said is None and not modern and (method == "initialize" or not has_envelope(params)):
        return None
    return headers_problem(said, environ.get("HTTP_MCP_NAME"), method, params)


def refusal(body: bytes, problem: str) -> bytes:
    """The JSON-RPC error body of a refused request (HTTP 400)."""
    try:
        message: Any = json.loads(body)
    except ValueError:
        message = None
    request_id = message.get("id") if isinstance(message, dict) else None
    return json.dumps({"jsonrpc": "2.0", "id": request_id,
                       "error": {"code": HEADER_MISMATCH, "message": problem}}).encode()
