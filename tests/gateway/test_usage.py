"""Usage events: one per request, to the callback, the JSON-lines file and the usage log
(raider_sync.gateway.usage)."""
from __future__ import annotations

import json
import logging
import os
import time

import requests

from raider_sync.gateway.config import GatewayConfig
from raider_sync.gateway.relay import Relay
from raider_sync.gateway.usage import Usage

from gateway.support import AUTH, wait_until
from gateway.support import credentialed as fake


def test_one_usage_event_per_request_to_the_callback_and_the_file(make_gateway, upstream, tmp_path):
    log = tmp_path / "usage.jsonl"
    gw = make_gateway([fake(upstream)], usage_log=str(log))
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
    answer = requests.post(f"{gw.url}/mcp/fake/deep/sub?q=1", headers=AUTH, data=body, timeout=10)
    requests.delete(f"{gw.url}/mcp/fake", headers=AUTH, timeout=10)
    requests.get(f"{gw.url}/v1/mcp/servers", headers=AUTH, timeout=10)
    requests.get(f"{gw.url}/v1/mcp/servers", timeout=10)
    events = gw.wait_events(4)
    post = events[0]
    assert {k: post[k] for k in ("key", "server", "endpoint", "method", "status", "request_bytes",
                                 "response_bytes")} == {
        "key": "alice", "server": "fake", "endpoint": "/mcp/fake", "method": "POST", "status": 200,
        "request_bytes": len(body), "response_bytes": len(answer.content)}
    assert post["duration_ms"] > 0 and post["time"].endswith("+00:00")
    assert events[1]["method"] == "DELETE" and events[1]["endpoint"] == "/mcp/fake"
    assert events[2]["endpoint"] == "/v1/mcp/servers" and events[2]["server"] is None
    assert events[3]["status"] == 401 and events[3]["key"] is None
    assert wait_until(lambda: len(log.read_text().splitlines()) == 4)
    assert [json.loads(line) for line in log.read_text().splitlines()] == events


def test_a_failing_usage_callback_does_not_fail_the_request(upstream, caplog):
    config = GatewayConfig.from_dict({"servers": [fake(upstream)],
                                      "keys": [{"id": "a", "env": "K", "servers": ["fake"]}]},
                                     env={"K": "k", "UPSTREAM_TOKEN": "t"})

    def boom(event):
        raise RuntimeError("callback bug")

    started = []
    with Relay(config, on_usage=boom) as relay:
        environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/v1/mcp/servers", "HTTP_X_API_KEY": "k",
                   "wsgi.url_scheme": "http", "HTTP_HOST": "gw"}
        body = b"".join(relay(environ, lambda status, headers: started.append(status)))
    assert started == ["200 OK"] and json.loads(body)["data"][0]["name"] == "fake"
    assert "usage callback failed" in caplog.text


def test_the_callback_is_asked_at_each_event_and_a_closed_file_gets_nothing(tmp_path):
    path = tmp_path / "usage.jsonl"
    callbacks: list = [None]
    usage = Usage(str(path), lambda: callbacks[0])
    assert os.stat(path).st_mode & 0o777 == 0o640 & ~_umask()
    logger = logging.getLogger("raider_sync.gateway.usage")
    level = logger.level
    logger.setLevel(logging.WARNING)  # the file and the callback alone read the events
    try:
        assert usage.observed()
        usage.emit({"status": 200}, time.perf_counter())
        seen: list[dict] = []
        callbacks[0] = seen.append  # set later: the next event goes to it
        usage.close()
        usage.close()
        assert usage.observed()
        usage.emit({"status": 404}, time.perf_counter())
        callbacks[0] = None
        assert not usage.observed()
        unread = {"status": 500}
        usage.emit(unread, time.perf_counter())
    finally:
        logger.setLevel(level)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["status"] for line in lines] == [200] and "duration_ms" in lines[0]
    assert [event["status"] for event in seen] == [404] and "time" in seen[0]
    assert unread == {"status": 500}  # nobody reads it: not even stamped


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
