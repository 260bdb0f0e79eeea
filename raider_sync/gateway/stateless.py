"""What the gateway reads from a request of MCP's stateless revision (2026-07-28).

    problem(environ, body)             # why the headers and the body disagree, or None
    refusal(body, problem)             # the -32020 answer

A stateless POST names its method in ``Mcp-Method`` and, for tools/call, prompts/get and
resources/read, its name or URI in ``Mcp-Name``; routers and key policies may act on those
headers alone. So the gateway checks they say what the body says before relaying: a client
must not route one method past a policy under another's name. ``Mcp-Param-*`` headers pass
through untouched (every ``Mcp-`` header does). Requests without ``Mcp-Method`` (the handshake
era) are relayed unchecked. Nothing here blocks.
"""
from __future__ import annotations

import json
from typing import Any, Optional

from ..protocol.codes import HEADER_MISMATCH
from ..protocol.http_headers import headers_problem


def problem(environ: dict, body: bytes) -> Optional[str]:
    """Why a POST's Mcp-Method and Mcp-Name headers disagree with its body, else None (also
    for a request without Mcp-Method: the handshake era)."""
    said = environ.get("HTTP_MCP_METHOD")
    if said is None:
        return None
    try:
        message = json.loads(body) if body else None
    except (ValueError, UnicodeDecodeError, RecursionError):
        message = None
    method = message.get("method") if isinstance(message, dict) else None
    params = message.get("params") if isinstance(message, dict) else None
    return headers_problem(said, environ.get("HTTP_MCP_NAME"), method,
                           params if isinstance(params, dict) else {})


def refusal(body: bytes, problem: str) -> bytes:
    """The JSON-RPC error body of a refused request (HTTP 400)."""
    try:
        message: Any = json.loads(body)
    except ValueError:
        message = None
    request_id = message.get("id") if isinstance(message, dict) else None
    return json.dumps({"jsonrpc": "2.0", "id": request_id,
                       "error": {"code": HEADER_MISMATCH, "message": problem}}).encode()
