"""Prometheus metrics at /metrics: real traffic through the relay in front of server-everything,
read back with prometheus-client's own parser; the operator's token alone reads them; under
``--workers 2`` the workers' counts are summed."""
from __future__ import annotations

import glob
import hashlib
import json
import os

import pytest
import requests

from raider_sync.errors import ConfigError
from raider_sync.gateway.config import GatewayConfig
from raider_sync.gateway.metrics import UNLISTED, Metrics

from gateway.support import (
    ALICE,
    AUTH,
    BOB,
    METRICS_TOKEN,
    Mcp,
    relay_process,
    scrape,
    stop_group,
    value,
    wait_until,
)

prometheus_parser = pytest.importorskip("prometheus_client.parser")

TOKEN = METRICS_TOKEN
METRICS_ENV = {"METRICS": TOKEN}


def call(mcp: Mcp, tool: str, arguments: dict) -> dict:
    return mcp.request("tools/call", {"name": tool, "arguments": arguments})


def test_counts_per_key_server_and_tool_after_traffic_to_server_everything(make_gateway,
                                                                            everything_http):
    keys = [{"id": "alice", "env": "ALICE", "servers": ["everything"]},
            {"id": "bob", "env": "BOB", "servers": ["everything"]}]
    gw = make_gateway([{"name": "everything", "url": everything_http}], keys, env=METRICS_ENV,
                      metrics={"env": "METRICS"}, limits={"streams_per_key": 1})
    url = f"{gw.url}/mcp/everything"
    alice, bob = Mcp(url, ALICE), Mcp(url, BOB)
    try:
        alice.initialize()
        bob.initialize()
        call(alice, "echo", {"message": "before the list"})  # not listed yet: no label of its own
        assert "echo" in {t["name"] for t in alice.request("tools/list")["result"]["tools"]}
        for message in ("one", "two"):
            assert call(alice, "echo", {"message": message})["result"]["content"][0]["text"] \
                == f"Echo: {message}"
        call(bob, "echo", {"message": "three"})
        call(bob, "get-sum", {"a": 1, "b": 2})
        made_up = call(bob, "no-such-tool-" + "x" * 40, {})
        assert "error" in made_up or made_up["result"].get("isError")
        lost = requests.post(url, headers={**alice.headers(), "Mcp-Session-Id": "forged"},
                             data=json.dumps({"jsonrpc": "2.0", "id": 9, "method": "ping"}),
                             timeout=10)
        assert lost.status_code == 404
        with alice.http.get(url, headers=alice.headers(Accept="text/event-stream"), stream=True,
                            timeout=10) as stream:
            assert stream.status_code == 200
            held = scrape(gw.url)
            refused = alice.http.get(url, headers=alice.headers(Accept="text/event-stream"),
                                     timeout=10)
            assert refused.status_code == 429
        assert wait_until(lambda: value(scrape(gw.url), "raider_gateway_open_streams",
                                        key="alice", server="everything") == 0)
        samples = scrape(gw.url)
    finally:
        alice.close()
        bob.close()

    tools = "raider_gateway_tool_calls_total"
    assert value(samples, tools, key="alice", server="everything", tool="echo") == 2
    assert value(samples, tools, key="alice", server="everything", tool=UNLISTED) == 1
    assert value(samples, tools, key="bob", server="everything", tool="echo") == 1
    assert value(samples, tools, key="bob", server="everything", tool="get-sum") == 1
    assert value(samples, tools, key="bob", server="everything", tool=UNLISTED) == 1
    assert not [k for k in samples if ("tool", "no-such-tool-" + "x" * 40) in k[1]]
    assert value(samples, "raider_gateway_requests_total", key="bob", server="everything",
                 method="POST", code="200") == 4  # initialize, 2 calls and a made-up one
    assert value(samples, "raider_gateway_requests_total", key="bob", server="everything",
                 method="POST", code="202") == 1  # notifications/initialized
    assert value(samples, "raider_gateway_errors_total", key="alice", server="everything",
                 tool="", type="session_not_found") == 1
    assert value(samples, "raider_gateway_limit_refusals_total", key="alice",
                 server="everything", type="too_many_requests") == 1
    assert value(held, "raider_gateway_open_streams", key="alice", server="everything") == 1
    histogram = "raider_gateway_request_duration_seconds"
    assert value(samples, f"{histogram}_count", key="alice", server="everything",
                 tool="echo") == 2
    assert value(samples, f"{histogram}_sum", key="alice", server="everything", tool="echo") > 0
    assert value(samples, f"{histogram}_bucket", key="alice", server="everything", tool="echo",
                 le="+Inf") == 2


def test_a_customer_key_cannot_read_the_metrics(make_gateway, upstream):
    gw = make_gateway([{"name": "fake", "url": f"{upstream.url}/base"}], env=METRICS_ENV,
                      metrics={"env": "METRICS"})
    assert requests.post(f"{gw.url}/mcp/fake", headers=AUTH, data=b"{}", timeout=10).ok
    for headers in (AUTH, {"X-Api-Key": ALICE}, {"Authorization": f"Basic {TOKEN}"},
                    {"X-Api-Key": TOKEN}, {}):
        answer = requests.get(f"{gw.url}/metrics", headers=headers, timeout=10)
        assert answer.status_code == 401, headers
        assert "alice" not in answer.text and "raider_gateway" not in answer.text
    assert requests.post(f"{gw.url}/metrics", headers={"Authorization": f"Bearer {TOKEN}"},
                         timeout=10).status_code == 405
    assert value(scrape(gw.url), "raider_gateway_requests_total", key="", server="",
                 method="GET", code="401") == 5


def test_made_up_http_methods_share_one_label(make_gateway, upstream):
    gw = make_gateway([{"name": "fake", "url": f"{upstream.url}/base"}], env=METRICS_ENV,
                      metrics={"env": "METRICS"})
    for method in ("FOO1", "FOO2", "PATCH"):
        assert requests.request(method, f"{gw.url}/mcp/fake", headers=AUTH,
                                timeout=10).status_code == 405
    samples = scrape(gw.url)
    assert value(samples, "raider_gateway_requests_total", key="alice", server="",
                 method="(other)", code="405") == 3
    assert not any("FOO" in str(labels) for _, labels in samples), samples


def test_without_a_metrics_token_there_is_no_metrics_route(make_gateway, upstream):
    gw = make_gateway([{"name": "fake", "url": f"{upstream.url}/base"}])
    assert requests.get(f"{gw.url}/metrics", headers={"Authorization": f"Bearer {TOKEN}"},
                        timeout=10).status_code == 404


def test_the_metrics_token_is_checked_when_the_config_loads():
    servers = [{"name": "fake", "url": "http://127.0.0.1:9/mcp"}]
    keys = [{"id": "alice", "env": "ALICE", "servers": ["fake"]}]
    cases = [
        ({"env": "METRICS"}, {"ALICE": ALICE}, "metrics.env: environment variable METRICS"),
        ({"env": "METRICS", "sha256": "0" * 64}, {"ALICE": ALICE}, "exactly one of env or sha256"),
        ({"sha256": "abc"}, {"ALICE": ALICE}, "metrics.sha256: expected 64 hex digits"),
        ({"sha256": hashlib.sha256(ALICE.encode()).hexdigest()}, {"ALICE": ALICE},
         "the metrics token is also the key of 'alice'"),
        ({"env": "METRICS", "tools_per_server": 0}, {"ALICE": ALICE, "METRICS": TOKEN},
         "metrics.tools_per_server"),
    ]
    for metrics, env, expected in cases:
        with pytest.raises(ConfigError) as caught:
            GatewayConfig.from_dict({"servers": servers, "keys": keys, "metrics": metrics}, env=env)
        assert expected in str(caught.value), (metrics, str(caught.value))
    config = GatewayConfig.from_dict({"servers": servers, "keys": keys,
                                      "metrics": {"sha256": hashlib.sha256(TOKEN.encode())
                                                  .hexdigest()}}, env={"ALICE": ALICE})
    assert config.metrics_token_digest() == hashlib.sha256(TOKEN.encode()).digest()


def test_a_relay_has_metrics_only_with_a_metrics_token():
    servers = [{"name": "fake", "url": "http://127.0.0.1:9/mcp"}]
    keys = [{"id": "alice", "env": "ALICE", "servers": ["fake"]}]
    plain = GatewayConfig.from_dict({"servers": servers, "keys": keys}, env={"ALICE": ALICE})
    assert Metrics.of(plain) is None
    counted = GatewayConfig.from_dict({"servers": servers, "keys": keys,
                                       "metrics": {"env": "METRICS", "tools_per_server": 3}},
                                      env={"ALICE": ALICE, "METRICS": TOKEN})
    metrics = Metrics.of(counted)
    assert metrics is not None and metrics._tools_cap == 3


def test_tool_labels_are_capped_per_server_and_come_only_from_listed_tools():
    metrics = Metrics(hashlib.sha256(TOKEN.encode()).digest(), tools_per_server=3)
    listing = {"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": f"t{i}"} for i in range(5)]
                                                     + [{"name": "y" * 129}]}}
    reader = metrics.tool_list_reader("s")
    text = b"event: message\r\ndata: " + json.dumps(listing).encode() + b"\r\n\r\n"
    for i in range(0, len(text), 7):  # split anywhere, as reads arrive
        reader(text[i:i + 7])
    assert [metrics.tool_label("s", f"t{i}") for i in range(5)] == ["t0", "t1", "t2"] + [UNLISTED] * 2
    assert metrics.tool_label("other", "t0") == UNLISTED
    metrics.learn_tools("other", b"not json")
    metrics.learn_tools("other", json.dumps([listing]).encode())
    assert metrics.tool_label("other", "t1") == "t1"
    assert not Metrics.readable([("Content-Encoding", "gzip")])
    assert Metrics.readable([("Content-Type", "text/event-stream")])


def test_two_workers_counts_are_summed(tmp_path, upstream):
    pytest.importorskip("gunicorn")
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({
        "servers": [{"name": "fake", "url": f"{upstream.url}/base"}],
        "keys": [{"id": "alice", "env": "ALICE", "servers": ["fake"]}],
        "metrics": {"env": "METRICS"}}))
    temp = tmp_path / "temp"
    temp.mkdir()
    proc, url = relay_process(str(config), {"ALICE": ALICE, "TMPDIR": str(temp), **METRICS_ENV},
                              "--workers", "2", "--threads", "4")
    try:
        [folder] = glob.glob(str(temp / "raider-gateway-metrics-*"))
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                           "params": {"name": "echo", "arguments": {}}})
        sent = 0

        def writers() -> set:
            return {name.rsplit("_", 1)[-1] for name in os.listdir(folder)
                    if name.startswith("counter_")}

        # fresh connections until both workers have answered (each writes its own files)
        while sent < 400 and (sent < 20 or len(writers()) < 2):
            answer = requests.post(f"{url}/mcp/fake", headers={**AUTH, "Connection": "close"},
                                   data=body, timeout=10)
            assert answer.status_code == 200
            sent += 1
        assert len(writers()) == 2, "one worker answered every request"
        for _ in range(4):  # whichever worker answers the scrape, it reports the sum
            samples = scrape(url)
            assert value(samples, "raider_gateway_requests_total", key="alice", server="fake",
                         method="POST", code="200") == sent
            assert value(samples, "raider_gateway_tool_calls_total", key="alice", server="fake",
                         tool=UNLISTED) == sent
            assert value(samples, "raider_gateway_request_duration_seconds_count",
                         key="alice", server="fake", tool=UNLISTED) == sent
    finally:
        stop_group(proc)
    assert proc.returncode == 0
    assert not os.path.exists(folder), "the gateway left its metrics folder behind"

