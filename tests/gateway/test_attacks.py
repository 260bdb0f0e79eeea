"""The relay against hostile clients and broken upstreams: request smuggling, compression
bombs, truncated streams, sessions reused by another key, one key taking every thread."""
from __future__ import annotations

import hashlib
import http.client
import json
import socket
import threading
from wsgiref.util import is_hop_by_hop, setup_testing_defaults

import pytest
import requests

from raider_sync.gateway import sessions
from raider_sync.gateway.config import GatewayConfig
from raider_sync.gateway.relay import Relay

from gateway.support import ALICE, AUTH, BOB, GZIP_BOMB, read_until_closed, wait_until

BOB_AUTH = {"Authorization": f"Bearer {BOB}"}


def fake(upstream, name="fake"):
    return {"name": name, "url": f"{upstream.url}/base", "description": "a fake"}


def both_keys(*servers):
    names = [s["name"] for s in servers]
    return [{"id": "alice", "env": "ALICE", "servers": names},
            {"id": "bob", "sha256": hashlib.sha256(BOB.encode()).hexdigest(), "servers": names}]


# -- request smuggling ---------------------------------------------------------------------

def test_content_length_with_transfer_encoding_is_refused_and_the_connection_closed(
        make_gateway, upstream):
    gw = make_gateway([fake(upstream)])
    key = b"Authorization: Bearer " + ALICE.encode() + b"\r\n"
    smuggled = b"GET /mcp/fake/smuggled HTTP/1.1\r\nHost: gw\r\n" + key + b"\r\n"
    body = b"0\r\n\r\n" + smuggled
    request = (b"POST /mcp/fake HTTP/1.1\r\nHost: gw\r\n" + key
               + b"Content-Type: application/json\r\nContent-Length: %d\r\n" % len(body)
               + b"Transfer-Encoding: chunked\r\n\r\n" + body)
    with socket.create_connection((gw.host, gw.port), timeout=10) as sock:
        sock.sendall(request)
        received = read_until_closed(sock)  # returns only because the relay closes
    assert received.startswith(b"HTTP/1.1 400"), received[:200]
    assert received.count(b"HTTP/1.1 ") == 1  # the smuggled request was never answered
    assert upstream.requests == []  # ... nor relayed, and neither was the first


@pytest.mark.parametrize("protocol,length", [("HTTP/1.1", "5"), ("HTTP/1.0", "5"), ("HTTP/1.0", "")])
def test_the_app_itself_refuses_ambiguous_framing_without_a_hop_by_hop_header(protocol, length):
    # for WSGI servers that pass the headers on (gunicorn refuses them first, the gateway's
    # waitress hands them over and closes); PEP 3333 forbids an app's Connection header, and
    # waitress and wsgiref raise on one
    config = GatewayConfig.from_dict({"servers": [{"name": "x", "url": "http://127.0.0.1:9/mcp"}],
                                      "keys": [{"id": "alice", "env": "ALICE", "servers": ["x"]}]},
                                     env={"ALICE": ALICE})
    with Relay(config) as relay:
        environ = {"REQUEST_METHOD": "POST", "PATH_INFO": "/mcp/x", "CONTENT_LENGTH": length,
                   "SERVER_PROTOCOL": protocol, "HTTP_TRANSFER_ENCODING": "chunked",
                   "HTTP_AUTHORIZATION": f"Bearer {ALICE}"}
        setup_testing_defaults(environ)
        seen = []
        body = b"".join(relay(environ, lambda status, headers, exc=None: seen.append((status, headers))))
    status, headers = seen[0]
    assert status.startswith("400") and not any(is_hop_by_hop(name) for name, _ in headers)
    assert json.loads(body)["error"]["type"] == "bad_request"


# -- fixed query parameters ----------------------------------------------------------------

@pytest.mark.parametrize("query", ["tenant%5B%5D=b", "tenant[]=b", "tenant[0]=b", "tenant%5Bx%5D=b",
                                   "TENANT[]=b", "tenant%255B%255D=b", "tenant.x=b"])
def test_a_fixed_query_parameter_cannot_be_steered_past_a_real_express(make_gateway,
                                                                       express_query, query):
    # Express reads ?tenant=a&tenant%5B%5D=b as tenant == ["a", "b"]: the client would be in
    # tenant b too
    gw = make_gateway([{"name": "app", "url": f"{express_query}/mcp?tenant=a"}])
    status, _, body = gw.raw("POST", f"/mcp/app?x=1&{query}", headers=AUTH, body=b"{}")
    assert status == 400, body
    assert json.loads(body)["error"]["type"] == "bad_path"
    status, _, body = gw.raw("POST", "/mcp/app?x=1&tenants=b", headers=AUTH, body=b"{}")
    assert status == 200 and json.loads(body)["query"] == {"tenant": "a", "x": "1", "tenants": "b"}


# -- compression bombs ---------------------------------------------------------------------

def test_a_compressed_answer_passes_through_unopened(make_gateway, upstream, parser):
    gw = make_gateway([fake(upstream)])
    status, headers, body = gw.raw("POST", "/mcp/fake/gzip-bomb", headers=AUTH, body=b"{}")
    assert status == 200
    assert headers["Content-Encoding"] == "gzip"
    assert body == GZIP_BOMB  # the very bytes the upstream sent: the relay never opened them
    assert gw.wait_events(1)[0]["response_bytes"] == len(GZIP_BOMB)


def test_a_compressed_streamed_answer_keeps_its_encoding(make_gateway, upstream, parser):
    gw = make_gateway([fake(upstream)])
    status, headers, body = gw.raw("POST", "/mcp/fake/gzip-chunked", headers=AUTH, body=b"{}")
    assert status == 200 and headers["Content-Encoding"] == "gzip"
    answer = requests.post(f"{gw.url}/mcp/fake/gzip-chunked", headers=AUTH, json={}, timeout=10)
    assert answer.json() == {"zipped": True}  # the client opens it


# -- a stream that breaks off --------------------------------------------------------------

@pytest.mark.parametrize("mode", ["sse-truncated", "sse-cut"])  # no last chunk; short of its length
def test_a_truncated_upstream_stream_breaks_the_clients_answer_too(make_gateway, upstream, mode,
                                                                  parser):
    gw = make_gateway([fake(upstream)])
    conn = http.client.HTTPConnection(gw.host, gw.port, timeout=10)
    try:
        conn.request("GET", f"/mcp/fake/{mode}", headers={**AUTH, "Accept": "text/event-stream"})
        answer = conn.getresponse()
        assert answer.status == 200
        with pytest.raises(http.client.IncompleteRead) as broke:
            answer.read()  # the client can tell the stream did not end
        assert b"data: one" in broke.value.partial
    finally:
        conn.close()
    event = gw.wait_events(1)[0]
    assert event["ended"] == "upstream"


# -- sessions bound to keys ----------------------------------------------------------------

def test_a_session_id_is_bound_to_the_key_that_opened_it(make_gateway, upstream):
    gw = make_gateway([fake(upstream)], keys=both_keys(fake(upstream)))
    opened = requests.post(f"{gw.url}/mcp/fake", headers=AUTH, json={}, timeout=10)
    session = opened.headers["Mcp-Session-Id"]
    assert session != "up-session" and session.startswith("up-session.")
    # alice's own session id reaches the upstream as the upstream's id
    again = requests.post(f"{gw.url}/mcp/fake", headers={**AUTH, "Mcp-Session-Id": session},
                          json={}, timeout=10)
    assert again.status_code == 200
    assert ["Mcp-Session-Id", "up-session"] in again.json()["headers"]
    relayed = len(upstream.requests)
    # bob reusing it, alice with the bare upstream id, or an altered tag: refused, not relayed
    for headers, value in ((BOB_AUTH, session), (AUTH, "up-session"), (AUTH, session[:-1] + "A"),
                           (AUTH, session.replace("up-", "up2-"))):
        answer = requests.post(f"{gw.url}/mcp/fake", headers={**headers, "Mcp-Session-Id": value},
                               json={}, timeout=10)
        assert answer.status_code == 404, value
        assert answer.json()["error"]["type"] == "session_not_found"
    assert len(upstream.requests) == relayed
    events = gw.wait_events(6)
    assert [(e["key"], e["status"]) for e in events[2:]] == [
        ("bob", 404), ("alice", 404), ("alice", 404), ("alice", 404)]


def test_a_session_id_seals_and_opens_without_shared_state():
    sealed = sessions.seal("k1", "alice", "fake", "abc.def")
    assert sessions.unseal("k1", "alice", "fake", sealed) == "abc.def"  # any process can check
    for token, key, server in (("k2", "alice", "fake"), ("k1", "bob", "fake"), ("k1", "alice", "x")):
        assert sessions.unseal(token, key, server, sealed) is None
    for bad in (None, 5, "", "abc", "abc.", ".x" * 12, "a b." + sealed.rsplit(".", 1)[1]):
        assert sessions.unseal("k1", "alice", "fake", bad) is None
    assert sessions.seal("k1", "alice", "fake", "bad id") is None
    assert sessions.seal(5, "alice", "fake", "x") is None


# -- one key cannot take every thread ------------------------------------------------------

def test_one_keys_streams_and_requests_are_limited_and_others_still_served(make_gateway, upstream):
    gw = make_gateway([fake(upstream)], keys=both_keys(fake(upstream)), threads=8,
                      limits={"requests_per_key": 3, "streams_per_key": 2})
    held: list[requests.Response] = []
    try:
        for _ in range(2):
            held.append(requests.get(f"{gw.url}/mcp/fake/sse-gated", stream=True, timeout=10,
                                     headers={**AUTH, "Accept": "text/event-stream"}))
            assert held[-1].status_code == 200
        third = requests.get(f"{gw.url}/mcp/fake/sse-gated", timeout=10,
                             headers={**AUTH, "Accept": "text/event-stream"})
        assert third.status_code == 429 and third.headers["Retry-After"] == "1"
        assert third.json()["error"]["type"] == "too_many_requests"
        done = []
        slow = threading.Thread(target=lambda: done.append(
            requests.post(f"{gw.url}/mcp/fake/slow", headers=AUTH, json={}, timeout=10)))
        slow.start()
        try:
            assert wait_until(lambda: sum(r["path"].endswith("/slow") for r in upstream.requests) == 1)
            # alice now holds three requests: a fourth POST is refused, bob is served
            assert requests.post(f"{gw.url}/mcp/fake", headers=AUTH, json={},
                                 timeout=10).status_code == 429
            assert requests.post(f"{gw.url}/mcp/fake", headers=BOB_AUTH, json={},
                                 timeout=10).status_code == 200
        finally:
            upstream.gate.set()
            slow.join(10)
        assert done[0].status_code == 200
    finally:
        for answer in held:
            answer.close()
    # everything given back: alice is served again
    assert wait_until(lambda: gw.relay._limits.held("alice") == (0, 0))
    assert requests.post(f"{gw.url}/mcp/fake", headers=AUTH, json={}, timeout=10).status_code == 200


def test_the_default_limits_leave_threads_for_other_keys(make_gateway, upstream):
    # no limits configured: with 8 threads a key holds at most 2 streams and 4 requests
    gw = make_gateway([fake(upstream)], keys=both_keys(fake(upstream)), threads=8)
    held = []
    try:
        statuses = []
        for _ in range(3):
            answer = requests.get(f"{gw.url}/mcp/fake/sse-gated", stream=True, timeout=10,
                                  headers={**AUTH, "Accept": "text/event-stream"})
            held.append(answer)
            statuses.append(answer.status_code)
        assert statuses == [200, 200, 429]
        assert requests.post(f"{gw.url}/mcp/fake", headers=BOB_AUTH, json={},
                             timeout=10).status_code == 200
    finally:
        upstream.gate.set()
        for answer in held:
            answer.close()
