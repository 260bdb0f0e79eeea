"""A ToolServer served over Streamable HTTP as a WSGI app (waitress), in both eras: raider_sync
and the official SDK's client as clients, and the header checks of the stateless revision."""
from __future__ import annotations

import asyncio

import pytest
import requests
from conftest import config_of

from raider_sync import McpServer, ToolServer
from raider_sync.gateway.cli import Serving
from raider_sync.serving_http import wsgi_app

WAIT = 30.0
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}}


@pytest.fixture
def served():
    tools = ToolServer("local", instructions="Served over HTTP.")
    tools.add_tool("add", lambda a, b: str(a + b), description="Add two numbers.")
    tools.add_resource("local://note", lambda: "a note", name="note")
    serving = Serving(wsgi_app(tools)).start()
    yield f"{serving.url}/mcp"
    serving.stop(10)
    tools.close()


@pytest.mark.parametrize("protocol,era", [("auto", "modern"), ("legacy", "legacy")])
def test_raider_sync_in_either_era(served, protocol, era):
    spec = config_of({"local": {"type": "http", "url": served, "protocol": protocol}}
                     ).server("local")
    with McpServer(spec) as server:
        assert server.status == "connected", server.reason
        assert server.era == era and server.instructions == "Served over HTTP."
        assert server._transport.session_id is None
        assert server.call_tool("mcp__local__add", {"a": 2, "b": 5})["content"][0]["text"] == "7"
        assert server.read_resource("local://note")[0]["text"] == "a note"


def test_the_sdk_client_in_the_stateless_era(served):
    from mcp import Client

    async def run():
        async with Client(served, mode="2026-07-28") as client:
            tools = await client.list_tools()
            result = await client.call_tool("add", {"a": 1, "b": 2})
            return [t.name for t in tools.tools], result.content[0].text

    names, text = asyncio.run(asyncio.wait_for(run(), WAIT))
    assert names == ["add"] and text == "3"


def post(url: str, body: dict, **headers) -> requests.Response:
    return requests.post(url, json=body, timeout=WAIT, headers={
        "Accept": "application/json, text/event-stream", **headers})


def test_headers_must_agree_with_the_body(served):
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 1, "b": 1}, "_meta": META}}
    good = post(served, call, **{"MCP-Protocol-Version": "2026-07-28",
                                 "Mcp-Method": "tools/call", "Mcp-Name": "add"})
    assert good.status_code == 200 and good.json()["result"]["resultType"] == "complete"
    lying = post(served, call, **{"MCP-Protocol-Version": "2026-07-28",
                                  "Mcp-Method": "tools/list", "Mcp-Name": "add"})
    assert lying.status_code == 400 and lying.json()["error"]["code"] == -32020
    renamed = post(served, call, **{"MCP-Protocol-Version": "2026-07-28",
                                    "Mcp-Method": "tools/call", "Mcp-Name": "other"})
    assert renamed.status_code == 400 and renamed.json()["error"]["code"] == -32020
    bare = dict(call, params={"name": "add", "arguments": {}})
    missing = post(served, bare, **{"MCP-Protocol-Version": "2026-07-28",
                                    "Mcp-Method": "tools/call", "Mcp-Name": "add"})
    assert missing.status_code == 400 and missing.json()["error"]["code"] == -32602
    unknown = post(served, {"jsonrpc": "2.0", "id": 2, "method": "nope", "params": {"_meta": META}},
                   **{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "nope"})
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == -32601
    assert requests.get(served, timeout=WAIT).status_code == 405
