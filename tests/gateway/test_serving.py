"""The relay under waitress against slow clients: many half-sent requests, and one that trickles
its headers forever. Loopback only, bounded counts, every wait bounded."""
from __future__ import annotations

import resource
import select
import socket
import subprocess
import sys
import threading
import time

import pytest
import requests

from raider_sync.gateway.serving import Serving, connection_limit, waitress_settings

from gateway.support import ALICE, AUTH, Gateway

SLOW_CLIENTS = 150


def fake(upstream):
    return {"name": "fake", "url": f"{upstream.url}/base"}


def open_slow(gw: Gateway, count: int) -> list[socket.socket]:
    """``count`` connections that each sent the start of a request's headers and no more."""
    socks = []
    for _ in range(count):
        sock = socket.create_connection((gw.host, gw.port), timeout=10)
        sock.sendall(b"GET /mcp/fake HTTP/1.1\r\nHost: gw\r\nX-Slow: ")
        socks.append(sock)
    return socks


def test_many_slow_connections_leave_room_for_legitimate_requests(make_gateway, upstream):
    gw = make_gateway([fake(upstream)], threads=4)
    slow = open_slow(gw, SLOW_CLIENTS)  # more than waitress's default connection limit of 100
    try:
        for _ in range(3):
            answer = requests.post(f"{gw.url}/mcp/fake", headers=AUTH, json={}, timeout=10)
            assert answer.status_code == 200
    finally:
        for sock in slow:
            sock.close()
    assert all(r["method"] == "POST" for r in upstream.requests)  # no slow one got through


def test_headers_trickled_byte_by_byte_are_cut_off(upstream):
    from raider_sync.gateway.config import GatewayConfig
    from raider_sync.gateway.relay import Relay

    config = GatewayConfig.from_dict({"servers": [fake(upstream)],
                                      "keys": [{"id": "alice", "env": "A", "servers": ["fake"]}]},
                                     env={"A": ALICE})
    with Relay(config) as relay:
        serving = Serving(relay, threads=2, header_timeout=1.0).start()
        try:
            sock = socket.create_connection(("127.0.0.1", serving.port), timeout=10)
            with sock:
                sock.sendall(b"GET /mcp/fake HTTP/1.1\r\nHost: gw\r\nX-Slow: ")
                deadline = time.monotonic() + 15
                closed = False
                while time.monotonic() < deadline and not closed:
                    # one byte every 0.2 s: never silent long enough for an idle timeout
                    readable, _, _ = select.select([sock], [], [], 0.2)
                    if readable:
                        closed = sock.recv(4096) == b""
                        assert closed, "the request was answered"
                    else:
                        try:
                            sock.sendall(b"x")
                        except OSError:
                            closed = True
                assert closed, "a trickling client held its connection past the header deadline"
        finally:
            serving.stop()
    assert upstream.requests == []


def test_the_connection_limit_grows_with_the_open_file_limit_not_stuck_at_100(monkeypatch):
    monkeypatch.setattr(resource, "getrlimit", lambda which: (4096, 4096))
    assert connection_limit(16) == 2016  # half of what the threads' upstreams leave
    monkeypatch.setattr(resource, "getrlimit", lambda which: (256, 256))
    assert connection_limit(16) == 100  # never below waitress's own default
    monkeypatch.setattr(resource, "getrlimit", lambda which: (10**6, 10**6))
    assert connection_limit(16) == 10_000
    settings = waitress_settings(16)
    assert settings["asyncore_use_poll"] is True  # select() stops at 1,024 sockets
    assert settings["connection_limit"] == connection_limit(16)
    assert waitress_settings(16, connections=5000)["connection_limit"] == 5000


def test_many_open_streams_leave_room_for_legitimate_requests(make_gateway, upstream):
    # the short form of the benchmark's 1,000 streams: each stream holds a thread
    streams = 40
    gw = make_gateway([fake(upstream)], threads=streams + 8,
                      limits={"requests_per_key": 2 * streams, "streams_per_key": streams})
    socks = []
    try:
        for _ in range(streams):
            sock = socket.create_connection((gw.host, gw.port), timeout=10)
            socks.append(sock)
            sock.sendall(b"GET /mcp/fake/sse-gated HTTP/1.1\r\nHost: gw\r\nAccept: text/event-stream\r\n"
                         b"X-Api-Key: " + ALICE.encode() + b"\r\n\r\n")
        for sock in socks:
            received = b""
            while b"data: one" not in received:
                data = sock.recv(4096)
                assert data, "a stream was closed"
                received += data
        assert gw.relay._limits.held("alice") == (streams, streams)
        for _ in range(3):
            answer = requests.post(f"{gw.url}/mcp/fake", headers=AUTH, json={}, timeout=10)
            assert answer.status_code == 200
    finally:
        upstream.gate.set()
        for sock in socks:
            sock.close()


def test_a_small_answer_leaves_in_one_send_with_its_head():
    from waitress.channel import HTTPChannel

    def app(environ, start_response):  # waitress drops the body of a 204
        status = "204 No Content" if environ["PATH_INFO"] == "/none" else "200 OK"
        start_response(status, [("Content-Type", "application/json")])
        return [b'{"ok": true}']

    serving = Serving(app, threads=2).start()
    sent: list[bytes] = []
    original = HTTPChannel.write_soon

    def counted(channel, data):
        sent.append(bytes(data))
        return original(channel, data)

    HTTPChannel.write_soon = counted
    try:
        with requests.Session() as http:
            got = http.get(serving.url, timeout=10)
            none = http.get(f"{serving.url}/none", timeout=10)
    finally:
        HTTPChannel.write_soon = original
        serving.stop()
    assert got.status_code == 200 and got.content == b'{"ok": true}'
    assert none.status_code == 204 and none.content == b""
    assert len(sent) == 2  # one hand-over per answer: the head and the body together
    assert sent[0].startswith(b"HTTP/1.1 200 OK") and sent[0].endswith(b'\r\n\r\n{"ok": true}')
    assert sent[1].startswith(b"HTTP/1.1 204 No Content") and sent[1].endswith(b"\r\n\r\n")


def test_stop_closes_the_trigger_only_once_the_workers_are_done():
    """Regression: stop() closed the loop's trigger with the connections, while a worker could
    still be finishing a request. Its wake-up of the loop then wrote to a closed descriptor:
    an OSError traceback on Ctrl-C of ``raider_sync serve --http``, or a stray byte in
    whatever file got that descriptor's number next."""
    inside, release = threading.Event(), threading.Event()

    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain")])
        inside.set()
        release.wait(10)
        return [b"done"]

    serving = Serving(app, threads=2).start()
    trigger = serving.server.trigger
    stopper = threading.Thread(target=serving.stop, args=(10,), name="test-stop")
    with socket.create_connection((serving.host, serving.port), timeout=10) as client:
        client.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert inside.wait(10)
        stopper.start()
        assert client.recv(1) == b"", "stop() closes the connection while the app still runs"
        open_while_working = not trigger._closed
    release.set()
    stopper.join(15)
    assert not stopper.is_alive()
    assert open_while_working, "the trigger was closed while a worker still ran"
    assert trigger._closed and not serving.server._map


def test_a_host_with_several_addresses_is_refused_with_nothing_left_listening(monkeypatch):
    # waitress listens on every address of a host name, with a server of another kind that
    # has none of the hooks Serving sets; a name that resolves to two loopback addresses
    # stands for "localhost" on a machine with IPv4 and IPv6
    import waitress.server

    from raider_sync.errors import InvalidArgument

    real = socket.getaddrinfo

    def two(host, *args, **kwargs):
        found = real("127.0.0.1", *args, **kwargs)
        return found * 2 if host == "two.test" else real(host, *args, **kwargs)

    listening: list[socket.socket] = []
    create = waitress.server.create_server

    def recorded(*args, **kwargs):
        server = create(*args, **kwargs)
        listening.extend(d.socket for d in server.map.values()
                         if isinstance(d, waitress.server.BaseWSGIServer))
        return server

    monkeypatch.setattr(socket, "getaddrinfo", two)
    monkeypatch.setattr(waitress.server, "create_server", recorded)
    with pytest.raises(InvalidArgument, match="'two.test' has 2 addresses"):
        Serving(lambda environ, start_response: [], host="two.test", threads=1)
    assert len(listening) == 2
    assert all(sock.fileno() == -1 for sock in listening)  # closed, not left to the collector


# Run in a child: it blocks SIGHUP and starts a thread that lives as long as the process.
# A worker's relay is built with SIGHUP taken by a thread of its own: one that comes after its
# keys were read (the master passing on a reload to a worker still starting) must not end the
# worker or be lost, and one must not wait for the main thread, which a granian worker parks.
_SIGHUP_WHILE_THE_RELAY_IS_BUILT = """
import logging, os, signal, threading
from raider_sync.gateway.serving import relay_reloading_keys

class Relay:
    def __init__(self):
        self.reloads, self.fail = threading.Semaphore(0), False
        os.kill(os.getpid(), signal.SIGHUP)  # its keys were read; the master's SIGHUP comes

    def reload_keys(self):
        self.reloads.release()
        if self.fail:
            raise OSError("the keys directory went away")

failures = []
logging.getLogger("raider_sync.gateway").addHandler(
    type("H", (logging.Handler,), {"emit": lambda self, record: failures.append(record)})())

def bad():
    raise ValueError("bad config")

try:
    relay_reloading_keys(bad)
except ValueError:
    print(signal.pthread_sigmask(signal.SIG_BLOCK, set()) == set())  # the mask as it was

relay = relay_reloading_keys(Relay)
print(relay.reloads.acquire(timeout=10))  # the SIGHUP that came while it was built
print(signal.SIGHUP in signal.pthread_sigmask(signal.SIG_BLOCK, set()))
relay.fail = True
os.kill(os.getpid(), signal.SIGHUP)
print(relay.reloads.acquire(timeout=10))  # a reload that raises is logged...
relay.fail = False
sent = threading.Event()
def send():
    os.kill(os.getpid(), signal.SIGHUP)
    sent.set()
threading.Thread(target=send).start()  # ... and the next one is taken
print(relay.reloads.acquire(timeout=10))  # while the main thread waits, as a granian worker's
print(len(failures), [t.name for t in threading.enumerate() if t.name == "raider-gateway-sighup"])
"""


def test_a_workers_sighups_reload_its_keys_from_before_its_relay_is_built():
    done = subprocess.run([sys.executable, "-c", _SIGHUP_WHILE_THE_RELAY_IS_BUILT],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr  # SIGHUP's default action would end it: -1
    assert done.stdout.split("\n")[:-1] == [
        "True", "True", "True", "True", "True", "1 ['raider-gateway-sighup']"], done.stdout


_SIGHUP_DURING_A_RELOAD = """
import os, signal, threading
from raider_sync.gateway.serving import reload_keys_on_sighup

class Relay:  # reloads under a lock, as the relay does; the first one is interrupted by SIGHUP
    def __init__(self):
        self.lock, self.reloads = threading.Lock(), 0

    def reload_keys(self):
        with self.lock:
            self.reloads += 1
            if self.reloads == 1:
                os.kill(os.getpid(), signal.SIGHUP)
                sum(range(1000))  # a few bytecodes: the handler runs here, inside the lock

relay = Relay()
reload_keys_on_sighup(relay)
os.kill(os.getpid(), signal.SIGHUP)
print(relay.reloads)
"""


def test_a_sighup_during_a_reload_reloads_once_more_after_it():
    """A second SIGHUP runs inside the reload it interrupts (same thread): reloading there
    would wait forever on the lock the interrupted reload holds, and under waitress that
    thread is the one that serves. It is one more reload after the running one instead."""
    done = subprocess.run([sys.executable, "-c", _SIGHUP_DURING_A_RELOAD], capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "2"
