"""The relay in front of real MCP servers (server-everything, the official SDK's server), driven
by plain ``requests`` and by the official SDK's client: initialize, tools, calls, SSE streams,
the session id, DELETE."""
from __future__ import annotations

import asyncio
import json
import time

import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from gateway.support import AUTH, VERSION, Mcp, messages, wait_until


@pytest.fixture(params=["everything", "sdk"])
def peer(request, everything_http, sdk_http, make_gateway):
    """(server name, gateway) for each real peer behind a fresh relay. Both peers are asked for
    up front so they start before the leak guard takes its snapshot."""
    url = everything_http if request.param == "everything" else sdk_http
    return request.param, make_gateway([{"name": request.param, "url": url}])


def test_initialize_tools_call_and_delete_through_the_relay(peer):
    name, gw = peer
    client = Mcp(f"{gw.url}/mcp/{name}")
    try:
        result = client.initialize()
        assert result["protocolVersion"] == VERSION
        assert result["serverInfo"]["name"] in ("mcp-servers/everything", "raider-test-sdk")
        tools = {t["name"] for t in client.request("tools/list")["result"]["tools"]}
        assert "echo" in tools
        echoed = client.request("tools/call", {"name": "echo", "arguments": {"message": "via relay"}})
        assert "via relay" in echoed["result"]["content"][0]["text"]
        deleted = client.http.delete(client.url, headers=client.headers(), timeout=20)
        assert deleted.status_code in (200, 204)
        gone = client.post({"jsonrpc": "2.0", "id": 99, "method": "tools/list", "params": {}})
        assert gone.status_code in (400, 404)  # the upstream refuses the ended session
    finally:
        client.close()
    events = gw.wait_events(6)
    assert {e["endpoint"] for e in events} == {f"/mcp/{name}"}
    assert {e["key"] for e in events} == {"alice"}
    assert [e["method"] for e in events][-2:] == ["DELETE", "POST"]
    assert all(e["request_bytes"] > 0 for e in events if e["method"] == "POST")


def test_every_post_answer_of_server_everything_streams_as_sse(everything_http, make_gateway):
    gw = make_gateway([{"name": "everything", "url": everything_http}])
    client = Mcp(f"{gw.url}/mcp/everything")
    try:
        client.initialize()
        answer = client.post({"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {}})
        assert answer.headers["Content-Type"].startswith("text/event-stream")
        assert answer.headers["X-Accel-Buffering"] == "no"
        assert any(m.get("id") == 5 for m in messages(answer))
    finally:
        client.close()


def test_progress_notifications_arrive_before_the_result_not_with_it(sdk_http, make_gateway):
    gw = make_gateway([{"name": "sdk", "url": sdk_http}])
    client = Mcp(f"{gw.url}/mcp/sdk")
    try:
        client.initialize()
        message = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
            "name": "slow", "arguments": {"seconds": 0.6, "steps": 3},
            "_meta": {"progressToken": "p1"}}}
        arrivals = []
        with client.post(message, stream=True) as answer:
            assert answer.headers["Content-Type"].startswith("text/event-stream")
            buffer = b""
            for chunk in answer.iter_content(chunk_size=None):
                buffer = (buffer + chunk).replace(b"\r\n", b"\n")
                while b"\n\n" in buffer:
                    event, buffer = buffer.split(b"\n\n", 1)
                    data = [line[5:].strip() for line in event.split(b"\n")
                            if line.startswith(b"data:")]
                    if data and data[0]:
                        arrivals.append((time.monotonic(), json.loads(b"\n".join(data))))
    finally:
        client.close()
    progress = [t for t, m in arrivals if m.get("method") == "notifications/progress"]
    result = [t for t, m in arrivals if m.get("id") == 7]
    assert len(progress) == 3 and len(result) == 1
    assert result[0] - progress[0] > 0.25  # the first step came through while the tool still ran


def test_a_get_stream_opens_and_closing_the_client_ends_it(peer):
    name, gw = peer
    client = Mcp(f"{gw.url}/mcp/{name}")
    try:
        client.initialize()
        with client.http.get(client.url, headers=client.headers(Accept="text/event-stream"),
                             stream=True, timeout=20) as stream:
            assert stream.status_code == 200
            assert stream.headers["Content-Type"].startswith("text/event-stream")
        client.http.close()  # the client goes away without reading on
        assert wait_until(lambda: any(e["method"] == "GET" for e in gw.events), 10), gw.events
        event = next(e for e in gw.events if e["method"] == "GET")
        assert event["status"] == 200 and event["endpoint"] == f"/mcp/{name}"
    finally:
        client.close()


async def _sdk_session(url: str) -> tuple[list[str], str, str]:
    async with httpx2.AsyncClient(headers=AUTH, timeout=20) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                tools = await session.list_tools()
                result = await session.call_tool("echo", {"message": "sdk via relay"})
    return [t.name for t in tools.tools], result.content[0].text, init.server_info.name


def test_the_official_sdk_client_works_through_the_relay(peer):
    name, gw = peer
    tools, text, server = asyncio.run(asyncio.wait_for(_sdk_session(f"{gw.url}/mcp/{name}"), 60))
    assert "echo" in tools
    assert "sdk via relay" in text
    assert server in ("mcp-servers/everything", "raider-test-sdk")
    assert wait_until(lambda: any(e["method"] == "DELETE" for e in gw.events))
    assert all(e["key"] == "alice" for e in gw.events)
    assert any(e["method"] == "POST" and e["status"] == 200 for e in gw.events)


def test_the_sdk_client_without_a_key_is_refused(sdk_http, make_gateway):
    gw = make_gateway([{"name": "sdk", "url": sdk_http}])

    async def attempt():
        async with httpx2.AsyncClient(timeout=20) as http:
            async with streamable_http_client(f"{gw.url}/mcp/sdk", http_client=http) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()

    with pytest.raises(BaseException):  # noqa: B017  (the SDK groups its errors)
        asyncio.run(asyncio.wait_for(attempt(), 30))
    assert gw.wait_events(1)[0]["status"] == 401
