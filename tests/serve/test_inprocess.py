"""McpServer.in_process: a ToolServer served in this process, through the real sessions."""
from __future__ import annotations

import threading

import pytest

from raider_sync import (
    McpError,
    McpHub,
    McpServer,
    NotConnected,
    RequestTimeout,
    ToolServer,
    ToolTimeout,
    UnknownTool,
)

WAIT = 15.0


@pytest.fixture
def tools():
    tools = ToolServer("local", instructions="In this process.")
    release = threading.Event()

    @tools.tool()
    def add(a: int, b: int) -> str:
        """Add two numbers."""
        return str(a + b)

    @tools.tool()
    def steps(n: int, progress) -> str:
        """Report n steps."""
        for i in range(n):
            progress(i + 1, n, f"step {i + 1}")
        return "done"

    @tools.tool()
    def hold() -> str:
        """Wait until the test releases it."""
        release.wait(WAIT)
        return "released"

    @tools.tool()
    def nan() -> dict:
        """Answer what JSON cannot carry."""
        return {"content": [], "structuredContent": {"x": float("nan")}}

    tools.add_resource("local://note.txt", lambda: "a note", name="note")
    tools.release = release
    yield tools
    release.set()
    tools.close()


@pytest.fixture
def client(tools):
    server = McpServer.in_process(tools)
    server.initialize(WAIT)
    assert server.status == "connected", server.reason
    yield server
    server.stop()


def test_the_handshake_and_tools_are_those_of_a_served_tool_server(client):
    assert client.transport == "in-process" and client.pid is None
    assert client.server_info["name"] == "local"
    assert client.instructions == "In this process."
    assert client.tool_names == ["mcp__local__add", "mcp__local__steps", "mcp__local__hold",
                                 "mcp__local__nan"]
    assert client.call_tool("mcp__local__add", {"a": 2, "b": 3}).text == "5"
    bad = client.call_tool("mcp__local__add", {"a": 2})
    assert bad.is_error and "b" in bad.text
    with pytest.raises(UnknownTool):
        client.call_tool("mcp__local__nope", {})
    assert client.read_resource("local://note.txt")[0]["text"] == "a note"


def test_progress_arrives_in_order_before_the_answer(client):
    seen = []
    result = client.call_tool("mcp__local__steps", {"n": 3}, on_progress=lambda *a: seen.append(a))
    assert result.text == "done"
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


def test_a_call_past_its_timeout_fails_and_the_connection_stays_usable(client, tools):
    with pytest.raises(ToolTimeout):
        client.call_tool("mcp__local__hold", {}, timeout=0.2)
    tools.release.set()
    assert client.call_tool("mcp__local__add", {"a": 1, "b": 1}).text == "2"


def test_a_cancelled_raw_request_and_a_bounded_one(client, tools):
    future = client.call_tool_f("mcp__local__hold", {})
    assert future.cancel()
    with pytest.raises(RequestTimeout):
        client.request("tools/call", {"name": "hold", "arguments": {}}, timeout=0.2)
    tools.release.set()
    answer = client.request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
    assert answer["content"][0]["text"] == "2"
    with pytest.raises(McpError) as error:
        client.request("no/such/method")
    assert error.value.code == -32601


def test_what_json_cannot_carry_fails_as_on_a_pipe(client):
    with pytest.raises(McpError, match="cannot be sent as JSON"):
        client.call_tool("mcp__local__nan", {})
    with pytest.raises(ValueError):
        client.call_tool("mcp__local__add", {"a": float("nan"), "b": 1})


def test_stop_fails_pending_calls_and_leaves_the_tool_server_running(tools):
    server = McpServer.in_process(tools, kill_grace=0.2)
    server.initialize(WAIT)
    pending = server.call_tool_f("mcp__local__hold", {})
    try:
        server.stop()  # the held handler keeps its thread: stop waits kill_grace, no more
    finally:
        tools.release.set()
    assert server.status == "stopped"
    with pytest.raises(Exception) as error:
        pending.result(WAIT)
    assert "stopped" in str(error.value)
    with pytest.raises(NotConnected):
        server.call_tool("mcp__local__add", {"a": 1, "b": 1})
    assert tools.call_tool("add", {"a": 1, "b": 2}).text == "3"  # still serves directly
    again = McpServer.in_process(tools)
    with again:
        assert again.call_tool("mcp__local__add", {"a": 4, "b": 4}).text == "8"


def test_a_tool_list_change_reaches_the_client(client, tools):
    changed = threading.Event()
    client.on_tools_changed = lambda _server: changed.set()
    tools.add_tool("extra", lambda: "extra!", description="added later")
    assert changed.wait(WAIT)
    assert "mcp__local__extra" in client.list_tools_f().result(WAIT)[-1]["name"]


def test_filters_apply_in_process_as_anywhere(tools):
    with McpServer.in_process(tools, disabled_tools=["h*", "nan"]) as server:
        assert server.tool_names == ["mcp__local__add", "mcp__local__steps"]
        assert server.filtered_tools == ["hold", "nan"]
        with pytest.raises(UnknownTool):
            server.call_tool("mcp__local__hold", {})
        with pytest.raises(UnknownTool):
            server.call_tool("hold", {})


def test_an_in_process_client_in_a_hub_is_routed_like_any(tools):
    hub = McpHub({"mcpServers": {}})
    with McpServer.in_process(tools) as server:
        hub.mount(server)
        assert hub.call_tool("mcp__local__add", {"a": 20, "b": 22}).text == "42"
        hub.unmount(server)
