"""Many processes: relays (one waitress process, one with ``--workers 2``, and one
``--server granian --workers 2`` when granian is installed) behind a round-robin load balancer
with no session affinity, one MCP session across them, one relay killed mid-session; keys
reloaded on SIGHUP in each."""
from __future__ import annotations

import importlib.util
import json
import os
import signal

import pytest
import requests

from raider_sync.gateway.serving import Serving

from gateway.support import ALICE, BOB, Mcp, RoundRobin, relay_process, stop_group, wait_until

pytest.importorskip("gunicorn")


def echo(client: Mcp, text: str) -> str:
    result = client.request("tools/call", {"name": "echo", "arguments": {"message": text}})
    return result["result"]["content"][0]["text"]


def test_one_session_across_relays_survives_losing_one(everything_http, tmp_path):
    keys = tmp_path / "keys"
    keys.mkdir()
    (keys / "alice.json").write_text(json.dumps(
        {"id": "alice", "key": ALICE, "servers": ["everything"]}))
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"servers": [{"name": "everything", "url": everything_http}],
                                  "keys_dir": str(keys)}))
    waitress_relay, url_a = relay_process(str(config), {}, "--threads", "8")
    workers_relay = granian_relay = balancer = serving = client = None
    try:
        workers_relay, url_b = relay_process(str(config), {}, "--workers", "2", "--threads", "8")
        urls = [url_a, url_b]
        if importlib.util.find_spec("granian") is not None:
            granian_relay, url_c = relay_process(str(config), {}, "--server", "granian",
                                                 "--workers", "2", "--threads", "8")
            urls.append(url_c)
        balancer = RoundRobin(urls)
        serving = Serving(balancer, threads=8).start()
        client = Mcp(f"{serving.url}/mcp/everything")
        client.initialize()
        for i in range(4):
            assert echo(client, f"m{i}") == f"Echo: m{i}"
        assert all(balancer.served), balancer.served  # every relay served the one session

        # a new key, in a file, reaches both relays on SIGHUP
        (keys / "bob.json").write_text(json.dumps(
            {"id": "bob", "key": BOB, "servers": ["everything"]}))
        os.kill(waitress_relay.pid, signal.SIGHUP)
        os.kill(workers_relay.pid, signal.SIGHUP)  # the master passes it to its workers
        if granian_relay is not None:
            os.kill(granian_relay.pid, signal.SIGHUP)  # and so does granian's
        for url in urls:
            assert wait_until(lambda url=url: all(
                requests.get(f"{url}/v1/mcp/servers", headers={"X-Api-Key": BOB},
                             timeout=10).status_code == 200 for _ in range(4)), timeout=20), url
        assert workers_relay.poll() is None  # the master did not restart or stop
        assert granian_relay is None or granian_relay.poll() is None

        waitress_relay.kill()  # one machine goes away mid-session
        waitress_relay.wait(10)
        before = sum(balancer.served[1:])
        for i in range(4):
            assert echo(client, f"after{i}") == f"Echo: after{i}"
        assert sum(balancer.served[1:]) >= before + 4  # the survivors carried the same session
    finally:
        if client is not None:
            client.close()
        if serving is not None:
            serving.stop()
        if balancer is not None:
            balancer.close()
        for proc in (waitress_relay, workers_relay, granian_relay):
            if proc is not None:
                stop_group(proc)

