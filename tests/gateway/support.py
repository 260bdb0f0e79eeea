"""What the gateway's tests share: keys, a relay served by waitress on port 0, a fake upstream
for faults and header echoes, and starting real peers over HTTP (fixtures: conftest.py)."""
from __future__ import annotations

import gzip
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from conftest import SDK_SERVER, free_port, wait_for_port
from raider_sync.gateway.cli import Serving
from raider_sync.gateway.config import GatewayConfig
from raider_sync.gateway.relay import Relay

ALICE = "alice-key-0123456789"
BOB = "bob-key-9876543210"
UPSTREAM_TOKEN = "operator-upstream-token"
GATE_TIMEOUT = 10.0
SDK_HTTP_COMMAND = [sys.executable, SDK_SERVER, "streamable-http", "{port}"]
GZIP_BOMB_SIZE = 64 * 1024 * 1024  # once opened; gzip members of 1 MiB of zeros, one after another
GZIP_BOMB = gzip.compress(bytes(1024 * 1024), compresslevel=9) * (GZIP_BOMB_SIZE // (1024 * 1024))


def wait_until(predicate, timeout: float = 10.0) -> bool:
    """Poll ``predicate`` (bounded) until it is true; returns its last value."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return bool(predicate())
        time.sleep(0.02)
    return True


class Gateway:
    """A relay behind waitress: ``url``, ``relay``, the usage ``events`` it emitted."""

    def __init__(self, config: GatewayConfig, threads: int = 8):
        self.events: list[dict] = []
        self.relay = Relay(config, on_usage=self.events.append)
        self.serving = Serving(self.relay, threads=threads).start()
        self.url = self.serving.url
        self.host, self.port = "127.0.0.1", self.serving.port

    def stop(self) -> None:
        self.relay.close()
        self.serving.stop()

    def wait_events(self, count: int, timeout: float = 10.0) -> list[dict]:
        """The usage events once ``count`` have arrived (a stream's event comes at its close)."""
        assert wait_until(lambda: len(self.events) >= count, timeout), self.events
        return self.events

    def raw(self, method: str, path: str, headers: dict | None = None, body: bytes | None = None,
            timeout: float = 10.0) -> tuple[int, dict, bytes]:
        """One request with ``path`` sent exactly as written (no client-side normalisation)."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            response = conn.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            conn.close()


# -- a fake upstream for what real servers will not do on demand ---------------------------

class Upstream(ThreadingHTTPServer):
    daemon_threads = False
    block_on_close = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[dict] = []
        self.gate = threading.Event()
        self.closed = threading.Event()
        self.sent_first = threading.Event()
        self.connections: set[socket.socket] = set()

    def close_connections(self) -> None:
        """End every open connection so handler threads return (pooled keep-alives too)."""
        for conn in list(self.connections):
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = GATE_TIMEOUT  # no handler waits for a next request longer than this
    server: Upstream

    def setup(self):
        super().setup()
        self.server.connections.add(self.connection)

    def finish(self):
        self.server.connections.discard(self.connection)
        super().finish()

    def log_message(self, *args):  # quiet
        pass

    def do_POST(self):
        self._serve()

    do_GET = do_DELETE = do_PUT = do_POST

    def _serve(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        parts = urlsplit(self.path)
        seen = {"method": self.command, "path": parts.path, "query": parts.query,
                "headers": [[k, v] for k, v in self.headers.items()],
                "body": body.decode("utf-8", "replace")}
        self.server.requests.append(seen)
        mode = parts.path.rsplit("/", 1)[-1]
        getattr(self, f"_mode_{mode.replace('-', '_')}", self._mode_echo)(seen)

    def _send(self, status, body: bytes, content_type="application/json", extra=()):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in extra:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _mode_echo(self, seen):
        self._send(200, json.dumps(seen).encode(), extra=[
            ("Mcp-Session-Id", "up-session"), ("Cache-Control", "no-store"),
            ("Set-Cookie", "upstream=1"), ("X-Upstream-Secret", "internal"),
            ("WWW-Authenticate", "Bearer realm=upstream"), ("Location", "http://10.9.9.9/x"),
            ("X-Powered-By", "fake")])

    def _mode_teapot(self, seen):
        self._send(418, b'{"short": "and stout"}', extra=[("Retry-After", "3")])

    def _mode_accepted(self, seen):
        self.send_response(202)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _chunk(self, data: bytes):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _start_chunked(self, content_type):
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Mcp-Session-Id", "stream-session")
        self.end_headers()

    def _mode_chunked_json(self, seen):
        self._start_chunked("application/json")
        self._chunk(b'{"part": 1,')
        self._chunk(b' "part2": 2}')
        self._chunk(b"")

    def _mode_gzip_chunked(self, seen):
        # an upstream that compresses although the relay asked for identity
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        data = gzip.compress(b'{"zipped": true}')
        self._chunk(data[:10])
        self._chunk(data[10:])
        self._chunk(b"")

    def _mode_gzip_bomb(self, seen):
        # a small answer that would be GZIP_BOMB_SIZE bytes once opened
        self._send(200, GZIP_BOMB, extra=[("Content-Encoding", "gzip")])

    def _mode_sse_truncated(self, seen):
        # the stream breaks off: no last chunk, the connection just ends
        self._start_chunked("text/event-stream")
        self._chunk(b"id: 1\ndata: one\n\n")
        self.close_connection = True

    def _mode_big(self, seen):
        body = bytes(range(256)) * (8 * 1024 + 1)  # over the relay's one-write limit
        self._send(200, body, content_type="application/octet-stream")

    def _mode_broken(self, seen):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "100")
        self.end_headers()
        self.wfile.write(b'{"cut": ')
        self.wfile.flush()
        self.close_connection = True

    def _mode_slow(self, seen):
        self.server.gate.wait(GATE_TIMEOUT)  # released by the test, after the relay gave up
        self.close_connection = True
        try:
            self._send(200, b"{}")
        except OSError:
            pass

    def _mode_sse_gated(self, seen):
        self._start_chunked("text/event-stream")
        self._chunk(b"id: 1\ndata: one\n\n")
        self.server.sent_first.set()
        self.server.gate.wait(GATE_TIMEOUT)
        self._chunk(b"id: 2\ndata: two\n\n")
        self._chunk(b"")

    def _mode_sse_hang(self, seen):
        self._start_chunked("text/event-stream")
        self._chunk(b"data: one\n\n")
        self.server.sent_first.set()
        self.connection.settimeout(GATE_TIMEOUT)
        try:
            if self.connection.recv(1) == b"":  # the relay closed its side
                self.server.closed.set()
        except OSError:
            self.server.closed.set()
        self.close_connection = True


# -- real peers over Streamable HTTP ------------------------------------------------------

def spawn(command: list[str]) -> tuple[subprocess.Popen, int]:
    """Start a peer on a free port (``{port}`` in ``command`` and ``$PORT``); wait until it
    listens (bounded). Returns (process, port)."""
    port = free_port()
    proc = subprocess.Popen([part.replace("{port}", str(port)) for part in command],
                            env={**os.environ, "PORT": str(port)},
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for_port(port, timeout=30, proc=proc)
    except BaseException:
        proc.kill()
        proc.wait(10)
        raise
    return proc, port


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
