"""Tools per key: tools/list answers filtered (JSON and SSE, both eras, page by page), calls to
a tool the key may not use refused before the upstream as server-everything refuses a tool it
does not have, and the rules checked at load."""
from __future__ import annotations

import json
import os
import signal

import pytest
import requests

from raider_sync import McpServer
from raider_sync.client.filters import ToolFilter
from raider_sync.errors import ConfigError
from raider_sync.gateway import tool_rules
from raider_sync.gateway.config import GatewayConfig
from raider_sync.gateway.upstream import Upstream

from conftest import config_of
from gateway.support import ALICE, BOB, Mcp, messages, relay_process, stop_group, wait_until

RULES = {"allow": ["echo", "get-*"], "deny": ["get-env", "get-resource-*"]}
SHOWN = {"echo", "get-annotated-message", "get-structured-content", "get-sum", "get-tiny-image"}
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}}


def keys(server: str, rules: dict = RULES) -> list[dict]:
    """alice under ``rules`` on ``server``, bob without rules."""
    return [{"id": "alice", "env": "ALICE", "servers": [server], "tools": {server: rules}},
            {"id": "bob", "env": "BOB", "servers": [server]}]


@pytest.fixture
def sends(monkeypatch) -> list[str]:
    """The URL of every request the relay sends upstream from now on."""
    sent: list[str] = []
    original = Upstream.send

    def counted(self, method, url, *args, **kw):
        sent.append(url)
        return original(self, method, url, *args, **kw)

    monkeypatch.setattr(Upstream, "send", counted)
    return sent


def test_a_key_lists_only_its_tools_and_a_denied_call_never_goes_upstream(
        everything_http, make_gateway, sends):
    gw = make_gateway([{"name": "everything", "url": everything_http}], keys("everything"))
    alice, bob = Mcp(f"{gw.url}/mcp/everything"), Mcp(f"{gw.url}/mcp/everything", key=BOB)
    try:
        alice.initialize()
        bob.initialize()
        answer = alice.post({"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {}})
        assert answer.headers["Content-Type"].startswith("text/event-stream")  # an SSE answer
        assert {t["name"] for t in messages(answer)[-1]["result"]["tools"]} == SHOWN
        everything = {t["name"] for t in bob.request("tools/list")["result"]["tools"]}
        assert SHOWN < everything and "get-env" in everything, "a key without rules sees all"

        missing = bob.request("tools/call", {"name": "no-such-tool", "arguments": {}})
        before = len(sends)
        refused = alice.post({"jsonrpc": "2.0", "id": 6, "method": "tools/call",
                              "params": {"name": "get-env", "arguments": {}}})
        assert len(sends) == before, "the refused call never reached the upstream"
        assert refused.status_code == 200
        assert refused.json()["result"] == json.loads(json.dumps(missing["result"]).replace(
            "no-such-tool", "get-env")), "refused as server-everything refuses a missing tool"
        assert refused.json()["id"] == 6
        echoed = alice.request("tools/call", {"name": "echo", "arguments": {"message": "hi"}})
        assert echoed["result"]["content"][0]["text"] == "Echo: hi"
    finally:
        alice.close()
        bob.close()
    refusals = [e for e in gw.events if e.get("refused")]
    assert [(e["key"], e["tool"], e["refused"]) for e in refusals] == [
        ("alice", "get-env", "tool_rules")]


def test_raider_sync_through_the_gateway_sees_only_the_keys_tools(everything_http, make_gateway):
    gw = make_gateway([{"name": "everything", "url": everything_http}], keys("everything"))
    spec = config_of({"everything": {"type": "http", "url": f"{gw.url}/mcp/everything",
                                     "headers": {"Authorization": f"Bearer {ALICE}"}}}
                     ).server("everything")
    with McpServer(spec) as server:
        assert server.status == "connected", server.reason
        names = {t["name"] for t in server.list_tools()}
        assert names == {f"mcp__everything__{n}" for n in SHOWN}
        summed = server.call_tool("mcp__everything__get-sum", {"a": 2, "b": 3})
        assert summed.text == "The sum of 2 and 3 is 5."


def test_the_stateless_era_json_answers_are_filtered_and_calls_refused(
        sdk_http, make_gateway, sends):
    rules = {"allow": ["*"], "deny": ["a?d", "slo*"]}
    gw = make_gateway([{"name": "sdk", "url": sdk_http}], keys("sdk", rules))
    spec = config_of({"sdk": {"type": "http", "url": f"{gw.url}/mcp/sdk",
                              "headers": {"Authorization": f"Bearer {ALICE}"}}}).server("sdk")
    with McpServer(spec) as server:
        assert server.status == "connected" and server.era == "modern", server.reason
        names = {t["name"] for t in server.list_tools()}
        assert "mcp__sdk__echo" in names and not names & {"mcp__sdk__add", "mcp__sdk__slow"}

    headers = {"Authorization": f"Bearer {ALICE}", "Content-Type": "application/json",
               "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2026-07-28"}
    listed = requests.post(f"{gw.url}/mcp/sdk", timeout=20, headers={
        **headers, "Mcp-Method": "tools/list"}, data=json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": META}}))
    assert listed.headers["Content-Type"].startswith("application/json")  # a JSON answer
    result = listed.json()["result"]
    assert result["resultType"] == "complete" and "echo" in {t["name"] for t in result["tools"]}
    assert not {"add", "slow"} & {t["name"] for t in result["tools"]}
    before = len(sends)
    refused = requests.post(f"{gw.url}/mcp/sdk", timeout=20, headers={
        **headers, "Mcp-Method": "tools/call", "Mcp-Name": "add"}, data=json.dumps(
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "add", "arguments": {"a": 1, "b": 2}, "_meta": META}}))
    assert len(sends) == before
    assert refused.json() == {"jsonrpc": "2.0", "id": 2, "result": {
        "content": [{"type": "text", "text": "MCP error -32602: Tool add not found"}],
        "isError": True, "resultType": "complete"}}


def test_rules_that_name_no_server_of_the_key_or_an_empty_glob_are_refused():
    data = {"servers": [{"name": "a", "url": "http://127.0.0.1:1/mcp"}],
            "keys": [{"id": "k", "sha256": "0" * 64, "servers": ["a"],
                      "tools": {"b": {"allow": ["x"]}, "a": {"deny": [""], "other": 1}}}]}
    with pytest.raises(ConfigError) as caught:
        GatewayConfig.from_dict(data)
    problems = " | ".join(caught.value.problems)
    assert "keys[0] (k).tools.a.other: unknown field" in problems
    data["keys"][0]["tools"] = {"b": {"allow": ["x"]}, "a": {"deny": [""]}}
    with pytest.raises(ConfigError) as caught:
        GatewayConfig.from_dict(data)
    assert caught.value.problems == [
        "keys[0] (k).tools.b: the key may not use a server named 'b'",
        "keys[0] (k).tools.a.deny: a tool name or glob may not be empty"]


# -- the rewriting itself, byte by byte ------------------------------------------------------

RULE = ToolFilter(["echo", "get-*"], ["get-env"])


def page(ident, names, cursor=None) -> dict:
    result: dict = {"tools": [{"name": n, "inputSchema": {"type": "object"}} for n in names]}
    if cursor:
        result["nextCursor"] = cursor
    return {"jsonrpc": "2.0", "id": ident, "result": result}


def list_screen(*ids) -> tool_rules.Screen:
    return tool_rules.screen(RULE, [{"jsonrpc": "2.0", "id": i, "method": "tools/list"}
                                    for i in ids], "POST", False)


def test_each_page_of_a_paginated_list_is_filtered_and_keeps_its_cursor():
    first = list_screen(1).json(json.dumps(page(1, ["echo", "get-env", "rm"], "c2")).encode())
    assert json.loads(first) == page(1, ["echo"], "c2")
    second = list_screen(2).json(json.dumps(page(2, ["get-sum", "zap"])).encode())
    assert json.loads(second) == page(2, ["get-sum"])
    untouched = json.dumps(page(3, ["echo", "get-sum"]), indent=1).encode()
    assert list_screen(3).json(untouched) is untouched, "nothing taken out: the bytes as sent"


@pytest.mark.parametrize("newline", [b"\n", b"\r\n", b"\r"])
def test_only_the_lists_sse_event_is_rewritten_whatever_the_chunks(newline):
    answer = json.dumps(page(7, ["echo", "get-env", "get-sum"], "next")).encode()
    before = b"event: message" + newline + b"id: 1" + newline + b"data: " + newline * 2 + \
        b": a comment" + newline * 2 + b'data: {"jsonrpc":"2.0","method":"notifications/' \
        b'message","params":{"tools":1}}' + newline * 2
    stream = before + b"event: message" + newline + b"id: 2" + newline + b"data: " + answer + \
        newline * 2 + b"data: after" + newline * 2
    expected = before + b"event: message" + newline + b"id: 2" + newline + b"data: " + \
        json.dumps(page(7, ["echo", "get-sum"], "next"), separators=(",", ":")).encode() + \
        newline * 2 + b"data: after" + newline * 2
    for size in (1, 2, 7, len(stream)):
        chunks = [stream[i:i + size] for i in range(0, len(stream), size)]
        assert b"".join(list_screen(7).events(iter(chunks))) == expected, size


def test_a_get_stream_under_rules_filters_any_answer_holding_tools():
    replayed = b"id: 9\ndata: " + json.dumps(page("x", ["echo", "rm"])).encode() + b"\n\n"
    screen = tool_rules.screen(RULE, None, "GET", False)
    assert json.loads(b"".join(screen.events(iter([replayed])))[12:]) == page("x", ["echo"])
    assert tool_rules.screen(ToolFilter(), None, "GET", False) is None, "no rules, no screen"


def test_a_batch_with_a_denied_call_is_answered_whole_and_not_relayed():
    batch = [{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo"}},
             {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "get-env"}},
             {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}}]
    refusal = json.loads(tool_rules.screen(RULE, batch, "POST", False).refusal)
    assert [(a["id"], "error" in a) for a in refusal] == [(1, True), (2, False)]
    assert refusal[1]["result"]["content"][0]["text"] == "MCP error -32602: Tool get-env not found"
    assert tool_rules.screen(RULE, batch[:1], "POST", False) is None, "allowed: relayed as is"


# -- reloading on SIGHUP ---------------------------------------------------------------------

def test_sighup_reloads_servers_rules_and_limits_while_a_stream_stays_open(
        upstream, everything_http, tmp_path):
    path = tmp_path / "gateway.json"

    def write(rules: dict, servers: list[dict], limits: dict) -> None:
        path.write_text(json.dumps({
            "servers": servers, "limits": limits,
            "keys": [{"id": "alice", "env": "ALICE", "servers": [s["name"] for s in servers],
                      "tools": {"everything": rules}}]}))

    fake, everything = {"name": "fake", "url": upstream.url}, \
        {"name": "everything", "url": everything_http}
    write({"allow": ["echo"]}, [fake, everything], {"streams_per_key": 4})
    proc, base = relay_process(str(path), {"ALICE": ALICE})
    auth = {"X-Api-Key": ALICE, "Accept": "text/event-stream"}
    try:
        with requests.get(f"{base}/mcp/fake/sse-gated", stream=True, timeout=10,
                          headers=auth) as stream:
            chunks = stream.iter_content(chunk_size=None)
            received = next(chunks)
            assert requests.post(f"{base}/mcp/again", json={}, headers=auth,
                                 timeout=10).status_code == 404
            write({"allow": ["echo", "get-sum"]},
                  [fake, everything, {"name": "again", "url": everything_http}],
                  {"streams_per_key": 1})
            os.kill(proc.pid, signal.SIGHUP)
            assert wait_until(lambda: requests.post(f"{base}/mcp/again", json={}, headers=auth,
                                                    timeout=10).status_code != 404)
            client = Mcp(f"{base}/mcp/everything")
            try:
                client.initialize()
                names = {t["name"] for t in client.request("tools/list")["result"]["tools"]}
            finally:
                client.close()
            assert names == {"echo", "get-sum"}, "the new rules"
            # the new stream limit, counted with the stream opened before the reload
            assert requests.get(f"{base}/mcp/fake/sse-gated", headers=auth,
                                timeout=10).status_code == 429
            upstream.gate.set()  # the stream opened before goes on to its end
            for chunk in chunks:
                received += chunk
        assert received.endswith(b"data: two\n\n")
    finally:
        stop_group(proc)
