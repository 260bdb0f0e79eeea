"""A stateless-era (2026-07-28) Streamable HTTP server with faults real servers will not
produce, as a WSGI app (served by waitress in the tests).

    app = ModernHttpFake(mode)

Modes:
  garbage     server/discover is answered 200 with an HTML page; initialize works (a
              handshake server behind a proxy that mangles what it does not know)
  lies        server/discover is answered as a stateless server; every other request is
              refused as a handshake server would (400, -32000 "Server not initialized")
  loop        tools/call answers input_required for ever
  listen-cut  subscriptions/listen is acknowledged on an event stream that then ends
              without an answer (a connection cut by a proxy)
Tools: echo. ``app.seen`` holds the methods received.
"""
from __future__ import annotations

import json

VERSION = "2026-07-28"
TOOLS = [{"name": "echo", "inputSchema": {"type": "object"}}]


class ModernHttpFake:
    def __init__(self, mode: str):
        self.mode = mode
        self.seen: list[str] = []

    def __call__(self, environ, start_response):
        if environ["REQUEST_METHOD"] != "POST":
            start_response("405 Method Not Allowed", [("Content-Length", "0")])
            return [b""]
        length = int(environ.get("CONTENT_LENGTH") or 0)
        message = json.loads(environ["wsgi.input"].read(length) or b"null")
        if "id" not in message:
            start_response("202 Accepted", [("Content-Length", "0")])
            return [b""]
        method, request_id = message["method"], message["id"]
        params = message.get("params") or {}
        self.seen.append(method)

        def answer(result=None, error=None, status="200 OK"):
            body = {"jsonrpc": "2.0", "id": request_id}
            body.update({"error": error} if error is not None else {"result": result})
            data = json.dumps(body).encode()
            start_response(status, [("Content-Type", "application/json"),
                                    ("Content-Length", str(len(data)))])
            return [data]

        if method == "server/discover":
            if self.mode == "garbage":
                page = b"<html><body>Hello from the proxy</body></html>"
                start_response("200 OK", [("Content-Type", "text/html"),
                                          ("Content-Length", str(len(page)))])
                return [page]
            return answer({"resultType": "complete", "supportedVersions": [VERSION],
                           "capabilities": {"tools": {}},
                           "_meta": {"io.modelcontextprotocol/serverInfo": {
                               "name": "modern-http-fake", "version": "1"}}})
        if method == "initialize":
            if self.mode == "garbage":
                return answer({"protocolVersion": params.get("protocolVersion"),
                               "capabilities": {"tools": {}},
                               "serverInfo": {"name": "garbage-http-fake", "version": "1"}})
            return answer(error={"code": -32022, "message": "Unsupported protocol version",
                                 "data": {"supported": [VERSION]}}, status="400 Bad Request")
        if self.mode == "lies":
            return answer(error={"code": -32000, "message": "Server not initialized"},
                          status="400 Bad Request")
        if method == "tools/list":
            return answer({"tools": TOOLS})
        if method == "subscriptions/listen" and self.mode == "listen-cut":
            ack = {"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                   "params": {"notifications": params.get("notifications") or {},
                              "_meta": {"io.modelcontextprotocol/subscriptionId": request_id}}}
            start_response("200 OK", [("Content-Type", "text/event-stream")])
            return [f"event: message\ndata: {json.dumps(ack)}\n\n".encode()]  # then the end
        if method == "tools/call":
            if self.mode == "loop":
                return answer({"resultType": "input_required", "requestState": "again",
                               "inputRequests": {"r": {"method": "roots/list", "params": {}}}})
            return answer({"content": [{"type": "text", "text": "echo"}]})
        return answer(error={"code": -32601, "message": "Method not found"},
                      status="404 Not Found")
