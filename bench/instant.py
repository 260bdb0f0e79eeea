"""An MCP server that answers at once, in memory: what is left of a call is the library's
own work.

    with InstantServer() as server:
        server.call_tool("mcp__x__echo", {"text": "hi"})

:class:`InstantTransport` is a transport that is its own server: ``send`` encodes the
message as every transport does (``encode_message``), and when it is a request, hands the
answer (JSON text, parsed with ``deliver_json`` as a stdio reader parses a line) to the
session at once, on the thread that sent it. A blocking call (``send_awaited``, the
default: :meth:`send`) therefore sees no thread hop and no system call; the answer to a
request sent from a session's sender thread (``call_tool_f``) is delivered on that thread.
It knows ``initialize``, ``ping``, ``tools/list`` (one tool, ``echo``) and ``tools/call``
(one text block, the ``text`` argument); any other request is answered with -32601.

Only the stable faces are used (``McpServer._open_transport``, the ``Transport`` interface,
``encode_message`` and ``deliver_json``), so that older commits of raider_sync are measured
by the same code (see bench_ownwork).
"""
from __future__ import annotations

import json
import logging
from typing import Any

from raider_sync import McpConfig, McpServer
from raider_sync.errors import ConnectionClosed
from raider_sync.transports.base import Transport, deliver_json, encode_message

log = logging.getLogger("bench.instant")

TOOL = "mcp__x__echo"
ARGS = {"text": "hi"}
_ECHO = {"name": "echo", "description": "Echo the text back.",
         "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                         "required": ["text"]}}
# the answer to a call of echo with "hi", the id left open: formatting it is all the
# server does per call, so that its share of the time stays small
_HI_ANSWER = ('{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"hi"}],'
              '"isError":false}}')


class InstantTransport(Transport):
    """A transport that answers its own requests at once, on the sending thread. Never
    blocks; ``send`` raises ConnectionClosed once closed, ValueError/TypeError for what JSON
    cannot carry."""

    def __init__(self, name: str = "instant"):
        self.name = name
        self._deliver: Any = None
        self._closed = False

    def start(self, deliver, closed, *, timeout: float | None = None) -> None:
        self._deliver = deliver

    def send(self, message: dict, *, deadline: float | None = None) -> None:
        encode_message(message)  # what any transport does to a message it sends
        if self._closed or self._deliver is None:
            raise ConnectionClosed(f"{self.name} is closed")
        if "method" not in message or "id" not in message:
            return  # a notification, or an answer to a request of the server's: nothing back
        deliver_json(self.answer(message), self._deliver, log, self.name, "an answer")

    def answer(self, request: dict) -> str:
        """The server's answer to ``request``, as the JSON text a pipe would carry."""
        method, request_id = request["method"], request["id"]
        params = request.get("params") or {}
        if method == "tools/call" and params.get("name") == "echo":
            text = (params.get("arguments") or {}).get("text")
            if text == "hi":
                return _HI_ANSWER % request_id
            result: dict = {"content": [{"type": "text", "text": str(text)}], "isError": False}
        elif method == "initialize":
            result = {"protocolVersion": params.get("protocolVersion"),
                      "capabilities": {"tools": {}},
                      "serverInfo": {"name": "instant", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": [_ECHO]}
        elif method == "ping":
            result = {}
        else:
            return json.dumps({"jsonrpc": "2.0", "id": request_id,
                               "error": {"code": -32601, "message": f"Method not found: {method}"}})
        return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result})

    def close(self) -> None:
        self._closed = True


class InstantServer(McpServer):
    """An :class:`McpServer` named ``x`` (its tool: ``mcp__x__echo``) over an
    :class:`InstantTransport`, in the handshake era (``protocol="legacy"``)."""

    def __init__(self, **options: Any):
        spec = McpConfig.from_dict({"mcpServers": {"x": {"command": "instant"}}}).server("x")
        options.setdefault("protocol", "legacy")
        super().__init__(spec, **options)

    @property
    def transport(self) -> str:
        return "in-memory"

    @property
    def fingerprint(self) -> str:
        return f"in-memory:{id(self):x}"

    def _open_transport(self) -> Transport:
        return InstantTransport(self.key)
