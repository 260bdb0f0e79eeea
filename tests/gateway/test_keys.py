"""Keys from a directory of key files and from an environment variable, reloaded while streams
stay open; usage events as JSON lines on a logger."""
from __future__ import annotations

import hashlib
import json
import logging

import pytest
import requests

from raider_sync.errors import ConfigError
from raider_sync.gateway import protocol
from raider_sync.gateway.config import GatewayConfig
from raider_sync.gateway.keys import authenticate
from raider_sync.gateway.relay import Relay
from raider_sync.gateway.serving import Serving

from gateway.support import ALICE, BOB, wait_until

CAROL = "carol-key-5555555555"


def server(upstream):
    return {"name": "fake", "url": f"{upstream.url}/base"}


def write_key(directory, name, entry):
    (directory / f"{name}.json").write_text(json.dumps(entry))


def test_keys_come_from_files_and_a_variable_besides_the_config(upstream, tmp_path):
    write_key(tmp_path, "alice", {"id": "alice", "key": ALICE, "servers": ["fake"]})
    write_key(tmp_path, "bob", [{"id": "bob", "sha256": hashlib.sha256(BOB.encode()).hexdigest(),
                                 "servers": ["fake"]}])
    (tmp_path / "notes.txt").write_text("not a key file")
    config = GatewayConfig.from_dict(
        {"servers": [server(upstream)], "keys_dir": str(tmp_path), "keys_env": "MORE_KEYS"},
        env={"MORE_KEYS": json.dumps([{"id": "carol", "key": CAROL, "servers": ["fake"]}])})
    assert sorted(k.id for k in config.keys) == ["alice", "bob", "carol"]
    assert ALICE not in repr(config) and ALICE not in config.model_dump_json()  # digests only
    assert ALICE not in repr(config.keys) and CAROL not in config.model_dump_json()
    with Relay(config) as relay:
        for key, key_id in ((ALICE, "alice"), (BOB, "bob"), (CAROL, "carol")):
            assert relay._authenticate({"HTTP_X_API_KEY": key})[0] == key_id


def test_bad_key_files_are_named_in_the_problems(upstream, tmp_path):
    write_key(tmp_path, "a", {"id": "alice", "key": ALICE, "servers": ["nope"]})
    write_key(tmp_path, "b", {"id": "alice", "key": 5, "servers": ["fake"]})
    (tmp_path / "c.json").write_text("{not json")
    write_key(tmp_path, "d", {"id": "dup", "key": "x", "sha256": "0" * 64})
    with pytest.raises(ConfigError) as caught:
        GatewayConfig.from_dict({"servers": [server(upstream)], "keys_dir": str(tmp_path),
                                 "keys_env": "UNSET_KEYS"}, env={})
    problems = caught.value.problems
    assert any(p.startswith("keys_dir/a.json") and "no server named 'nope'" in p for p in problems)
    assert any(p.startswith("keys_dir/b.json.key") for p in problems)
    assert any(p.startswith("keys_dir/c.json") and "JSON" in p for p in problems)
    assert any(p.startswith("keys_dir/d.json.key") and "exactly one" in p for p in problems)
    assert any("UNSET_KEYS is not set" in p for p in problems)
    with pytest.raises(ConfigError, match="keys_dir: cannot read"):
        GatewayConfig.from_dict({"servers": [server(upstream)], "keys_dir": str(tmp_path / "no")})


def test_keys_reload_while_a_stream_stays_open(upstream, tmp_path):
    keys = tmp_path / "keys"
    keys.mkdir()
    write_key(keys, "alice", {"id": "alice", "key": ALICE, "servers": ["fake"]})
    path = tmp_path / "gateway.json"
    path.write_text(json.dumps({"servers": [server(upstream)], "keys_dir": str(keys)}))
    with Relay(GatewayConfig.load(path)) as relay:
        serving = Serving(relay, threads=4).start()
        try:
            url = f"{serving.url}/mcp/fake"
            with requests.get(f"{url}/sse-gated", stream=True, timeout=10,
                              headers={"X-Api-Key": ALICE, "Accept": "text/event-stream"}) as stream:
                chunks = stream.iter_content(chunk_size=None)
                received = next(chunks)
                assert requests.post(url, headers={"X-Api-Key": BOB}, json={},
                                     timeout=10).status_code == 401
                (keys / "alice.json").unlink()
                write_key(keys, "bob", {"id": "bob", "key": BOB, "servers": ["fake"]})
                assert relay.reload_keys() is True
                assert requests.post(url, headers={"X-Api-Key": BOB}, json={},
                                     timeout=10).status_code == 200
                assert requests.post(url, headers={"X-Api-Key": ALICE}, json={},
                                     timeout=10).status_code == 401
                upstream.gate.set()  # alice's stream, opened before, goes on to its end
                for chunk in chunks:
                    received += chunk
            assert received.endswith(b"data: two\n\n")
            # a config that no longer loads keeps the keys in use
            path.write_text("{broken")
            assert relay.reload_keys() is False
            assert requests.post(url, headers={"X-Api-Key": BOB}, json={},
                                 timeout=10).status_code == 200
        finally:
            serving.stop()


def test_usage_events_are_json_lines_on_a_logger(make_gateway, upstream, caplog):
    gw = make_gateway([server(upstream)])
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"message": "hi"}}}
    with caplog.at_level(logging.INFO, logger="raider_sync.gateway.usage"):
        assert requests.post(f"{gw.url}/mcp/fake", headers={"X-Api-Key": ALICE}, json=call,
                             timeout=10).status_code == 200
        assert wait_until(lambda: any(r.name == "raider_sync.gateway.usage" for r in caplog.records))
    record = next(r for r in caplog.records if r.name == "raider_sync.gateway.usage")
    event = json.loads(record.getMessage())
    assert event == record.usage
    assert (event["key"], event["server"], event["method"], event["rpc"], event["tool"],
            event["status"]) == ("alice", "fake", "POST", "tools/call", "echo", 200)
    assert event["request_bytes"] > 0 and event["response_bytes"] > 0 and event["duration_ms"] >= 0


@pytest.mark.parametrize("body, expected", [
    (b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}', ("initialize", None)),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x"}}',
     ("tools/call", "x")),
    (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": 5}}',
     ("tools/call", None)),
    (b'[{"method": "ping"}]', (None, None)), (b"not json", (None, None)), (b"", (None, None)),
    (b'{"result": {}}', (None, None)), (None, (None, None)), (5, (None, None)),
    (b"[" * 100000, (None, None))])
def test_rpc_call_reads_the_method_and_tool_and_never_raises(body, expected):
    assert protocol.rpc_call(body) == expected


def test_authenticate_finds_the_presented_key_by_bearer_or_x_api_key():
    digests = [("alice", hashlib.sha256(ALICE.encode()).digest(), frozenset({"a"})),
               ("bob", hashlib.sha256(BOB.encode()).digest(), frozenset({"b"}))]
    assert authenticate({"HTTP_AUTHORIZATION": f"Bearer {ALICE}"}, digests) \
        == ("alice", frozenset({"a"}), ALICE)
    assert authenticate({"HTTP_AUTHORIZATION": f"bearer  {BOB} "}, digests)[0] == "bob"
    assert authenticate({"HTTP_X_API_KEY": BOB}, digests)[0] == "bob"
    # a Basic header is no key; X-Api-Key is looked at then
    assert authenticate({"HTTP_AUTHORIZATION": f"Basic {ALICE}"}, digests) is None
    assert authenticate({"HTTP_AUTHORIZATION": "Basic x", "HTTP_X_API_KEY": ALICE},
                        digests)[0] == "alice"
    assert authenticate({"HTTP_X_API_KEY": "not-a-key"}, digests) is None
    assert authenticate({}, digests) is None
