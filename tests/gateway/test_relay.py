"""The relay against a fake upstream: keys, routing, header allowlists, streaming, faults (the
usage events: test_usage.py)."""
from __future__ import annotations

import hashlib
import json
import socket
import threading
import time

import pytest
import requests

from raider_sync.errors import ConfigError
from raider_sync.gateway.config import GatewayConfig
from raider_sync.gateway.relay import Relay

from gateway.support import ALICE, AUTH, BOB, UPSTREAM_TOKEN, free_port
from gateway.support import credentialed as fake

STDIO = {"name": "files", "transport": "stdio", "command": "mcp-files", "args": ["--root", "/srv"],
         "env": {"MODE": "ro"}, "description": "local files"}


# -- keys and routes -----------------------------------------------------------------------

def test_listing_shows_the_keys_servers_and_nothing_upstream(make_gateway, upstream):
    gw = make_gateway([fake(upstream), fake(upstream, name="other"), STDIO],
                      keys=[{"id": "alice", "env": "ALICE", "servers": ["fake", "files"]},
                            {"id": "bob", "sha256": hashlib.sha256(BOB.encode()).hexdigest(),
                             "servers": ["other"]}],
                      public_url="https://llm.example.com")
    answer = requests.get(f"{gw.url}/v1/mcp/servers", headers=AUTH, timeout=10)
    assert answer.status_code == 200
    assert answer.json() == {"object": "list", "data": [
        {"name": "fake", "transport": "streamable-http", "description": "a fake",
         "url": "https://llm.example.com/mcp/fake"},
        {"name": "files", "transport": "stdio", "description": "local files",
         "command": "mcp-files", "args": ["--root", "/srv"], "env": {"MODE": "ro"}}]}
    for secret in (upstream.url, "tenant", "UPSTREAM_TOKEN", UPSTREAM_TOKEN, "X-Team", "ALICE"):
        assert secret not in answer.text
    bob = requests.get(f"{gw.url}/v1/mcp/servers", headers={"X-Api-Key": BOB}, timeout=10)
    assert [e["name"] for e in bob.json()["data"]] == ["other"]
    assert upstream.requests == []


def test_listing_without_public_url_uses_the_requests_host(make_gateway, upstream):
    gw = make_gateway([fake(upstream)])
    answer = requests.get(f"{gw.url}/v1/mcp/servers", headers=AUTH, timeout=10)
    assert answer.json()["data"][0]["url"] == f"{gw.url}/mcp/fake"


@pytest.mark.parametrize("headers", [
    {}, {"Authorization": "Bearer wrong"}, {"X-Api-Key": "wrong"}, {"Authorization": f"Basic {ALICE}"},
    {"Authorization": "Bearer"}, {"Authorization": f"Bearer {ALICE}x"}, {"X-Api-Key": ALICE[:-1]}])
def test_no_key_or_an_unknown_key_is_401(make_gateway, upstream, headers):
    gw = make_gateway([fake(upstream)])
    for method, path in (("GET", "/v1/mcp/servers"), ("POST", "/mcp/fake"), ("GET", "/mcp/nope")):
        answer = requests.request(method, gw.url + path, headers=headers, timeout=10)
        assert answer.status_code == 401
        assert answer.headers["WWW-Authenticate"].startswith("Bearer")
        assert answer.json()["error"]["type"] == "unauthorized"
    assert upstream.requests == []
    assert {e["key"] for e in gw.wait_events(3)} == {None}


@pytest.mark.parametrize("headers", [{"Authorization": f"Bearer {ALICE}"},
                                     {"Authorization": f"bearer  {ALICE} "}, {"X-Api-Key": ALICE}])
def test_either_key_header_is_accepted(make_gateway, upstream, headers):
    gw = make_gateway([fake(upstream)])
    assert requests.post(f"{gw.url}/mcp/fake", headers=headers, json={}, timeout=10).status_code == 200


def test_an_unassigned_server_looks_exactly_like_an_unknown_one(make_gateway, upstream):
    gw = make_gateway([fake(upstream), fake(upstream, name="secret")],
                      keys=[{"id": "alice", "env": "ALICE", "servers": ["fake"]}])
    unassigned = requests.post(f"{gw.url}/mcp/secret", headers=AUTH, json={}, timeout=10)
    unknown = requests.post(f"{gw.url}/mcp/nothing", headers=AUTH, json={}, timeout=10)
    assert unassigned.status_code == unknown.status_code == 404
    assert unassigned.content == unknown.content
    assert sorted(unassigned.headers) == sorted(unknown.headers)
    assert upstream.requests == []


def test_other_routes_and_methods(make_gateway, upstream):
    gw = make_gateway([fake(upstream), STDIO])
    assert requests.get(f"{gw.url}/", headers=AUTH, timeout=10).status_code == 404
    assert requests.get(f"{gw.url}/mcp/", headers=AUTH, timeout=10).status_code == 404
    put = requests.put(f"{gw.url}/mcp/fake", headers=AUTH, timeout=10)
    assert put.status_code == 405 and put.headers["Allow"] == "DELETE, GET, POST"
    post = requests.post(f"{gw.url}/v1/mcp/servers", headers=AUTH, timeout=10)
    assert post.status_code == 405 and post.headers["Allow"] == "GET"
    stdio = requests.post(f"{gw.url}/mcp/files", headers=AUTH, json={}, timeout=10)
    assert stdio.status_code == 404 and "not relayed" in stdio.json()["error"]["message"]
    assert upstream.requests == []


# -- what travels upstream and back --------------------------------------------------------

def test_only_allowed_client_headers_and_the_operators_credential_go_upstream(make_gateway, upstream):
    gw = make_gateway([fake(upstream)])
    client_headers = {
        "Authorization": f"Bearer {ALICE}", "X-Api-Key": "client-api-key", "Cookie": "session=abc",
        "Proxy-Authorization": "Basic cHJveHk=", "X-Forwarded-For": "10.1.1.1",
        "Forwarded": "for=10.1.1.1", "X-Real-Ip": "10.1.1.1", "Origin": "http://evil.example",
        "User-Agent": "client-agent", "X-Custom": "custom", "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream", "Last-Event-ID": "41",
        "Mcp-Protocol-Version": "2025-06-18", "Mcp-Future-Thing": "f"}
    with requests.Session() as client:
        # the session id the relay handed out, sealed for this key
        client_headers["Mcp-Session-Id"] = client.post(
            f"{gw.url}/mcp/fake", headers=AUTH, json={}, timeout=10).headers["Mcp-Session-Id"]
        for _ in range(2):  # the second request would carry any cookie the relay kept
            answer = client.post(f"{gw.url}/mcp/fake/sub/path?x=1&y=two%20words",
                                 headers=client_headers, data=b'{"jsonrpc": "2.0"}', timeout=10)
            assert answer.status_code == 200
            client.cookies.clear()
    seen = answer.json()
    headers = {k.lower(): v for k, v in seen["headers"]}
    assert headers["authorization"] == f"Bearer {UPSTREAM_TOKEN}"
    assert headers["x-team"] == "blue"
    assert headers["mcp-session-id"] == "up-session"  # the upstream's own id
    for name in ("content-type", "accept", "last-event-id", "mcp-protocol-version",
                 "mcp-future-thing"):
        assert headers[name] == client_headers[next(k for k in client_headers if k.lower() == name)]
    for name in ("x-api-key", "cookie", "proxy-authorization", "x-forwarded-for", "forwarded",
                 "x-real-ip", "origin", "x-custom"):
        assert name not in headers, name
    assert headers["user-agent"] == "raider-sync-gateway"
    raw = json.dumps(seen["headers"])
    assert ALICE not in raw and "client-api-key" not in raw and "session=abc" not in raw
    assert seen["method"] == "POST" and seen["body"] == '{"jsonrpc": "2.0"}'
    assert seen["path"] == "/base/sub/path"
    assert seen["query"] == "tenant=t1&x=1&y=two%20words"
    # and back: only the allowlisted response headers
    assert answer.headers["Mcp-Session-Id"].startswith("up-session.")  # sealed for the key
    assert answer.headers["Cache-Control"] == "no-store"
    assert answer.headers["Content-Type"] == "application/json"
    for name in ("Set-Cookie", "X-Upstream-Secret", "WWW-Authenticate", "Location", "X-Powered-By"):
        assert name not in answer.headers, name
    assert not client.cookies


def test_a_server_without_credential_gets_no_authorization_at_all(make_gateway, upstream):
    entry = fake(upstream)
    del entry["credential"]
    gw = make_gateway([entry])
    answer = requests.get(f"{gw.url}/mcp/fake", headers=AUTH, timeout=10)
    names = {k.lower() for k, _ in answer.json()["headers"]}
    assert "authorization" not in names and "x-api-key" not in names


@pytest.mark.parametrize("path", [
    "/mcp/fake/..", "/mcp/fake/../x", "/mcp/fake/a/../../x", "/mcp/fake/./x", "/mcp/fake/.",
    "/mcp/fake/%2e%2e/x", "/mcp/fake/%2E%2E/x", "/mcp/fake/%2e%2E", "/mcp/fake/%2e/x",
    "/mcp/fake/a%2fb", "/mcp/fake/a%2Fb", "/mcp/fake/%2f", "/mcp/fake/a\\b", "/mcp/fake/..\\x",
    "/mcp/fake/a%5cb", "/mcp/fake/a%5Cb", "/mcp/fake//x", "/mcp/fake/a//b", "/mcp/fake/a/",
    "/mcp/fake/%252e%252e/x", "/mcp/fake/a%252fb", "/mcp/fake/..;/x", "/mcp/fake/..%3bx/y",
    "/mcp/fake/.%3B/x", "/mcp/fake/..%00", "/mcp/fake/%EF%BC%8E%EF%BC%8E/x",
    "/mcp/fake/a%EF%BC%8Fb", "/mcp/fake/", "/mcp/fake/?x=1", "/mcp/fake/%20/"])
def test_path_traversal_variants_are_refused(make_gateway, upstream, path):
    gw = make_gateway([fake(upstream)])
    status, _, body = gw.raw("POST", path, headers=AUTH, body=b"{}")
    assert status == 400, (status, body)
    assert json.loads(body)["error"]["type"] == "bad_path"
    assert upstream.requests == []


@pytest.mark.parametrize("query", ["tenant=evil", "Tenant=evil", "tenant%20=evil", "TENANT+=evil"])
def test_a_query_that_names_a_fixed_parameter_in_any_case_is_refused(make_gateway, upstream, query):
    gw = make_gateway([fake(upstream)])
    status, _, body = gw.raw("POST", f"/mcp/fake?{query}", headers=AUTH, body=b"{}")
    assert status == 400 and json.loads(body)["error"]["type"] == "bad_path"
    assert upstream.requests == []


def test_a_name_that_climbs_is_just_an_unknown_server(make_gateway, upstream):
    gw = make_gateway([fake(upstream)])
    for path in ("/mcp/../mcp/fake", "/mcp/%2e%2e/fake", "/mcp/fake%2f..", "/mcp/./fake"):
        status, _, _ = gw.raw("GET", path, headers=AUTH)
        assert status in (400, 404), path
    assert upstream.requests == []


def test_status_and_retry_after_are_relayed(make_gateway, upstream):
    gw = make_gateway([fake(upstream)])
    answer = requests.post(f"{gw.url}/mcp/fake/teapot", headers=AUTH, json={}, timeout=10)
    assert answer.status_code == 418
    assert answer.headers["Retry-After"] == "3"
    assert answer.json() == {"short": "and stout"}
    accepted = requests.post(f"{gw.url}/mcp/fake/accepted", headers=AUTH, json={}, timeout=10)
    assert accepted.status_code == 202 and accepted.content == b""


def test_chunked_and_large_answers_stream_through_intact(make_gateway, upstream, parser):
    gw = make_gateway([fake(upstream)])
    chunked = requests.get(f"{gw.url}/mcp/fake/chunked-json", headers=AUTH, timeout=10)
    assert chunked.json() == {"part": 1, "part2": 2}
    assert chunked.headers["Mcp-Session-Id"].startswith("stream-session.")
    big = requests.get(f"{gw.url}/mcp/fake/big", headers=AUTH, timeout=10)
    assert big.content == bytes(range(256)) * (8 * 1024 + 1)
    events = gw.wait_events(2)
    assert events[-1]["response_bytes"] == len(big.content)


def test_an_sse_answer_is_not_buffered(make_gateway, upstream, parser):
    gw = make_gateway([fake(upstream)])
    with requests.get(f"{gw.url}/mcp/fake/sse-gated", headers={**AUTH, "Accept": "text/event-stream"},
                      stream=True, timeout=10) as answer:
        assert answer.headers["Content-Type"] == "text/event-stream"
        assert answer.headers["X-Accel-Buffering"] == "no"
        chunks = answer.iter_content(chunk_size=None)
        received = b""
        while b"data: one\n\n" not in received:
            received += next(chunks)  # arrives while the upstream still holds event two back
        assert b"two" not in received
        upstream.gate.set()
        for chunk in chunks:
            received += chunk
    assert received == b"id: 1\ndata: one\n\nid: 2\ndata: two\n\n"
    event = gw.wait_events(1)[0]
    assert event["status"] == 200 and event["response_bytes"] == len(received)
    assert "ended" not in event


def test_a_client_that_goes_away_closes_the_upstream(make_gateway, upstream, parser):
    gw = make_gateway([fake(upstream)])
    sock = socket.create_connection((gw.host, gw.port), timeout=10)
    try:
        sock.sendall(b"GET /mcp/fake/sse-hang HTTP/1.1\r\nHost: gw\r\n"
                     b"Authorization: Bearer " + ALICE.encode() + b"\r\n\r\n")
        received = b""
        while b"data: one" not in received:
            received += sock.recv(4096)
    finally:
        sock.close()
    assert upstream.closed.wait(10), "the relay kept the upstream stream open"
    event = gw.wait_events(1)[0]
    assert event["ended"] == "client" and event["server"] == "fake"


# -- upstream failures ---------------------------------------------------------------------

def test_an_unreachable_upstream_is_a_short_502(make_gateway, parser):
    port = free_port()
    gw = make_gateway([{"name": "down", "url": f"http://127.0.0.1:{port}/hidden-path",
                        "timeouts": {"connect": 2, "read": 2}}])
    answer = requests.post(f"{gw.url}/mcp/down", headers=AUTH, json={}, timeout=10)
    assert answer.status_code == 502
    assert answer.json() == {"error": {"type": "upstream_unreachable",
                                       "message": "the MCP server could not be reached"}}
    assert str(port) not in answer.text and "hidden-path" not in answer.text
    assert gw.wait_events(1)[0]["status"] == 502


def test_an_upstream_that_does_not_answer_in_time_is_a_502(make_gateway, upstream, parser):
    gw = make_gateway([fake(upstream, timeouts={"connect": 2, "read": 0.3})])
    started = time.monotonic()
    answer = requests.post(f"{gw.url}/mcp/fake/slow", headers=AUTH, json={}, timeout=10)
    assert answer.status_code == 502 and answer.json()["error"]["type"] == "upstream_timeout"
    assert time.monotonic() - started < 5
    upstream.gate.set()


def test_an_upstream_that_breaks_off_is_a_502(make_gateway, upstream, parser):
    gw = make_gateway([fake(upstream)])
    answer = requests.post(f"{gw.url}/mcp/fake/broken", headers=AUTH, json={}, timeout=10)
    assert answer.status_code == 502 and answer.json()["error"]["type"] == "upstream_broken"


def test_a_malformed_answer_is_a_502(make_gateway, upstream, parser):
    gw = make_gateway([fake(upstream)])
    answer = requests.post(f"{gw.url}/mcp/fake/malformed", headers=AUTH, json={}, timeout=10)
    assert answer.status_code == 502 and answer.json()["error"]["type"] == "upstream_unreachable"
    assert "two hundred" not in answer.text


def test_a_request_body_over_the_limit_is_413_and_not_relayed(make_gateway, upstream):
    gw = make_gateway([fake(upstream)], max_request_bytes=10)
    answer = requests.post(f"{gw.url}/mcp/fake", headers=AUTH, data=b"x" * 11, timeout=10)
    assert answer.status_code == 413
    assert requests.post(f"{gw.url}/mcp/fake", headers=AUTH, data=b"x" * 10,
                         timeout=10).status_code == 200
    assert len(upstream.requests) == 1


@pytest.mark.parametrize("key,status", [(b"", b"401"), (b"X-Api-Key: " + ALICE.encode() + b"\r\n", b"413")])
def test_a_body_over_the_limit_is_refused_before_the_server_buffers_it(make_gateway, upstream,
                                                                       key, status):
    # The announced body never comes: the answer must not wait for it (nor spool it), with a
    # key (413) or without one (401: the key is checked first, as under gunicorn).
    gw = make_gateway([fake(upstream)], max_request_bytes=1000)
    with socket.create_connection((gw.host, gw.port), timeout=5) as conn:
        conn.sendall(b"POST /mcp/fake HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     + key + b"Content-Length: 100000000\r\n\r\n" + b"x" * 2000)
        head = conn.recv(4096)
    assert head.startswith(b"HTTP/1.1 " + status), head[:200]
    assert upstream.requests == []


def test_origins_outside_the_allowed_list_are_refused(make_gateway, upstream):
    gw = make_gateway([fake(upstream)], allowed_origins=["https://app.example"])
    evil = requests.post(f"{gw.url}/mcp/fake", headers={**AUTH, "Origin": "http://evil.example"},
                         json={}, timeout=10)
    assert evil.status_code == 403
    good = requests.post(f"{gw.url}/mcp/fake", headers={**AUTH, "Origin": "https://APP.example/"},
                         json={}, timeout=10)
    assert good.status_code == 200
    assert requests.post(f"{gw.url}/mcp/fake", headers=AUTH, json={}, timeout=10).status_code == 200
    assert len(upstream.requests) == 2


def test_the_relay_needs_a_loaded_config():
    with pytest.raises(ConfigError, match="GatewayConfig.load"):
        Relay(GatewayConfig())


def test_concurrent_requests_through_one_relay(make_gateway, upstream):
    # one key on every thread: its limit raised from the default half of them
    gw = make_gateway([fake(upstream)], threads=8, limits={"requests_per_key": 8})
    results: list[int] = []

    def worker():
        with requests.Session() as client:
            for _ in range(10):
                results.append(client.post(f"{gw.url}/mcp/fake", headers=AUTH, json={},
                                           timeout=10).status_code)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert results == [200] * 80
    assert len(gw.wait_events(80)) == 80


def test_a_bug_in_the_relay_is_a_500_without_a_traceback(upstream, monkeypatch, caplog):
    config = GatewayConfig.from_dict({"servers": [fake(upstream)],
                                      "keys": [{"id": "a", "env": "K", "servers": ["fake"]}]},
                                     env={"K": "k", "UPSTREAM_TOKEN": "t"})
    events, answers = [], []
    with Relay(config, on_usage=events.append) as relay:
        def broken(*args):
            raise KeyError("secret internals")

        monkeypatch.setattr(relay, "_listing", broken)
        environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/v1/mcp/servers", "HTTP_X_API_KEY": "k"}
        body = b"".join(relay(environ, lambda status, headers, exc_info=None:
                              answers.append((status, exc_info))))
    assert answers[0][0] == "500 Internal Server Error" and answers[0][1] is not None
    assert b"secret internals" not in body and json.loads(body)["error"]["type"] == "internal_error"
    assert events[0]["status"] == 500 and events[0]["key"] == "a"
    assert "secret internals" in caplog.text  # logged for the operator


def test_a_client_gone_before_the_first_write_closes_the_upstream(upstream):
    config = GatewayConfig.from_dict({"servers": [fake(upstream)],
                                      "keys": [{"id": "a", "env": "K", "servers": ["fake"]}]},
                                     env={"K": "k", "UPSTREAM_TOKEN": "t"})

    def start_response(status, headers, exc_info=None):
        if exc_info is not None:  # PEP 3333: the headers went out, so re-raise
            raise exc_info[1].with_traceback(exc_info[2])

        def write(data):
            raise ConnectionResetError("the client went away")
        return write

    with Relay(config) as relay:
        environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/mcp/fake/sse-hang",
                   "HTTP_X_API_KEY": "k"}
        with pytest.raises(ConnectionResetError) as caught:
            relay(environ, start_response)
        # the traceback (kept here) must not be what keeps the upstream stream open
        assert upstream.closed.wait(10), "the relay kept the upstream stream open"
        del caught


def test_a_closed_relay_answers_503_and_close_is_idempotent(upstream, tmp_path):
    config = GatewayConfig.from_dict({"servers": [fake(upstream)],
                                      "keys": [{"id": "a", "env": "K", "servers": ["fake"]}]},
                                     env={"K": "k", "UPSTREAM_TOKEN": "t"})
    relay = Relay(config, usage_log=str(tmp_path / "usage.jsonl"))
    relay.close()
    relay.close()
    statuses = []
    environ = {"REQUEST_METHOD": "POST", "PATH_INFO": "/mcp/fake", "HTTP_X_API_KEY": "k"}
    relay(environ, lambda status, headers: statuses.append(status))
    assert statuses == ["503 Service Unavailable"]
    assert upstream.requests == []
    assert (tmp_path / "usage.jsonl").read_text() == ""  # nothing written after close
