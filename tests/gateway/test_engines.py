"""The serving engines side by side: ``raider-sync gateway`` under waitress (the default) and
under ``--server granian``, each in a process group of its own on loopback, against what the
relay withstands: slow clients, headers trickled or too large, request smuggling, many held
streams, per-key limits, keys reloaded on SIGHUP while streams stay open, SIGTERM with streams
open. Request bodies over both (and gunicorn): test_bodies.py. Counts and waits are bounded."""
from __future__ import annotations

import io
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import psutil
import pytest
import requests

from conftest import free_port
from gateway.support import (
    ALICE,
    AUTH,
    BOB,
    METRICS_TOKEN,
    address,
    open_stream,
    read_until_answer_ends,
    read_until_closed,
    relay_process,
    room_for,
    scrape,
    served_past_slow_sockets,
    stop_group,
    value,
    wait_until,
)

SLOW_SOCKETS = 500
LEGITIMATE = 4
STREAMS = 40  # the short form of the benchmark's 1,000


@pytest.fixture(params=["waitress", "granian"])
def engine(request) -> list[str]:
    """The command-line arguments that pick the engine."""
    if request.param == "granian":
        pytest.importorskip("granian")
        return ["--server", "granian"]
    return []


def write_config(tmp_path, upstream, **settings) -> str:
    """The path of a config relaying to ``upstream`` as ``fake``, for alice's key (unless
    ``settings`` give keys or a keys folder), with ``settings`` added."""
    path = tmp_path / "gateway.json"
    if "keys_dir" not in settings:
        settings.setdefault("keys", [{"id": "alice", "env": "ALICE", "servers": ["fake"]}])
    path.write_text(json.dumps({"servers": [{"name": "fake", "url": f"{upstream.url}/base"}],
                                **settings}))
    return str(path)


def start(tmp_path, upstream, engine: list[str], *extra: str, stderr=subprocess.DEVNULL,
          **settings):
    """The relay for ``upstream`` (alice's key, or the keys of ``settings``) on a free port;
    its log to ``stderr`` (an open file)."""
    return relay_process(write_config(tmp_path, upstream, **settings), {"ALICE": ALICE},
                         *engine, *extra, stderr=stderr)


def test_slow_sockets_cost_no_thread_and_legitimate_calls_are_served(tmp_path, upstream, engine):
    room_for(SLOW_SOCKETS)
    proc, url = start(tmp_path, upstream, engine, "--threads", "4")
    try:
        served_past_slow_sockets(url, SLOW_SOCKETS, LEGITIMATE)
    finally:
        stop_group(proc)
    assert len(upstream.requests) == LEGITIMATE  # no slow request got through


def test_headers_trickled_byte_by_byte_are_cut_off_at_the_deadline(tmp_path, upstream, engine):
    proc, url = start(tmp_path, upstream, engine, "--threads", "2", "--header-timeout", "1")
    try:
        with socket.create_connection(address(url), timeout=15) as sock:
            sock.sendall(b"GET /v1/mcp/servers HTTP/1.1\r\nHost: gw\r\nX-Slow: ")
            deadline = time.monotonic() + 10
            closed = False
            while not closed and time.monotonic() < deadline:
                try:  # a byte every 0.2 s: never silent long enough for an idle timeout
                    sock.sendall(b"x")
                    sock.settimeout(0.2)
                    data = sock.recv(4096)
                    # the deadline may be answered (granian: 408) before the close
                    assert data == b"" or b" 200 " not in data.split(b"\r\n")[0], data[:100]
                    closed = data == b"" or read_until_closed(sock) is not None
                except TimeoutError:
                    continue
                except OSError:
                    closed = True
            assert closed, "a trickling client held its connection past the header deadline"
        answer = requests.get(f"{url}/v1/mcp/servers", headers={"X-Api-Key": ALICE}, timeout=15)
        assert answer.status_code == 200
    finally:
        stop_group(proc)
    assert upstream.requests == []


def test_content_length_with_transfer_encoding_is_refused_before_the_upstream(
        tmp_path, upstream, engine):
    proc, url = start(tmp_path, upstream, engine, "--threads", "2")
    key = b"Authorization: Bearer " + ALICE.encode() + b"\r\n"
    smuggled = b"GET /mcp/fake/smuggled HTTP/1.1\r\nHost: gw\r\n" + key + b"\r\n"
    body = b"0\r\n\r\n" + smuggled
    try:
        with socket.create_connection(address(url), timeout=10) as sock:
            sock.sendall(b"POST /mcp/fake HTTP/1.1\r\nHost: gw\r\n" + key
                         + b"Content-Type: application/json\r\nContent-Length: %d\r\n" % len(body)
                         + b"Transfer-Encoding: chunked\r\n\r\n" + body)
            received = read_until_closed(sock)  # returns only because the relay closes
    finally:
        stop_group(proc)
    assert received.startswith(b"HTTP/1.1 400"), received[:200]
    assert received.count(b"HTTP/1.1 ") == 1  # the smuggled request was never answered
    assert upstream.requests == []  # ... nor relayed, and neither was the first


def test_headers_over_the_limit_are_431_and_never_relayed(tmp_path, upstream, engine):
    proc, url = start(tmp_path, upstream, engine, "--threads", "2")
    head = (b"POST /mcp/fake HTTP/1.1\r\nHost: gw\r\nX-Api-Key: " + ALICE.encode()
            + b"\r\nX-Big: " + b"a" * (512 * 1024) + b"\r\nContent-Length: 2\r\n\r\n{}")
    received = b""
    try:
        with socket.create_connection(address(url), timeout=10) as sock:
            def send() -> None:
                try:
                    sock.sendall(head)
                except OSError:  # refused before the rest of the head was sent
                    pass

            # the answer is read while the head is still being sent: the server answers as soon
            # as the limit is passed and closes with the rest unread, which resets the connection
            sender = threading.Thread(target=send, name="test-big-head")
            sender.start()
            try:
                while data := sock.recv(65536):
                    received += data
            except ConnectionResetError:
                pass
            finally:
                sender.join(10)
    finally:
        stop_group(proc)
    assert received.split(b"\r\n")[0].split(b" ")[1] == b"431", received[:200]
    assert upstream.requests == []


def test_held_streams_leave_room_for_legitimate_requests(tmp_path, upstream, engine):
    # each relayed stream holds a thread under both engines: --threads leaves room for more
    proc, url = start(tmp_path, upstream, engine, "--threads", str(STREAMS + 8),
                      limits={"requests_per_key": 2 * STREAMS, "streams_per_key": STREAMS})
    socks: list[socket.socket] = []
    try:
        for _ in range(STREAMS):
            socks.append(open_stream(url, "sse-gated"))
        with requests.Session() as http:
            for _ in range(3):
                answer = http.post(f"{url}/mcp/fake", headers=AUTH, json={}, timeout=10)
                assert answer.status_code == 200
        upstream.gate.set()  # every stream goes on to its end
        for sock in socks:
            assert read_until_answer_ends(sock).endswith(b"data: two\n\n\r\n0\r\n\r\n")
    finally:
        upstream.gate.set()
        for sock in socks:
            sock.close()
        stop_group(proc)
    assert sum(r["path"].endswith("/sse-gated") for r in upstream.requests) == STREAMS


def test_a_keys_streams_over_its_limit_are_429_with_retry_after(tmp_path, upstream, engine):
    proc, url = start(tmp_path, upstream, engine, "--threads", "8",
                      limits={"requests_per_key": 4, "streams_per_key": 1})
    try:
        with open_stream(url, "sse-gated"):
            refused = requests.get(f"{url}/mcp/fake/sse-gated", timeout=10,
                                   headers={**AUTH, "Accept": "text/event-stream"})
            assert refused.status_code == 429 and refused.headers["Retry-After"] == "1"
            assert refused.json()["error"]["type"] == "too_many_requests"
            upstream.gate.set()
    finally:
        upstream.gate.set()
        stop_group(proc)


def test_sighup_reloads_the_keys_and_keeps_an_open_stream(tmp_path, upstream, engine):
    keys = tmp_path / "keys"
    keys.mkdir()
    (keys / "alice.json").write_text(json.dumps({"id": "alice", "key": ALICE, "servers": ["fake"]}))
    proc, url = start(tmp_path, upstream, engine, "--threads", "4", keys_dir=str(keys))
    bob = {"X-Api-Key": BOB}
    try:
        before = {p.pid for p in psutil.Process(proc.pid).children(recursive=True)}
        with open_stream(url, "sse-gated") as stream:
            assert requests.get(f"{url}/v1/mcp/servers", headers=bob, timeout=10).status_code == 401
            (keys / "bob.json").write_text(json.dumps({"id": "bob", "key": BOB, "servers": ["fake"]}))
            os.kill(proc.pid, signal.SIGHUP)  # the master alone, as a service manager does
            assert wait_until(lambda: requests.get(f"{url}/v1/mcp/servers", headers=bob,
                                                   timeout=10).status_code == 200, timeout=15)
            upstream.gate.set()  # alice's stream, opened before, goes on to its end
            assert read_until_answer_ends(stream).endswith(b"data: two\n\n\r\n0\r\n\r\n")
        assert proc.poll() is None
        # the workers re-read their keys: none was respawned (granian's own SIGHUP would)
        assert {p.pid for p in psutil.Process(proc.pid).children(recursive=True)} == before
    finally:
        upstream.gate.set()
        stop_group(proc)


def test_sigterm_ends_the_open_streams_and_every_process(tmp_path, upstream, engine):
    with open(tmp_path / "gateway.log", "w+b") as log:
        proc, url = start(tmp_path, upstream, engine, "--threads", "4", stderr=log)
        try:
            stream = open_stream(url)
            with stream:
                children = [p.pid for p in psutil.Process(proc.pid).children(recursive=True)]
                started = time.monotonic()
                os.kill(proc.pid, signal.SIGTERM)
                assert proc.wait(15) == 0
                assert time.monotonic() - started < 9  # before any kill after a graceful timeout
                assert not any(psutil.pid_exists(pid) for pid in children)
                stream.settimeout(5)
                read_until_closed(stream)  # the client's stream ends...
            assert upstream.closed.wait(5)  # ... and so does the upstream's
        finally:
            stop_group(proc)
        log.seek(0)
        said = log.read().decode(errors="replace")
    # the streams are ended before the worker threads are waited for: waitress's own
    # handling of the signal waited 5 s for the thread of the open stream, then gave up on it
    assert "still running" not in said, said
    assert "Traceback" not in said, said


# -- granian's own ---------------------------------------------------------------------------

@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_granian_stops_at_once_when_told_to_while_its_workers_start(tmp_path, upstream, sig):
    # a worker is told to stop while it still starts: between the fork and its relay's
    # build it used to run the master's handlers it inherited, and the signal was lost
    # until granian killed the worker after its grace period (10 s, every time)
    pytest.importorskip("granian")
    proc = subprocess.Popen(
        [sys.executable, "-m", "raider_sync", "gateway", "--server", "granian", "--workers", "2",
         "--config", write_config(tmp_path, upstream), "--listen", f"127.0.0.1:{free_port()}"],
        env={**os.environ, "ALICE": ALICE}, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        # the moment both are forked, which a poll with pauses would miss: a tight loop,
        # bounded by its deadline
        deadline = time.monotonic() + 30
        while len(workers := [p.pid for p in psutil.Process(proc.pid).children()]) < 2:
            assert time.monotonic() < deadline and proc.poll() is None, "no two workers forked"
        started = time.monotonic()
        os.kill(proc.pid, sig)
        assert proc.wait(15) == 0
        assert time.monotonic() - started < 9  # before granian's kill after its grace
        assert not any(psutil.pid_exists(pid) for pid in workers)
    finally:
        stop_group(proc)


def test_granian_refuses_an_address_in_use(tmp_path, upstream):
    # its workers listen with SO_REUSEPORT, which alone would share the port with another
    # granian; the gateway checks the address first
    pytest.importorskip("granian")
    path = tmp_path / "gateway.json"
    path.write_text(json.dumps({"servers": [{"name": "fake", "url": f"{upstream.url}/base"}],
                                "keys": [{"id": "alice", "env": "ALICE", "servers": ["fake"]}]}))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "raider_sync", "gateway", "--server", "granian", "--config",
             str(path), "--listen", f"127.0.0.1:{port}"], env={**os.environ, "ALICE": ALICE},
            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 1, done.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr


def test_granian_workers_each_reload_their_keys_on_sighup(tmp_path, upstream):
    pytest.importorskip("granian")
    keys = tmp_path / "keys"
    keys.mkdir()
    (keys / "alice.json").write_text(json.dumps({"id": "alice", "key": ALICE, "servers": ["fake"]}))
    proc, url = start(tmp_path, upstream, ["--server", "granian"], "--workers", "2",
                      "--threads", "2", keys_dir=str(keys))
    bob = {"X-Api-Key": BOB, "Connection": "close"}  # a new connection, to either worker, each time
    try:
        workers = {p.pid for p in psutil.Process(proc.pid).children()}
        assert len(workers) == 2
        (keys / "bob.json").write_text(json.dumps({"id": "bob", "key": BOB, "servers": ["fake"]}))
        os.kill(proc.pid, signal.SIGHUP)
        # SO_REUSEPORT spreads new connections over both workers: 16 in a row are all served
        # only once both have the key (a worker without it answers 401)
        assert wait_until(lambda: all(
            requests.get(f"{url}/v1/mcp/servers", headers=bob, timeout=10).status_code == 200
            for _ in range(16)), timeout=20)
        after = {p.pid for p in psutil.Process(proc.pid).children()}
        assert after == workers, (workers, after)  # none respawned, as granian's SIGHUP would
    finally:
        stop_group(proc)


def test_no_variable_of_the_relays_environment_reaches_a_request(tmp_path, upstream, engine):
    # granian's own WSGI callback starts each environ from os.environ: a variable named like a
    # header would be every request's header
    path = tmp_path / "gateway.json"
    path.write_text(json.dumps({"servers": [{"name": "fake", "url": f"{upstream.url}/base"}],
                                "keys": [{"id": "alice", "env": "ALICE", "servers": ["fake"]}]}))
    proc, url = relay_process(str(path), {"ALICE": ALICE, "HTTP_X_API_KEY": ALICE,
                                          "HTTP_AUTHORIZATION": f"Bearer {ALICE}",
                                          "HTTP_MCP_SESSION_ID": "from-the-environment"},
                              *engine, "--threads", "2")
    try:
        assert requests.get(f"{url}/v1/mcp/servers", timeout=10).status_code == 401
        answer = requests.post(f"{url}/mcp/fake", headers=AUTH, json={}, timeout=10)
        assert answer.status_code == 200
    finally:
        stop_group(proc)
    [seen] = upstream.requests
    assert not any(value == "from-the-environment" for _, value in seen["headers"])


# -- the granian seams, in this process ----------------------------------------------------------

def test_granian_settings_follow_the_gateways_options():
    pytest.importorskip("granian")
    from raider_sync.gateway.engines import HEADER_BYTES, granian_settings
    from raider_sync.gateway.serving import connection_limit

    settings = granian_settings(16, header_timeout=2.5, connections=500, workers=3)
    assert (settings["blocking_threads"], settings["backpressure"], settings["workers"]) == (
        16, 500, 3)
    assert settings["http1_settings"].header_read_timeout == 2500  # milliseconds
    assert settings["http1_settings"].max_buffer_size == HEADER_BYTES
    assert settings["http"] == "1" and settings["websockets"] is False
    assert granian_settings(16)["backpressure"] == connection_limit(16)
    assert granian_settings(0, workers=0)["blocking_threads"] == 1
    assert granian_settings(0, workers=0)["workers"] == 1


class _Proto:
    """What granian's Rust side gives the callback: it records the answer."""

    def __init__(self):
        self.answers = []

    def response_bytes(self, status, headers, body):
        self.answers.append((status, headers, body))

    def response_iter(self, status, headers, body):
        pieces = []
        while True:  # as granian reads it: __next__ until StopIteration, then close()
            try:
                pieces.append(body.__next__())
            except StopIteration:
                break
        body.close()
        self.answers.append((status, headers, b"".join(pieces)))


def test_the_granian_callback_gives_the_app_the_request_alone_and_a_write(monkeypatch):
    from raider_sync.gateway.engines import _callback

    monkeypatch.setenv("HTTP_X_API_KEY", "from-the-environment")
    seen = {}

    def app(environ, start_response):
        seen.update(environ)
        write = start_response("201 Created", [("Content-Type", "text/plain")])
        write(b"")  # the relay's way of sending a stream's head at once
        with pytest.raises(NotImplementedError):
            write(b"body")
        return iter([b"a", b"b"]) if environ["PATH_INFO"] == "/iter" else [b"ab"]

    proto = _Proto()
    run = _callback(app)
    scope = {"REQUEST_METHOD": "GET", "PATH_INFO": "/list", "HTTP_HOST": "gw"}
    assert run(proto, scope) == 201
    assert run(proto, {**scope, "PATH_INFO": "/iter"}) == 201
    assert proto.answers == [(201, [("Content-Type", "text/plain")], b"ab")] * 2
    assert "HTTP_X_API_KEY" not in seen and "PATH" not in seen
    assert seen["HTTP_HOST"] == "gw" and seen["wsgi.version"] == (1, 0)


def test_granian_app_reads_no_chunked_body_and_ends_its_streams_on_close():
    from raider_sync.gateway.engines import GranianApp
    from raider_sync.gateway.serving import BodyCut

    class Stream:
        aborted = False

        def __iter__(self):
            return iter([b"data: one\n\n"])

        def abort(self):
            self.aborted = True

    class App:
        closed = False

        def __call__(self, environ, start_response):
            if environ.get("HTTP_TRANSFER_ENCODING"):
                with pytest.raises(BodyCut, match="send Content-Length"):
                    environ["wsgi.input"].read(10)
                return [b"refused"]
            assert environ["wsgi.input"].read() == b"{}"
            return Stream()

        def close(self):
            self.closed = True

    inner = App()
    app = GranianApp(inner)
    assert app(_environ(b"{}", {"HTTP_TRANSFER_ENCODING": "chunked"}), None) == [b"refused"]
    stream = app(_environ(b"{}"), None)
    app.close()
    assert inner.closed and stream.aborted
    app.close()  # may be called twice


def _environ(body: bytes, extra: dict | None = None) -> dict:
    return {"REQUEST_METHOD": "POST", "wsgi.input": io.BytesIO(body), **(extra or {})}


def test_another_granian_without_the_worker_hooks_is_refused(monkeypatch):
    """The hooks are granian 2.8's own names: a granian without them would call the relay with
    the process environment in every request's environ, so the worker refuses to serve."""
    pytest.importorskip("granian")
    from granian.server import mp

    from raider_sync.gateway.engines import GranianApp, _hook_worker

    monkeypatch.delattr(mp, "_wsgi_call_wrap")
    app = GranianApp(lambda environ, start_response: [])
    with pytest.raises(RuntimeError, match="granian==2.8.7"):
        _hook_worker(app)


# Run in a child: it replaces the process's SIGINT and SIGTERM handlers and granian's hooks
_SECOND_SIGNAL = """
import os, signal
from granian import _signals
from raider_sync.gateway.engines import GranianApp, _hook_worker

stops, closes = [], []

def granians_own():  # what granian's set_sync_signals does, counted
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda signum, frame: stops.append(signum))
    return "event"

class Relay:
    def __call__(self, environ, start_response):
        return []

    def close(self):
        closes.append(1)
        os.kill(os.getpid(), signal.SIGTERM)  # the master's SIGTERM, while this one closes

_signals.set_sync_signals = granians_own
_hook_worker(GranianApp(Relay()))
assert _signals.set_sync_signals() == "event"
os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C, which reaches every process of the group
print(len(closes), sorted(stops))
"""


def test_a_second_signal_while_the_worker_closes_stops_it_without_closing_again():
    """Ctrl-C reaches granian's master and its workers, and the master then sends each worker
    SIGTERM: the second signal runs inside the first one's close(). It must not close again
    (it would wait on a lock the interrupted close holds, and the worker would be killed
    after the grace period), but still tell granian to stop."""
    pytest.importorskip("granian")
    done = subprocess.run([sys.executable, "-c", _SECOND_SIGNAL], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == f"1 {sorted([int(signal.SIGINT), int(signal.SIGTERM)])}"


def test_a_dead_workers_open_streams_leave_the_metrics(tmp_path, upstream, engine):
    # under several workers the gauges live in files of the metrics folder, one per process:
    # those of a worker that died must go with it, or every scrape counts its streams forever
    pytest.importorskip("prometheus_client.parser")
    if not engine:
        pytest.importorskip("gunicorn")
    folder = tmp_path / "metrics"
    folder.mkdir()
    path = write_config(tmp_path, upstream, metrics={"env": "METRICS"})
    proc, url = relay_process(path, {"ALICE": ALICE, "METRICS": METRICS_TOKEN,
                                     "PROMETHEUS_MULTIPROC_DIR": str(folder)},
                              *engine, "--workers", "2", "--threads", "4")

    def open_streams() -> float:
        return value(scrape(url), "raider_gateway_open_streams", key="alice", server="fake")

    try:
        with open_stream(url, "sse-gated"):
            assert wait_until(lambda: open_streams() == 1)
            # the worker holding the stream is the one with a live gauge's file
            [holder] = {int(name.stem.rsplit("_", 1)[1])
                        for name in folder.glob("gauge_livesum_*.db")}
            assert holder in {p.pid for p in psutil.Process(proc.pid).children()}
            os.kill(holder, signal.SIGKILL)
            assert wait_until(lambda: holder not in {
                p.pid for p in psutil.Process(proc.pid).children()}, timeout=20)
            assert wait_until(lambda: open_streams() == 0, timeout=20)
        assert wait_until(lambda: len(psutil.Process(proc.pid).children()) == 2, timeout=20)
        assert requests.post(f"{url}/mcp/fake", headers=AUTH, json={}, timeout=10).ok
        assert proc.poll() is None
    finally:
        upstream.gate.set()
        stop_group(proc)
