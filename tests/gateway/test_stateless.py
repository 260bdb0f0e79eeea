"""The relay and MCP's stateless revision: raider_sync through the gateway to the SDK's server
in its modern mode, the Mcp-Method/Mcp-Name check, Mcp-Param-* passed through, and the JSON-RPC
method and tool in the usage events."""
from __future__ import annotations

import json

import requests

from raider_sync import McpServer

from conftest import config_of
from gateway.support import ALICE

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}}


def test_raider_sync_through_the_gateway_in_the_stateless_era(sdk_http, make_gateway):
    gw = make_gateway([{"name": "sdk", "url": sdk_http}])
    spec = config_of({"sdk": {"type": "http", "url": f"{gw.url}/mcp/sdk",
                              "headers": {"Authorization": f"Bearer {ALICE}"}}}).server("sdk")
    with McpServer(spec) as server:
        assert server.status == "connected", server.reason
        assert server.era == "modern" and server._transport.session_id is None
        assert server.call_tool("mcp__sdk__echo", {"message": "hi"})["content"][0]["text"] == "hi"
    events = [e for e in gw.wait_events(3) if e.get("rpc")]
    assert events[0]["rpc"] == "server/discover"
    calls = [e for e in events if e["rpc"] == "tools/call"]
    assert calls and calls[-1]["tool"] == "echo" and calls[-1]["status"] == 200


def test_headers_that_disagree_with_the_body_are_refused(upstream, make_gateway):
    gw = make_gateway([{"name": "up", "url": f"{upstream.url}/echo"}])
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "delete_all", "arguments": {"region": "eu"}, "_meta": META}}
    headers = {"Authorization": f"Bearer {ALICE}", "Content-Type": "application/json",
               "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2026-07-28"}
    url = f"{gw.url}/mcp/up"
    disguised = requests.post(url, data=json.dumps(call), timeout=20, headers={
        **headers, "Mcp-Method": "tools/list"})
    assert disguised.status_code == 400
    assert disguised.json() == {"jsonrpc": "2.0", "id": 7, "error": {
        "code": -32020, "message": "Mcp-Method 'tools/list' does not match the body's method "
                                   "'tools/call'"}}
    renamed = requests.post(url, data=json.dumps(call), timeout=20, headers={
        **headers, "Mcp-Method": "tools/call", "Mcp-Name": "read_only"})
    assert renamed.status_code == 400 and renamed.json()["error"]["code"] == -32020
    assert upstream.requests == [], "a refused request never reaches the server"

    agreed = requests.post(url, data=json.dumps(call), timeout=20, headers={
        **headers, "Mcp-Method": "tools/call", "Mcp-Name": "delete_all",
        "Mcp-Param-Region": "eu"})
    assert agreed.status_code == 200
    relayed = {k.lower(): v for k, v in upstream.requests[0]["headers"]}
    assert relayed["mcp-param-region"] == "eu" and relayed["mcp-name"] == "delete_all"
    events = gw.wait_events(3)
    assert [(e["status"], e["rpc"], e["tool"]) for e in events] == [
        (400, "tools/call", "delete_all"), (400, "tools/call", "delete_all"),
        (200, "tools/call", "delete_all")]


def test_a_stateless_request_without_its_headers_is_refused(upstream, make_gateway):
    gw = make_gateway([{"name": "up", "url": f"{upstream.url}/echo"}])
    call = {"jsonrpc": "2.0", "id": 8, "method": "tools/call",
            "params": {"name": "delete_all", "arguments": {}, "_meta": META}}
    base = {"Authorization": f"Bearer {ALICE}", "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream"}
    # stateless by its version header, or by its _meta alone: no header is no exemption
    for headers in ({**base, "MCP-Protocol-Version": "2026-07-28"}, base):
        answer = requests.post(f"{gw.url}/mcp/up", data=json.dumps(call), headers=headers,
                               timeout=20)
        assert answer.status_code == 400 and answer.json()["error"]["code"] == -32020
    assert upstream.requests == []
    legacy = {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
              "params": {"name": "delete_all", "arguments": {}}}
    relayed = requests.post(f"{gw.url}/mcp/up", data=json.dumps(legacy), timeout=20, headers={
        **base, "MCP-Protocol-Version": "2025-11-25"})
    assert relayed.status_code == 200 and len(upstream.requests) == 1, "the handshake era"
