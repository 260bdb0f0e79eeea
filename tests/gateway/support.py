"""What the gateway's tests share: keys, a relay served by waitress on port 0, a fake upstream
for faults and header echoes, and starting real peers over HTTP (fixtures: conftest.py)."""
from __future__ import annotations

import contextlib
import gzip
import http.client
import json
import os
import resource
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import psutil
import pytest
import requests

from raider_sync.gateway.cli import Serving
from raider_sync.gateway.config import GatewayConfig
from raider_sync.gateway.relay import Relay

from conftest import PEERS, SDK_SERVER, free_port, poll, wait_for_port

ALICE = "alice-key-0123456789"
BOB = "bob-key-9876543210"
UPSTREAM_TOKEN = "operator-upstream-token"
#: the headers of a request made with alice's key
AUTH = {"Authorization": f"Bearer {ALICE}"}


def credentialed(upstream, name: str = "fake", **extra) -> dict:
    """A gateway server entry for ``upstream``: a fixed query, a header of its own and the
    operator's credential (``UPSTREAM_TOKEN``); ``extra`` keys are added or replaced."""
    entry = {"name": name, "url": f"{upstream.url}/base?tenant=t1", "description": "a fake",
             "headers": {"X-Team": "blue"},
             "credential": {"header": "Authorization", "scheme": "Bearer", "env": "UPSTREAM_TOKEN"}}
    entry.update(extra)
    return entry
GATE_TIMEOUT = 10.0
SDK_HTTP_COMMAND = [sys.executable, SDK_SERVER, "streamable-http", "{port}"]
EXPRESS_QUERY_COMMAND = ["node", os.path.join(PEERS, "express_query.mjs"), "{port}"]
ACCEPT = "application/json, text/event-stream"
VERSION = "2025-06-18"
GZIP_BOMB_SIZE = 64 * 1024 * 1024  # once opened; gzip members of 1 MiB of zeros, one after another
GZIP_BOMB = gzip.compress(bytes(1024 * 1024), compresslevel=9) * (GZIP_BOMB_SIZE // (1024 * 1024))


def read_until_closed(sock: socket.socket, limit: int = 1 << 20, *,
                      end: bytes | None = None) -> bytes:
    """Everything the peer sends until it closes, or until what came ends with ``end``
    (bounded by the socket's timeout)."""
    received = b""
    while len(received) < limit and not (end and received.endswith(end)):
        data = sock.recv(65536)
        if not data:
            break
        received += data
    return received


def read_until_answer_ends(sock: socket.socket, limit: int = 1 << 20) -> bytes:
    """Everything the peer sends until its chunked answer's last chunk (``0``) has come, or it
    closes (bounded by the socket's timeout). A connection kept alive after its answer (as
    granian keeps it, until its header deadline for the next request) is not waited out."""
    return read_until_closed(sock, limit, end=b"\r\n0\r\n\r\n")


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
        self.relay = Relay(config, on_usage=self.events.append, threads=threads)
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

    def _mode_sse_cut(self, seen):
        # a stream with a Content-Length that ends before it: no chunking to tell it broke off
        self._send_short("text/event-stream", 1000, b"data: one\n\n")

    def _mode_big(self, seen):
        body = bytes(range(256)) * (8 * 1024 + 1)  # over the relay's one-write limit
        self._send(200, body, content_type="application/octet-stream")

    def _mode_broken(self, seen):
        self._send_short("application/json", 100, b'{"cut": ')

    def _send_short(self, content_type, claimed, body):
        """Claim a Content-Length of ``claimed`` bytes, send only ``body``, end the connection."""
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(claimed))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()
        self.close_connection = True

    def _mode_close_delimited(self, seen):
        # no Content-Length and no chunking: the body ends when the connection does
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"until": ')
        self.wfile.flush()
        self.wfile.write(b'"the close"}')
        self.close_connection = True

    def _mode_malformed(self, seen):
        # a status line no HTTP/1.1 server sends
        self.wfile.write(b"HTTP/1.1 two hundred OK\r\nContent-Length: 2\r\n\r\n{}")
        self.close_connection = True

    def _mode_malformed_chunks(self, seen):
        # a chunk size that is not hexadecimal, after a good first chunk
        self._start_chunked("application/json")
        self._chunk(b'{"part": 1,')
        self.wfile.write(b"zz\r\nnot a chunk\r\n0\r\n\r\n")
        self.close_connection = True

    def _mode_surplus(self, seen):
        # an answer, then bytes nobody asked for on the same connection
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"
                         b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\nunasked")

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


def messages(answer: requests.Response) -> list[dict]:
    """The JSON-RPC messages of an answer: one JSON body, or the data of each SSE event."""
    if answer.headers.get("Content-Type", "").startswith("application/json"):
        return [answer.json()]
    out = []
    for event in answer.text.replace("\r\n", "\n").split("\n\n"):
        data = "\n".join(line[5:].lstrip() for line in event.split("\n") if line.startswith("data:"))
        if data:
            out.append(json.loads(data))
    return out


class Mcp:
    """Just enough of a Streamable HTTP client on ``requests`` to drive a server by hand."""

    def __init__(self, url: str, key: str = ALICE, version: str = VERSION,
                 capabilities: dict | None = None):
        self.url, self.session_id, self.http, self.next_id = url, None, requests.Session(), 1
        self.key, self.version, self.capabilities = key, version, capabilities or {}

    def headers(self, **extra) -> dict:
        headers = {"Authorization": f"Bearer {self.key}", "Accept": ACCEPT,
                   "Content-Type": "application/json", **extra}
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
            headers["Mcp-Protocol-Version"] = self.version
        return headers

    def post(self, message: dict, **kw) -> requests.Response:
        return self.http.post(self.url, headers=self.headers(), data=json.dumps(message),
                              timeout=20, **kw)

    def request(self, method: str, params: dict | None = None) -> dict:
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}}
        self.next_id += 1
        answer = self.post(message)
        assert answer.status_code == 200, (answer.status_code, answer.text)
        found = [m for m in messages(answer) if m.get("id") == message["id"]]
        assert found, answer.text
        return found[0]

    def initialize(self) -> dict:
        answer = self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": self.version, "capabilities": self.capabilities,
            "clientInfo": {"name": "gateway-test", "version": "1"}}})
        assert answer.status_code == 200, answer.text
        self.session_id = answer.headers.get("Mcp-Session-Id")
        assert self.session_id, "the session id did not come through the relay"
        result = messages(answer)[-1]["result"]
        notified = self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert notified.status_code == 202
        return result

    def close(self) -> None:
        self.http.close()


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


# -- many relay processes behind a load balancer -------------------------------------------

_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "te",
        "upgrade", "proxy-connection", "trailer"}


class RoundRobin:
    """A tiny round-robin load balancer as a WSGI app (served by waitress in the tests): each
    request goes to the next backend in turn, with no session affinity; a backend that refuses
    the connection is skipped. ``served`` counts the requests each backend answered."""

    def __init__(self, backends: list[str]):
        self.backends, self.served = backends, [0] * len(backends)
        self.lock, self.turn = threading.Lock(), 0
        self.http = requests.Session()
        self.http.trust_env = False

    def __call__(self, environ, start_response):
        headers = {k[5:].replace("_", "-").title(): v for k, v in environ.items()
                   if k.startswith("HTTP_") and k[5:].replace("_", "-").lower() not in _HOP}
        if environ.get("CONTENT_TYPE"):
            headers["Content-Type"] = environ["CONTENT_TYPE"]
        headers["Connection"] = "close"  # a fresh connection each time: nothing pooled to leak
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else None
        path = environ.get("PATH_INFO", "") + (
            "?" + environ["QUERY_STRING"] if environ.get("QUERY_STRING") else "")
        for _ in range(len(self.backends)):
            with self.lock:
                index, self.turn = self.turn, (self.turn + 1) % len(self.backends)
            try:
                answer = self.http.request(environ["REQUEST_METHOD"], self.backends[index] + path,
                                           headers=headers, data=body, stream=True,
                                           timeout=(2, 30))
            except requests.ConnectionError:
                continue  # that machine is down: the next one
            with self.lock:
                self.served[index] += 1
            start_response(f"{answer.status_code} {answer.reason}",
                           [(k, v) for k, v in answer.headers.items() if k.lower() not in _HOP])
            return _Relayed(answer)
        start_response("502 Bad Gateway", [("Content-Type", "text/plain")])
        return [b"no backend"]

    def close(self) -> None:
        self.http.close()


class _Relayed:
    def __init__(self, answer):
        self.answer = answer

    def __iter__(self):
        yield from self.answer.raw.stream(65536, decode_content=False)

    def close(self):
        self.answer.close()


def relay_process(config_path: str, env: dict, *extra: str,
                  stderr=subprocess.DEVNULL) -> tuple[subprocess.Popen, str]:
    """``raider-sync gateway`` in a process of its own on a free port; waits until it listens
    (bounded). ``stderr``: where its log goes (an open file). Returns (process, base URL)."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "raider_sync", "gateway", "--config", config_path,
         "--listen", f"127.0.0.1:{port}", *extra],
        env={**os.environ, **env}, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=stderr, start_new_session=True)
    try:
        wait_for_port(port, timeout=30, proc=proc)
        if "--workers" in extra:  # gunicorn listens before it forks its workers
            workers = int(extra[list(extra).index("--workers") + 1])
            poll(lambda: len(psutil.Process(proc.pid).children()) >= workers, 30,
                 f"{workers} gateway workers forked")
    except BaseException:
        stop_group(proc)
        raise
    return proc, f"http://127.0.0.1:{port}"


_STREAM_HEAD = b"Accept: text/event-stream\r\nX-Api-Key: " + ALICE.encode() + b"\r\n\r\n"


def address(url: str) -> tuple[str, int]:
    """(host, port) of a base URL such as ``relay_process`` returns."""
    host, port = url.rsplit("/", 1)[-1].split(":")
    return host, int(port)


def open_stream(url: str, mode: str = "sse-hang") -> socket.socket:
    """A raw connection holding ``GET /mcp/fake/<mode>`` once its first event arrived."""
    sock = socket.create_connection(address(url), timeout=10)
    try:
        sock.sendall(f"GET /mcp/fake/{mode} HTTP/1.1\r\nHost: gw\r\n".encode() + _STREAM_HEAD)
        received = b""
        while b"data: one" not in received:
            data = sock.recv(4096)
            assert data, f"the stream was closed: {received[:200]!r}"
            received += data
        assert received.startswith(b"HTTP/1.1 200"), received[:200]
    except BaseException:
        sock.close()
        raise
    return sock


def room_for(sockets: int) -> None:
    """Raise this process's open-file limit (inherited by the relay) to hold ``sockets``."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 4 * sockets
    if soft != resource.RLIM_INFINITY and soft < wanted:
        if hard != resource.RLIM_INFINITY and hard < wanted:
            pytest.skip(f"the open-file limit ({hard}) cannot hold {sockets} sockets twice")
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


def stop_group(proc: subprocess.Popen) -> None:
    """SIGTERM a process started in its own session and its children (gunicorn's workers);
    SIGKILL after a bounded wait."""
    import signal
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(10)
            break
        except subprocess.TimeoutExpired:
            continue
    try:  # gunicorn's workers, should the master have gone first
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@contextlib.contextmanager
def running_upstream():
    """An :class:`Upstream` on port 0 (``.url``) served by a thread, shut down and joined on
    the way out (its held requests released first)."""
    server = Upstream()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              name="fake-upstream")
    thread.start()
    server.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield server
    finally:
        server.gate.set()
        server.shutdown()
        server.close_connections()
        server.server_close()
        thread.join(10)


def count_sends(monkeypatch, port: int | None = None) -> list[bytes]:
    """Every chunk http.client sends from now on (for the test's length), in order; with
    ``port``, every ``sendall()`` of a socket connected to that port instead (whatever
    client sends them)."""
    sent: list[bytes] = []
    if port is not None:
        original_sendall = socket.socket.sendall

        def counted_sendall(sock, data, *args):
            if sock.getpeername()[1] == port:
                sent.append(bytes(data))
            return original_sendall(sock, data, *args)

        monkeypatch.setattr(socket.socket, "sendall", counted_sendall)
        return sent
    original = http.client.HTTPConnection.send

    def counted(conn, data):
        sent.append(bytes(data))
        return original(conn, data)

    monkeypatch.setattr(http.client.HTTPConnection, "send", counted)
    return sent


def served_past_slow_sockets(url: str, slow_sockets: int, legitimate: int) -> None:
    """Hold ``slow_sockets`` connections to the relay at ``url``, each with half a request
    head sent, and make ``legitimate`` calls meanwhile: each is answered 200 (in milliseconds
    when slow sockets cost no thread: threads that read request heads would each be held until
    the header deadline), and every slow socket is still held open, none shed."""
    slow: list[socket.socket] = []
    try:
        for _ in range(slow_sockets):  # each sends half a request head and waits
            sock = socket.create_connection(address(url), timeout=10)
            slow.append(sock)
            sock.sendall(b"POST /mcp/fake HTTP/1.1\r\nHost: gw\r\nX-Slow: ")
        with requests.Session() as http:
            for _ in range(legitimate):
                answer = http.post(f"{url}/mcp/fake", headers=AUTH, json={}, timeout=(5, 8))
                assert answer.status_code == 200, answer.text
        for sock in slow:
            sock.setblocking(False)
            with pytest.raises(BlockingIOError):
                sock.recv(1)
    finally:
        for sock in slow:
            sock.close()


#: the operator's token of the metrics tests
METRICS_TOKEN = "metrics-operator-token-42"


def scrape(url: str, token: str = METRICS_TOKEN) -> dict[tuple, float]:
    """Every sample of ``GET /metrics`` by (sample name, sorted labels), read with
    prometheus-client's own parser."""
    from prometheus_client import parser

    answer = requests.get(f"{url}/metrics", headers={"Authorization": f"Bearer {token}"},
                          timeout=10)
    assert answer.status_code == 200, answer.text
    assert answer.headers["Content-Type"].startswith("text/plain")
    samples = {}
    for family in parser.text_string_to_metric_families(answer.text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples: dict, name: str, **labels: str) -> float:
    """The sample ``name`` with ``labels`` in what :func:`scrape` read; 0 when absent."""
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)
