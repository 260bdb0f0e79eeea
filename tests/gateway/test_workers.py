"""``raider-sync gateway --workers N``: waitress processes on one socket under gunicorn's
master, against slow clients, dropped streams, smuggling, a worker that dies and SIGTERM.
Each relay runs in a process group of its own on loopback; counts and waits are bounded."""
from __future__ import annotations

import json
import os
import signal
import socket
import sys
import time

import psutil
import pytest
import requests

from gateway.support import (
    ALICE,
    AUTH,
    address,
    open_stream,
    relay_process,
    room_for,
    served_past_slow_sockets,
    spawn,
    stop_group,
    wait_until,
)

pytest.importorskip("gunicorn")

SLOW_SOCKETS = 500
LEGITIMATE = 4


def write_config(tmp_path, upstream, **settings) -> str:
    path = tmp_path / "gateway.json"
    path.write_text(json.dumps({
        "servers": [{"name": "fake", "url": f"{upstream.url}/base"}],
        "keys": [{"id": "alice", "env": "ALICE", "servers": ["fake"]}], **settings}))
    return str(path)


def start(tmp_path, upstream, *extra: str, **settings):
    return relay_process(write_config(tmp_path, upstream, **settings), {"ALICE": ALICE},
                         "--workers", *extra)


def workers_of(proc) -> list[int]:
    try:
        return [child.pid for child in psutil.Process(proc.pid).children()]
    except psutil.Error:
        return []


def test_workers_hold_500_slow_sockets_and_still_serve(tmp_path, upstream):
    room_for(SLOW_SOCKETS)
    proc, url = start(tmp_path, upstream, "2", "--threads", "4")
    try:
        served_past_slow_sockets(url, SLOW_SOCKETS, LEGITIMATE)
    finally:
        stop_group(proc)
    assert len(upstream.requests) == LEGITIMATE  # no slow request got through


def test_workers_free_a_dropped_streams_slot_at_once(tmp_path, upstream):
    # one worker, so the second stream meets the same per-key count as the first
    proc, url = start(tmp_path, upstream, "1", "--threads", "4",
                      limits={"requests_per_key": 4, "streams_per_key": 1})
    held: list[requests.Response] = []
    try:
        first = open_stream(url)
        with first:
            refused = requests.get(f"{url}/mcp/fake/sse-hang", timeout=10,
                                   headers={**AUTH, "Accept": "text/event-stream"})
            assert refused.status_code == 429  # the key's one stream is taken
        # the client is gone and the upstream stays silent (it would end the stream itself
        # only after 10 s): the relay must notice on its own
        def reopened() -> bool:
            answer = requests.get(f"{url}/mcp/fake/sse-gated", stream=True, timeout=10,
                                  headers={**AUTH, "Accept": "text/event-stream"})
            held.append(answer)
            return answer.status_code == 200

        # the relay checks for gone clients every 0.2 s; the upstream pings every 20 s or so
        assert wait_until(reopened, timeout=4), "the dropped stream still held the key's slot"
        assert upstream.closed.wait(5)  # and its upstream connection was closed
    finally:
        upstream.gate.set()
        for answer in held:
            answer.close()
        stop_group(proc)


def test_workers_refuse_content_length_with_transfer_encoding(tmp_path, upstream):
    proc, url = start(tmp_path, upstream, "1", "--threads", "2")
    key = b"Authorization: Bearer " + ALICE.encode() + b"\r\n"
    smuggled = b"GET /mcp/fake/smuggled HTTP/1.1\r\nHost: gw\r\n" + key + b"\r\n"
    body = b"0\r\n\r\n" + smuggled
    try:
        with socket.create_connection(address(url), timeout=10) as sock:
            sock.sendall(b"POST /mcp/fake HTTP/1.1\r\nHost: gw\r\n" + key
                         + b"Content-Type: application/json\r\nContent-Length: %d\r\n" % len(body)
                         + b"Transfer-Encoding: chunked\r\n\r\n" + body)
            received = b""
            while data := sock.recv(65536):  # ends only because the relay closes
                received += data
    finally:
        stop_group(proc)
    assert received.startswith(b"HTTP/1.1 400"), received[:200]
    assert received.count(b"HTTP/1.1 ") == 1  # the smuggled request was never answered
    assert upstream.requests == []


def test_workers_cut_off_a_client_that_trickles_its_headers(tmp_path, upstream):
    proc, url = start(tmp_path, upstream, "1", "--threads", "2", "--header-timeout", "1")
    try:
        with socket.create_connection(address(url), timeout=15) as sock:
            sock.sendall(b"GET /v1/mcp/servers HTTP/1.1\r\nHost: gw\r\nX-Slow: ")
            deadline = time.monotonic() + 10
            closed = False
            while not closed and time.monotonic() < deadline:
                try:  # a byte every 0.2 s: never silent long enough for an idle timeout
                    sock.sendall(b"x")
                    sock.settimeout(0.2)
                    closed = sock.recv(4096) == b""
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


def test_a_worker_that_dies_is_replaced(tmp_path, upstream):
    proc, url = start(tmp_path, upstream, "1", "--threads", "2")
    try:
        assert requests.post(f"{url}/mcp/fake", headers=AUTH, json={}, timeout=10).ok
        assert wait_until(lambda: len(workers_of(proc)) == 1)
        [dead] = workers_of(proc)
        os.kill(dead, signal.SIGKILL)
        assert wait_until(lambda: workers_of(proc) not in ([], [dead]), timeout=20)
        assert requests.post(f"{url}/mcp/fake", headers=AUTH, json={}, timeout=10).ok
        assert proc.poll() is None
    finally:
        stop_group(proc)


def test_sigterm_to_the_master_ends_every_worker_and_its_streams(tmp_path, upstream):
    proc, url = start(tmp_path, upstream, "2", "--threads", "4")
    try:
        assert wait_until(lambda: len(workers_of(proc)) == 2, timeout=20)
        stream = open_stream(url)
        with stream:
            workers = workers_of(proc)
            started = time.monotonic()
            os.kill(proc.pid, signal.SIGTERM)  # the master alone, as a service manager does
            assert proc.wait(15) == 0
            # before gunicorn's graceful timeout (10 s), when it would SIGKILL the workers
            assert time.monotonic() - started < 9
            assert not any(psutil.pid_exists(pid) for pid in workers)
            stream.settimeout(5)
            while stream.recv(4096):  # the client's stream ends...
                pass
        assert upstream.closed.wait(5)  # ... and so does the upstream's
    finally:
        stop_group(proc)


def test_gunicorn_by_hand_serves_with_the_same_waitress_workers(tmp_path, upstream, monkeypatch):
    from raider_sync.gateway.workers import WORKER_CLASS

    monkeypatch.setenv("RAIDER_GATEWAY_CONFIG", write_config(tmp_path, upstream))
    monkeypatch.setenv("ALICE", ALICE)
    proc, port = spawn([sys.executable, "-m", "gunicorn", "--worker-class", WORKER_CLASS,
                        "--workers", "1", "--threads", "4", "--bind", "127.0.0.1:{port}",
                        "--no-control-socket", "raider_sync.gateway.relay:app_from_env(threads=4)"])
    try:
        answer = requests.post(f"http://127.0.0.1:{port}/mcp/fake", headers=AUTH, json={},
                               timeout=10)
        assert answer.status_code == 200
        assert answer.headers["Server"] == "raider-sync-gateway"  # waitress, not gunicorn's own
    finally:
        stop_group(proc)
