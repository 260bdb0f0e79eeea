"""A deliberately faulty MCP server over HTTP, in-process, for the faults real servers will not
produce on demand. Streamable HTTP at ``/mcp``, legacy HTTP+SSE at ``/sse``.

    with FaultServer(answer="sse") as fake:      # binds 127.0.0.1:0, serves on threads
        fake.url                                  # http://127.0.0.1:PORT/mcp
        fake.seen                                 # every request: (method, path, headers, body)

Options (attributes, may be changed while running):
  answer        "json" or "sse": how POSTed requests are answered
  priming       start each SSE answer with a priming event (id, empty data)
  retry_ms      a ``retry:`` field sent with each priming event / GET stream
  get_stream    "events" (a list_changed notification, then hold), "close" (one event, end),
                "405" (none)
  token_from    None, or N: requests need ``Authorization: Bearer tN`` or later (else 401)
  initialize    "ok", "stateless400" (HTTP 400 naming 2026-07-28), "stateless32022"
  legacy_endpoint  the endpoint event of /sse (relative or absolute)
  drop_posts    N: the next N POSTs are read and their connection closed with no answer (as a
                kept-alive connection the server dropped)
  drop_answers  N: the next N tools/call are run (counted in ``executed``), then their
                connection is closed with no answer (a server that died after doing the work)
  stateless     speak the stateless revision (2026-07-28): server/discover, no sessions
  annotations   {tool: annotations} listed with those tools (readOnlyHint, idempotentHint...)

Tools: echo, cut (SSE answer cut mid-chunk after a progress event, answer on resume), drop
(SSE ended cleanly with no answer and no event id), garbage (junk SSE lines around the answer),
endless (keep-alives until the client goes), fail500, notjson, wrongid (a JSON answer to
another request), stalljson (a JSON body that stops half way, a byte a while), deep (an event
nested too deeply for a JSON parser, then the answer), huge (an event whose data line has
``huge_bytes`` bytes, then the answer), hugejson (a chunked JSON body of ``huge_bytes``).
``executed`` lists the name of every tool run; ``close_idle()`` closes the kept-alive
connections waiting for their next request (a server whose keep-alive timeout passed).
get_stream "deep" sends a too-deeply nested event, then a list_changed notification. On the
legacy stream, the tools deep and huge do the same before their answer.
"""
from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

TOOLS = ["echo", "cut", "drop", "garbage", "endless", "fail500", "notjson", "wrongid",
         "stalljson", "deep", "huge", "hugejson", "linger"]
DEEP = "[" * 100000 + "]" * 100000


class _Server(ThreadingHTTPServer):
    daemon_threads = False
    block_on_close = True
    allow_reuse_address = True


class FaultServer:
    def __init__(self, **options):
        self.answer = "sse"
        self.priming = True
        self.retry_ms: int | None = None
        self.get_stream = "events"
        self.token_from: int | None = None
        self.initialize = "ok"
        self.legacy_endpoint = "/messages?session=L1"
        self.drop_posts = 0
        self.drop_answers = 0
        self.annotations: dict[str, dict] = {}
        self.stateless = False
        self.huge_bytes = 32 << 20
        for key, value in options.items():
            if not hasattr(self, key):
                raise TypeError(f"unknown option {key}")
            setattr(self, key, value)
        self.seen: list[tuple[str, str, dict, dict | None]] = []
        self.cancelled: list = []
        self.executed: list[str] = []
        self.get_times: list[tuple[float, str | None]] = []
        self.cut_at: float | None = None
        self.sessions: set[str] = set()
        self.stopping = threading.Event()
        #: set: the tool "linger" ends the stream it answered on (held open until then)
        self.linger_done = threading.Event()
        self.lingering = threading.Event()  # set once "linger" has answered
        self.connections = 0  # TCP connections accepted
        self._lock = threading.Lock()
        self._count = 0
        self._conns: set[socket.socket] = set()
        self._idle: set[socket.socket] = set()  # between two requests of a kept-alive connection
        self._legacy: list = []  # handlers of open /sse streams: (wfile, lock)
        self._server = _Server(("127.0.0.1", 0), _handler(self))
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.sse_url = f"http://127.0.0.1:{self.port}/sse"
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-http",
                                        kwargs={"poll_interval": 0.05})

    def __enter__(self) -> "FaultServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        self.stopping.set()
        self._server.shutdown()
        with self._lock:
            conns = list(self._conns)
        for conn in conns:  # idle keep-alive connections would hold their handler threads
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._server.server_close()
        self._thread.join(5)

    def forget_sessions(self) -> None:
        """As a restarted server: every session id now answers 404."""
        with self._lock:
            self.sessions.clear()

    def close_idle(self) -> set[socket.socket]:
        """Close every kept-alive connection waiting for its next request; those closed."""
        with self._lock:
            idle = set(self._idle)
        for conn in idle:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        return idle

    def open_connections(self) -> set[socket.socket]:
        with self._lock:
            return set(self._conns)

    def new_session(self) -> str:
        with self._lock:
            self._count += 1
            sid = f"s{self._count}"
            self.sessions.add(sid)
            return sid

    def methods(self, kind: str = "POST") -> list[str]:
        return [body.get("method") for method, _, _, body in self.seen
                if method == kind and isinstance(body, dict)]


def fault_servers():
    """The body of a ``fake`` fixture: yields ``make(**options)``, which starts a FaultServer;
    every one started is stopped afterwards."""
    servers: list[FaultServer] = []

    def make(**options) -> FaultServer:
        server = FaultServer(**options).__enter__()
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()


def _handler(fake: FaultServer):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # quiet
            pass

        def setup(self):
            super().setup()
            with fake._lock:
                fake._conns.add(self.connection)
                fake.connections += 1

        def finish(self):
            with fake._lock:
                fake._conns.discard(self.connection)
                fake._idle.discard(self.connection)
            try:
                super().finish()
            except OSError:
                pass

        def handle_one_request(self):
            with fake._lock:
                fake._idle.add(self.connection)
            super().handle_one_request()

        def parse_request(self):
            with fake._lock:  # the request line came: busy until the next one is awaited
                fake._idle.discard(self.connection)
            return super().parse_request()

        # -- helpers ------------------------------------------------------------------

        def _headers(self) -> dict:
            return {k.lower(): v for k, v in self.headers.items()}

        def _authorized(self) -> bool:
            if fake.token_from is None:
                return True
            auth = self.headers.get("Authorization", "")
            try:
                number = int(auth.removeprefix("Bearer t"))
            except ValueError:
                number = -1
            if number >= fake.token_from:
                return True
            self._plain(401, "unauthorized: token expired")
            return False

        def _plain(self, status: int, text: str, ctype: str = "text/plain",
                   headers: dict | None = None) -> None:
            body = text.encode()
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(body)

        def _json(self, message, headers: dict | None = None) -> None:
            self._plain(200, json.dumps(message), "application/json", headers)

        def _start_stream(self, headers: dict | None = None) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()

        def _chunk(self, text: str) -> None:
            data = text.encode()
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        def _end_stream(self) -> None:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

        def _event(self, message, event_id: str | None = None) -> None:
            text = "event: message\n"
            if event_id:
                text += f"id: {event_id}\n"
            self._chunk(text + f"data: {json.dumps(message)}\n\n")

        def _huge_event(self) -> bool:
            """An event whose data line has fake.huge_bytes bytes, in pieces; False when the
            client went away meanwhile."""
            piece = "x" * (1 << 20)
            try:
                self._chunk('data: {"jsonrpc": "2.0", "method": "notifications/message", '
                            '"params": {"data": "')
                left = fake.huge_bytes
                while left > 0:
                    self._chunk(piece[:left])
                    left -= len(piece)
                self._chunk('"}}\n\n')
            except OSError:
                self.close_connection = True
                return False
            return True

        def _prime(self, event_id: str) -> None:
            if fake.priming:
                retry = f"retry: {fake.retry_ms}\n" if fake.retry_ms is not None else ""
                self._chunk(f"id: {event_id}\n{retry}data: \n\n")

        def _answer(self, message, headers: dict | None = None) -> None:
            if fake.answer == "json":
                self._json(message, headers)
            else:
                self._start_stream(headers)
                self._prime("p0")
                self._event(message, "a1")
                self._end_stream()

        # -- verbs ----------------------------------------------------------------------

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            path = urlsplit(self.path)
            fake.seen.append(("POST", path.path, self._headers(), body))
            if fake.drop_posts > 0:
                fake.drop_posts -= 1
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if not self._authorized():
                return
            if path.path == "/messages":
                return self._legacy_post(body)
            if not isinstance(body, dict):
                return self._plain(400, "bad json")
            method, msg_id = body.get("method"), body.get("id")
            if method == "initialize":
                return self._initialize(body)
            if method == "server/discover" and fake.stateless:
                return self._answer({"jsonrpc": "2.0", "id": msg_id, "result": {
                    "resultType": "complete", "supportedVersions": ["2026-07-28"],
                    "capabilities": {"tools": {}},
                    "_meta": {"io.modelcontextprotocol/serverInfo": {
                        "name": "fault", "version": "1"}}}})
            sid = self.headers.get("Mcp-Session-Id")
            if sid not in fake.sessions and not fake.stateless:
                return self._plain(404, json.dumps({"jsonrpc": "2.0", "id": None, "error": {
                    "code": -32600, "message": "Session not found"}}), "application/json")
            if method is None or msg_id is None:  # a notification or an answer
                if method == "notifications/cancelled":
                    fake.cancelled.append(body.get("params", {}).get("requestId"))
                return self._plain(202, "")
            if method == "tools/list":
                tools = [{"name": n, "inputSchema": {"type": "object"},
                          **({"annotations": fake.annotations[n]} if n in fake.annotations
                             else {})} for n in TOOLS]
                return self._answer({"jsonrpc": "2.0", "id": msg_id, "result": {"tools": tools}})
            if method == "ping":
                return self._answer({"jsonrpc": "2.0", "id": msg_id, "result": {}})
            if method == "tools/call":
                return self._call(msg_id, body.get("params") or {})
            return self._answer({"jsonrpc": "2.0", "id": msg_id,
                                 "error": {"code": -32601, "message": "not found"}})

        def _initialize(self, body):
            msg_id = body.get("id")
            if fake.initialize == "stateless400":
                return self._plain(400, "Bad Request: Unsupported protocol version "
                                        "(supported versions: 2026-07-28)")
            if fake.initialize == "stateless32022":
                return self._json({"jsonrpc": "2.0", "id": msg_id, "error": {
                    "code": -32022, "message": "Unsupported protocol version",
                    "data": {"supported": ["2026-07-28"],
                             "requested": body["params"]["protocolVersion"]}}})
            sid = fake.new_session()
            result = {"protocolVersion": body["params"]["protocolVersion"],
                      "capabilities": {"tools": {"listChanged": True}},
                      "serverInfo": {"name": "fault", "version": "1"}}
            self._answer({"jsonrpc": "2.0", "id": msg_id, "result": result},
                         {"Mcp-Session-Id": sid})

        def _call(self, msg_id, params):
            name = params.get("name")
            args = params.get("arguments") or {}
            fake.executed.append(name)
            if fake.drop_answers > 0:
                fake.drop_answers -= 1
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            text = {"jsonrpc": "2.0", "id": msg_id,
                    "result": {"content": [{"type": "text", "text": f"{name}: {args}"}]}}
            if name == "echo":
                return self._answer(text)
            if name == "fail500":
                return self._plain(500, "boom: the fake server failed inside")
            if name == "notjson":
                return self._plain(200, "this is <b>not</b> json", "application/json")
            if name == "stalljson":
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "1000")
                self.end_headers()
                try:
                    self.wfile.write(b'{"jsonrpc": "2.0", ')
                    while not fake.stopping.wait(0.1):
                        self.wfile.write(b" ")  # trickles: no read ever times out
                        self.wfile.flush()
                except OSError:
                    pass
                self.close_connection = True
                return
            if name == "wrongid":
                return self._json({**text, "id": "someone-else"})
            if name == "deep":
                self._start_stream()
                self._chunk(f"data: {DEEP}\n\n")
                self._event(text, "d1")
                self._end_stream()
                return
            if name == "huge":
                self._start_stream()
                if self._huge_event():
                    self._event(text, "h1")
                    self._end_stream()
                return
            if name == "hugejson":
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                try:
                    head = {"jsonrpc": "2.0", "id": msg_id, "result": {"content": []}}
                    self._chunk(json.dumps(head)[:-2] + ', "pad": "')
                    piece, left = "x" * (1 << 20), fake.huge_bytes
                    while left > 0:
                        self._chunk(piece[:left])
                        left -= len(piece)
                    self._chunk('"}}')
                    self._end_stream()
                except OSError:
                    self.close_connection = True
                return
            if name == "cut":
                self._start_stream()
                self._prime("c1")
                token = ((params.get("_meta") or {}).get("progressToken"))
                self._event({"jsonrpc": "2.0", "method": "notifications/progress",
                             "params": {"progressToken": token, "progress": 1, "total": 2}}, "c2")
                fake.pending_answer = text
                # half a chunk, then the connection goes: the stream is cut mid-response
                self.wfile.write(b"40\r\nevent: mess")
                self.wfile.flush()
                fake.cut_at = time.monotonic()
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if name == "drop":
                self._start_stream()
                self._chunk(": nothing to see\n\n")
                self._end_stream()
                return
            if name == "garbage":
                self._start_stream()
                self._prime("g0")
                self._chunk("this line is garbage\nretry: soon\n\n")
                self._chunk("data: {not json at all\n\n")
                self._chunk("event: weird\ndata: ignored\n\n")
                self._chunk(": a comment\r\n\r\n")
                self._event(text, "g1")
                self._end_stream()
                return
            if name == "linger":
                self._start_stream()
                self._prime("l0")
                self._event(text, "l1")
                fake.lingering.set()
                while not (fake.linger_done.wait(0.05) or fake.stopping.is_set()):
                    pass
                try:
                    self._chunk(": after the answer\n\n")
                    self._end_stream()
                except OSError:
                    self.close_connection = True
                return
            if name == "endless":
                self._start_stream()
                self._prime("e0")
                try:
                    while not fake.stopping.wait(0.05):
                        self._chunk(": still here\n\n")
                except OSError:
                    pass  # the client went away
                self.close_connection = True
                return
            self._answer({"jsonrpc": "2.0", "id": msg_id,
                          "result": {"isError": True, "content": [{"type": "text",
                                                                   "text": "unknown tool"}]}})

        def do_GET(self):
            path = urlsplit(self.path)
            fake.seen.append(("GET", path.path, self._headers(), None))
            if not self._authorized():
                return
            if path.path == "/sse":
                return self._legacy_stream()
            last = self.headers.get("Last-Event-ID")
            fake.get_times.append((time.monotonic(), last))
            sid = self.headers.get("Mcp-Session-Id")
            if sid not in fake.sessions:
                return self._plain(404, "no such session")
            if last == "c2":  # resuming the cut answer
                self._start_stream()
                self._event(fake.pending_answer, "c3")
                self._end_stream()
                return
            if fake.get_stream == "405":
                return self._plain(405, "no GET stream here")
            self._start_stream()
            if fake.retry_ms is not None:
                self._chunk(f"retry: {fake.retry_ms}\n\n")
            note = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
            if fake.get_stream == "deep" and last is None:
                self._chunk(f"id: g0\ndata: {DEEP}\n\n")
                self._event(note, "g1")
            if fake.get_stream == "close" and last is None:
                self._event(note, "g1")
                self._end_stream()
                return
            try:
                while not fake.stopping.wait(0.05):
                    self._chunk(": ping\n\n")
            except OSError:
                pass
            self.close_connection = True

        def do_DELETE(self):
            fake.seen.append(("DELETE", urlsplit(self.path).path, self._headers(), None))
            sid = self.headers.get("Mcp-Session-Id")
            with fake._lock:
                fake.sessions.discard(sid)
            self._plain(200, "")

        # -- legacy HTTP+SSE ------------------------------------------------------------

        def _legacy_stream(self):
            self._start_stream()
            lock = threading.Lock()
            with lock:  # known before the endpoint is told: a POST may follow at once
                fake._legacy.append((self, lock))
                self._chunk(f"event: endpoint\ndata: {fake.legacy_endpoint}\n\n")
            try:
                while not fake.stopping.wait(0.05):
                    with lock:
                        self._chunk(": ping\n\n")
            except OSError:
                pass
            self.close_connection = True

        def _legacy_post(self, body):
            query = parse_qs(urlsplit(self.path).query)
            if query.get("session") != ["L1"] or not fake._legacy:
                return self._plain(404, "unknown session")
            self._plain(202, "Accepted")
            if not isinstance(body, dict) or body.get("id") is None or "method" not in body:
                return
            stream, lock = fake._legacy[-1]
            method = body["method"]
            if method == "initialize":
                result = {"protocolVersion": "2024-11-05", "capabilities": {"tools": {}},
                          "serverInfo": {"name": "fault-legacy", "version": "1"}}
            elif method == "tools/list":
                result = {"tools": [{"name": n, "inputSchema": {"type": "object"}}
                                    for n in ("echo", "deep", "huge")]}
            else:
                result = {"content": [{"type": "text", "text": "legacy echo"}]}
                tool = (body.get("params") or {}).get("name")
                with lock:
                    if tool == "deep":
                        stream._chunk(f"data: {DEEP}\n\n")
                    elif tool == "huge" and not stream._huge_event():
                        return
            with lock:
                stream._event({"jsonrpc": "2.0", "id": body["id"], "result": result})

    return Handler
