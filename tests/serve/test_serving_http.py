"""A ToolServer served over Streamable HTTP as a WSGI app (waitress), in both eras: raider_sync
and the official SDK's client as clients, and the header checks of the stateless revision."""
from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import threading
from typing import NamedTuple

import pytest
import requests

from raider_sync import McpError, McpServer, SubscriptionEnded, ToolServer
from raider_sync.gateway.cli import Serving
from raider_sync.serve.serving_http import ToolServerApp, wsgi_app

from conftest import config_of, free_port, wait_for_port

WAIT = 30.0
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}}


class Served(NamedTuple):
    url: str
    app: ToolServerApp
    tools: ToolServer


def steps(count: int, progress) -> str:
    """Report ``count`` steps of progress."""
    for step in range(count):
        progress(step + 1, count, f"step {step + 1}")
    return f"{count} steps"


@pytest.fixture
def serve():
    """serve(**app_options): a ToolServer (add, steps, a resource) served under waitress on
    a free port; the app is closed, then waitress stopped, at the end."""
    started: list = []

    def make(**options) -> Served:
        tools = ToolServer("local", instructions="Served over HTTP.")
        tools.add_tool("add", lambda a, b: str(a + b), description="Add two numbers.")
        tools.add_tool("steps", steps)
        tools.add_resource("local://note", lambda: "a note", name="note")
        app = wsgi_app(tools, **options)
        serving = Serving(app).start()
        started.append((app, serving, tools))
        return Served(f"{serving.url}/mcp", app, tools)

    yield make
    for app, serving, tools in started:
        app.close()
        serving.stop(10)
        tools.close()


@pytest.fixture
def served(serve):
    return serve().url


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
    assert names == ["add", "steps"] and text == "3"


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
    assert requests.get(served, timeout=WAIT).status_code == 406, "a GET stream needs Accept"
    modern_get = requests.get(served, timeout=WAIT, headers={
        "Accept": "text/event-stream", "MCP-Protocol-Version": "2026-07-28"})
    assert modern_get.status_code == 405, "the stateless revision has no GET stream"
    assert requests.delete(served, timeout=WAIT).status_code == 405


# -- event streams --------------------------------------------------------------------------

def connect(url: str, protocol: str, **options) -> McpServer:
    spec = config_of({"local": {"type": "http", "url": url, "protocol": protocol}}
                     ).server("local")
    server = McpServer(spec, **options)
    server.start_f().result(WAIT)
    assert server.status == "connected", server.reason
    return server


@pytest.mark.parametrize("protocol", ["auto", "legacy"])
def test_progress_of_a_call_comes_on_its_event_stream(serve, protocol):
    served = serve()
    with connect(served.url, protocol) as server:
        seen = []
        result = server.call_tool("mcp__local__steps", {"count": 3},
                                  on_progress=lambda p, t, m: seen.append((p, t, m)))
        assert result.text == "3 steps"
        assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
        assert server.call_tool("mcp__local__add", {"a": 1, "b": 1}).text == "2", \
            "without a progress token: one JSON answer"


def test_listen_carries_list_changes_and_resource_updates(serve):
    served = serve()
    changed = threading.Event()
    with connect(served.url, "auto", on_tools_changed=lambda s: changed.set()) as server:
        assert server.era == "modern"
        assert served.app.streams.count == 1, "the client's own listen for list changes"
        with server.listen(tools=True, uris=["local://note"]) as sub:
            assert sub.wait_acknowledged(WAIT)
            assert sub.honored == {"toolsListChanged": True,
                                   "resourceSubscriptions": ["local://note"]}
            served.tools.add_tool("late", lambda: "here")
            event = sub.next(WAIT)
            assert event["method"] == "notifications/tools/list_changed"
            served.tools.resource_updated("local://other")  # not asked for: not sent
            served.tools.resource_updated("local://note")
            event = sub.next(WAIT)
            assert event["method"] == "notifications/resources/updated"
            assert event["params"]["uri"] == "local://note"
        assert changed.wait(WAIT), "listed again"
        assert "mcp__local__late" in {tool["name"] for tool in server.list_tools(WAIT)}
        assert server.call_tool("mcp__local__late", {}).text == "here"
    assert served.app.streams.wait_idle(WAIT), "every stream ended when its client went"


def test_the_handshake_era_gets_list_changes_on_the_get_stream(serve):
    served = serve()
    changed = threading.Event()
    with connect(served.url, "legacy", on_tools_changed=lambda s: changed.set()) as server:
        assert server.era == "legacy"
        with server.listen(tools=True) as sub:
            served.tools.add_tool("late", lambda: "here")
            event = sub.next(WAIT)
            assert event is not None and event["method"] == "notifications/tools/list_changed"
        assert changed.wait(WAIT), "listed again"
        assert "mcp__local__late" in {tool["name"] for tool in server.list_tools(WAIT)}
        assert server.call_tool("mcp__local__late", {}).text == "here"
    assert served.app.streams.wait_idle(WAIT)


def test_closing_the_app_ends_listen_streams_with_their_answer(serve):
    served = serve()
    with connect(served.url, "auto") as server:
        sub = server.listen(tools=True)
        assert sub.wait_acknowledged(WAIT)
        served.app.close()
        with pytest.raises(SubscriptionEnded, match="the server ended the stream"):
            sub.next(WAIT)
        assert served.app.streams.wait_idle(WAIT)
        assert server.call_tool("mcp__local__add", {"a": 2, "b": 2}).text == "4", \
            "calls are still answered"
        again = post(served.url, listen_body(9), **modern_headers("subscriptions/listen"))
        assert again.status_code == 503


def listen_body(request_id: int) -> dict:
    return {"jsonrpc": "2.0", "id": request_id, "method": "subscriptions/listen",
            "params": {"notifications": {"toolsListChanged": True}, "_meta": META}}


def modern_headers(method: str) -> dict:
    return {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}


def test_long_lived_streams_are_bounded(serve):
    served = serve(max_streams=1, keepalive=0.2)
    with requests.Session() as http:
        first = http.post(served.url, json=listen_body(1), stream=True, timeout=WAIT, headers={
            "Accept": "application/json, text/event-stream", **modern_headers(
                "subscriptions/listen")})
        try:
            assert first.status_code == 200
            assert first.headers["Content-Type"] == "text/event-stream"
            lines = first.iter_lines()
            assert next(lines).startswith(b"event: message")
            ack = json.loads(next(lines)[len(b"data: "):])
            assert ack["method"] == "notifications/subscriptions/acknowledged"
            assert ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 1
            assert next(line for line in lines if line) == b": keep-alive", \
                "a silent stream gets comments"
            second = post(served.url, listen_body(2), **modern_headers("subscriptions/listen"))
            assert second.status_code == 503 and second.headers["Retry-After"] == "5"
            assert second.json()["error"]["code"] == -32603
            get = requests.get(served.url, timeout=WAIT, headers={"Accept": "text/event-stream"})
            assert get.status_code == 503, "the GET stream counts too"
        finally:
            first.close()
    assert served.app.streams.wait_idle(WAIT), "the stream ended when its client went"
    json_only = requests.post(served.url, json=listen_body(3), timeout=WAIT, headers={
        "Accept": "application/json", **modern_headers("subscriptions/listen")})
    assert json_only.status_code == 406


def test_the_sdk_client_listens_and_sees_progress_in_either_era(serve):
    from mcp import Client
    served = serve()

    async def call(client) -> tuple:
        seen = []

        async def progress(value, total, message):
            seen.append(value)
        result = await client.call_tool("steps", {"count": 2}, progress_callback=progress)
        return result.content[0].text, seen

    async def modern() -> tuple:
        async with Client(served.url, mode="2026-07-28") as client:
            called = await call(client)
            async with client.listen(tools_list_changed=True) as sub:
                served.tools.add_tool("late", lambda: "here")
                event = await asyncio.wait_for(sub.__anext__(), WAIT)
            return called, type(event).__name__

    async def legacy() -> tuple:
        async with Client(served.url, mode="legacy") as client:
            return await call(client)

    called, event = asyncio.run(asyncio.wait_for(modern(), WAIT * 2))
    assert called == ("2 steps", [1, 2]) and "Tools" in event
    assert asyncio.run(asyncio.wait_for(legacy(), WAIT * 2)) == ("2 steps", [1, 2])


SERVE = """
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
from raider_sync import ToolServer
from raider_sync.serve.serving_http import serve_http
with ToolServer("local") as tools:
    tools.add_tool("add", lambda a, b: str(a + b))
    serve_http(tools, "127.0.0.1", int(sys.argv[1]))
print("stopped", flush=True)
"""


def test_serve_http_ends_listen_streams_gracefully_on_ctrl_c():
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", SERVE, str(port)], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        wait_for_port(port, WAIT, proc)
        with connect(f"http://127.0.0.1:{port}/mcp", "auto") as server:
            sub = server.listen(tools=True)
            assert sub.wait_acknowledged(WAIT)
            proc.send_signal(signal.SIGINT)
            with pytest.raises(SubscriptionEnded, match=r"the server ended the stream$"):
                sub.next(WAIT)
        assert proc.wait(WAIT) == 0
        assert proc.stdout.read() == b"stopped\n"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(WAIT)
        proc.stdout.close()


def test_a_client_refused_every_stream_stays_usable_and_backs_off(serve):
    from raider_sync.client.eras.era_seam import MAX_RELISTEN_DELAY, relisten_delay
    assert [relisten_delay(n) for n in range(7)] == [1, 2, 4, 8, 16, 30, 30]
    assert relisten_delay(10_000) == MAX_RELISTEN_DELAY
    served = serve(max_streams=0)
    with connect(served.url, "auto") as server:
        assert server.era == "modern"
        with pytest.raises(McpError, match="cannot serve this listen: .*too many event streams"):
            server.listen(tools=True, timeout=WAIT)
        assert server.call_tool("mcp__local__add", {"a": 1, "b": 2}).text == "3"
    assert served.app.streams.count == 0


def test_invalid_requests_are_400_with_invalid_request(served):
    from jsonrpc_cases import INVALID_NOTIFICATION, INVALID_REQUESTS
    for request, answer_id in INVALID_REQUESTS:
        answer = post(served, request)
        assert answer.status_code == 400, request
        body = answer.json()
        assert body["id"] == answer_id and body["error"]["code"] == -32600, (request, body)
    refused = post(served, INVALID_NOTIFICATION)
    assert refused.status_code == 400 and refused.json()["id"] is None
    assert "params must be an object" in refused.json()["error"]["message"]
    batch = post(served, [{"jsonrpc": "2.0", "id": 1, "method": "ping"}])
    assert batch.status_code == 400 and batch.json()["error"]["code"] == -32600
    answer = post(served, {"jsonrpc": "2.0", "id": 9, "result": {}})  # nothing was asked
    assert answer.status_code == 202 and answer.content == b""
    assert post(served, {"jsonrpc": "2.0", "id": "ok", "method": "ping"}).json() == {
        "jsonrpc": "2.0", "id": "ok", "result": {}}


def test_a_body_that_is_not_json_content_is_415(served):
    ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    for kind in ("text/plain", "application/x-www-form-urlencoded", None):
        answer = requests.post(served, data=ping, timeout=WAIT, headers={
            "Accept": "application/json, text/event-stream",
            **({"Content-Type": kind} if kind else {})})
        assert answer.status_code == 415, kind
        assert answer.json()["error"]["code"] == -32600
    charset = requests.post(served, data=ping, timeout=WAIT, headers={
        "Content-Type": "Application/JSON; charset=utf-8", "Accept": "application/json"})
    assert charset.status_code == 200 and charset.json()["result"] == {}


def test_the_app_answers_only_at_its_path(serve):
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    root = serve().url.removesuffix("/mcp")
    for path in ("", "/", "/mcp/", "/mcp/x", "/other"):
        assert post(root + path, ping).status_code == 404, path
        assert requests.get(root + path, timeout=WAIT, headers={
            "Accept": "text/event-stream"}).status_code == 404, path
    assert post(root + "/mcp", ping).json()["result"] == {}
    mounted = serve(path="/tools").url.removesuffix("/mcp")
    assert post(mounted + "/tools", ping).json()["result"] == {}
    assert post(mounted + "/mcp", ping).status_code == 404
    anywhere = serve(path=None).url.removesuffix("/mcp")
    assert post(anywhere + "/any/where", ping).json()["result"] == {}
    with ToolServer("bad") as tools, pytest.raises(ValueError, match="must begin with '/'"):
        wsgi_app(tools, path="mcp")
