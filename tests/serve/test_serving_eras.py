"""A ToolServer served over stdio answers both eras: raider_sync and the official SDK's client,
each in the stateless revision and in the handshake, get their own."""
from __future__ import annotations

import asyncio
import sys
import threading

import pytest

from raider_sync import McpError, McpServer

from conftest import config_of

WAIT = 30.0
DEMO = [sys.executable, "-m", "raider_sync.cli.demo"]


def demo_spec(**entry):
    return config_of({"demo": {"command": DEMO[0], "args": DEMO[1:], **entry}}).server("demo")


@pytest.mark.parametrize("protocol,era", [("auto", "modern"), ("legacy", "legacy")])
def test_raider_sync_in_either_era(protocol, era):
    with McpServer(demo_spec(protocol=protocol), kill_grace=0.3) as demo:
        assert demo.status == "connected", demo.reason
        assert demo.era == era and demo.server_info["name"] == "demo"
        assert demo.call_tool("mcp__demo__add", {"a": 2, "b": 3})["content"][0]["text"] == "5"
        assert demo.list_prompts() and demo.list_resources()
        with demo.listen(tools=True) as sub:
            assert sub.wait_acknowledged(WAIT)
            assert sub.honored == {"toolsListChanged": True}
        demo.ping()


@pytest.mark.parametrize("protocol,code", [("auto", -32602), ("legacy", -32002)])
def test_a_missing_resource_is_answered_as_its_era_says(protocol, code):
    with McpServer(demo_spec(protocol=protocol), kill_grace=0.3) as demo:
        error = pytest.raises(McpError, demo.read_resource, "demo://missing").value
    assert error.code == code and error.data == {"uri": "demo://missing"}


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
def test_the_sdk_client_in_either_era(mode):
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    async def run() -> tuple:
        params = StdioServerParameters(command=DEMO[0], args=DEMO[1:])
        async with Client(params, mode=mode) as client:
            tools = await client.list_tools()
            result = await client.call_tool("add", {"a": 4, "b": 5})
            return [tool.name for tool in tools.tools], result.content[0].text

    names, text = asyncio.run(asyncio.wait_for(run(), WAIT))
    assert "add" in names and text == "9"


def test_initialize_after_discover_is_refused():
    """The era is fixed by the first request: a handshake after a stateless request gets
    -32022 naming the revision served (what the SDK's servers answer too)."""
    import io
    import json

    from raider_sync.serve.serving import serve_stdio
    from raider_sync.serve.toolserver import ToolServer

    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}}
    lines = [{"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}},
             {"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {
                 "protocolVersion": "2025-11-25", "capabilities": {},
                 "clientInfo": {"name": "t", "version": "1"}}},
             {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}}]
    stdin = io.BytesIO("".join(json.dumps(line) + "\n" for line in lines).encode())
    stdout = io.BytesIO()
    stdout.close = lambda: None  # keep what was written readable
    with ToolServer("t") as tools:
        tools.add_tool("noop", lambda: "ok")
        done = threading.Event()
        thread = threading.Thread(target=lambda: (serve_stdio(tools, stdin=stdin, stdout=stdout),
                                                  done.set()))
        thread.start()
        thread.join(WAIT)
    answers = {m["id"]: m for m in map(json.loads, stdout.getvalue().decode().splitlines())}
    assert answers[1]["result"]["supportedVersions"] == ["2026-07-28"]
    assert answers[2]["error"]["code"] == -32022
    assert answers[3]["error"]["code"] == -32602, "a stateless request needs its _meta"


def test_a_stateless_listen_over_stdio_carries_resource_updates():
    """A served ToolServer announces :meth:`resource_updated` to the listens that asked for
    the resource (or one above it), tagged with their request id; the handshake era offers
    resources/subscribe instead (test_resources_served.py)."""
    from raider_sync import ToolServer

    with ToolServer("local") as tools:
        tools.add_resource("local://notes/a", lambda: "a", name="a")
        with McpServer.in_process(tools, protocol="modern") as server:
            assert server.era == "modern"
            assert server.capabilities["resources"]["subscribe"] is True
            with server.listen(uris=["local://notes"]) as sub:
                assert sub.wait_acknowledged(WAIT)
                assert sub.honored == {"resourceSubscriptions": ["local://notes"]}
                tools.resource_updated("local://elsewhere")
                tools.resource_updated("local://notes/a")
                event = sub.next(WAIT)
                assert event["method"] == "notifications/resources/updated"
                assert event["params"]["uri"] == "local://notes/a", \
                    "the update not asked for, sent first, was not sent"
        with McpServer.in_process(tools, protocol="legacy") as server:
            assert server.capabilities["resources"]["subscribe"] is True


def test_requests_read_before_the_input_ends_are_all_answered(monkeypatch):
    """A client that writes its requests and closes the server's stdin still gets an answer
    to each: those queued behind busy handler threads when the session closes still run."""
    import io
    import json

    from raider_sync.serve.serving import serve_stdio
    from raider_sync.serve.toolserver import ToolServer
    from raider_sync.threads import workers

    closing = threading.Event()  # the session's pools have been shut (their queues settled)
    shutdown = workers.Workers.shutdown

    def shutdown_noted(self, wait=True, *, cancel_futures=False):
        shutdown(self, False, cancel_futures=cancel_futures)
        closing.set()  # only now may the busy handlers end and look for queued work
        shutdown(self, wait, cancel_futures=cancel_futures)

    monkeypatch.setattr(workers.Workers, "shutdown", shutdown_noted)
    calls = 40  # more than the handler threads (16), so that some wait in the queue
    lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    lines += [{"jsonrpc": "2.0", "id": 10 + n, "method": "tools/call",
               "params": {"name": "until_close", "arguments": {}}} for n in range(calls)]
    stdin = io.BytesIO("".join(json.dumps(line) + "\n" for line in lines).encode())
    stdout = io.BytesIO()
    stdout.close = lambda: None  # keep what was written readable
    with ToolServer("t") as tools:
        tools.add_tool("until_close", lambda: "ok" if closing.wait(WAIT) else "not closed")
        thread = threading.Thread(target=serve_stdio, args=(tools,),
                                  kwargs={"stdin": stdin, "stdout": stdout})
        thread.start()
        thread.join(WAIT)
        assert not thread.is_alive()
    answers = {m["id"]: m for m in map(json.loads, stdout.getvalue().decode().splitlines())
               if "id" in m}
    assert sorted(answers) == [1] + [10 + n for n in range(calls)]
    assert all(answers[10 + n]["result"]["content"][0]["text"] == "ok" for n in range(calls))
