"""McpServer over stdio against a server built with the official Python SDK (tests/peers)."""
from __future__ import annotations

import os
import threading
import time

import pytest

from raider_sync import McpError, McpServer, ToolTimeout

WAIT = 15.0


@pytest.fixture(params=["legacy", "auto"])
def sdk(sdk_spec, request):
    """The SDK's server in the handshake era, and in the stateless one (auto picks it)."""
    server = McpServer(sdk_spec, kill_grace=0.3, protocol=request.param)
    assert server.initialize() is server
    assert server.status == "connected", server.reason
    yield server
    server.stop()


def text_of(result: dict) -> str:
    return result["content"][0]["text"]


def test_handshake(sdk):
    assert (sdk.era, sdk.protocol_version) in (("legacy", "2025-11-25"), ("modern", "2026-07-28"))
    assert sdk.era == ("legacy" if sdk.protocol == "legacy" else "modern")
    assert sdk.server_info["name"] == "raider-test-sdk"
    assert sdk.instructions == "A test server built with the official SDK."
    assert sdk.has_prompts and sdk.has_resources
    assert sdk.tool_names == ["mcp__sdk__echo", "mcp__sdk__add", "mcp__sdk__slow",
                              "mcp__sdk__grow", "mcp__sdk__ask", "mcp__sdk__fail"]


def test_calls(sdk):
    assert text_of(sdk.call_tool("mcp__sdk__echo", {"message": "hello"})) == "hello"
    result = sdk.call_tool("mcp__sdk__add", {"a": 2, "b": 3})
    assert text_of(result) == "5" and result["structuredContent"] == {"result": 5}
    assert result["isError"] is False


def test_a_tool_error_is_an_error_result(sdk):
    result = sdk.call_tool("mcp__sdk__fail", {"message": "it broke"})
    assert result["isError"] is True and "fail" in text_of(result)


def test_invalid_arguments_are_an_error_result_or_error(sdk):
    try:
        result = sdk.call_tool("mcp__sdk__add", {"a": "not a number"})
    except McpError as exc:
        assert exc.code in (-32602, -32603)
    else:
        assert result["isError"] is True


def test_progress(sdk):
    progress = []
    result = sdk.call_tool("mcp__sdk__slow", {"seconds": 0.2, "steps": 4},
                           on_progress=lambda p, total, message: progress.append((p, total, message)))
    assert text_of(result) == "slept 0.2"
    assert progress == [(1, 4, "step 1"), (2, 4, "step 2"), (3, 4, "step 3"), (4, 4, "step 4")]


def test_a_timeout_cancels_and_the_next_call_works(sdk):
    started = time.monotonic()
    with pytest.raises(ToolTimeout, match="MCP tool call timed out after 0.3 s"):
        sdk.call_tool("mcp__sdk__slow", {"seconds": 30}, timeout=0.3)
    assert time.monotonic() - started < 3
    assert text_of(sdk.call_tool("mcp__sdk__echo", {"message": "after"})) == "after"


def test_a_cancelled_future_leaves_the_server_usable(sdk):
    future = sdk.call_tool_f("mcp__sdk__slow", {"seconds": 30})
    assert future.cancel()
    assert text_of(sdk.call_tool("mcp__sdk__echo", {"message": "still here"})) == "still here"


@pytest.mark.parametrize("protocol", ["legacy", "auto"])
def test_list_changed_refreshes_the_tools(sdk_spec, protocol):
    changed = threading.Event()
    listed_in_callback = []

    def on_tools_changed(server):
        listed_in_callback.append([t["name"] for t in server.list_tools(timeout=WAIT)])
        changed.set()

    with McpServer(sdk_spec, kill_grace=0.3, on_tools_changed=on_tools_changed,
                   protocol=protocol) as server:
        assert "mcp__sdk__extra" not in server.tool_names
        assert text_of(server.call_tool("mcp__sdk__grow", {})) == "grown"
        assert changed.wait(WAIT)
        names = [t["name"] for t in server.list_tools()]
        assert names[-1] == "mcp__sdk__extra"
        assert listed_in_callback and "mcp__sdk__extra" in listed_in_callback[0], \
            "list_tools called from on_tools_changed waits for the fresh list"
        assert text_of(server.call_tool("mcp__sdk__extra", {})) == "extra!"


def test_prompts(sdk):
    assert sdk.list_prompts() == [{"name": "greet", "description": "Greet someone.",
                                   "arguments": [{"name": "name", "required": True}]}]
    prompt = sdk.get_prompt("greet", {"name": "Bob"})
    assert prompt["messages"] == [{"role": "user",
                                   "content": {"type": "text", "text": "Please greet Bob."}}]
    with pytest.raises(McpError):
        sdk.get_prompt("nope", {})


def test_resources(sdk):
    assert [r["uri"] for r in sdk.list_resources()] == ["test://hello"]
    assert sdk.read_resource("test://hello") == [
        {"uri": "test://hello", "mimeType": "text/plain", "text": "hello from the sdk"}]
    with pytest.raises(McpError):
        sdk.read_resource("test://missing")


def test_ping(sdk):
    sdk.ping(timeout=5)


def test_many_threads(sdk):
    answers = {}

    def caller(n):
        for i in range(5):
            answers[(n, i)] = text_of(sdk.call_tool("mcp__sdk__add", {"a": n, "b": i}))

    threads = [threading.Thread(target=caller, args=(n,), name=f"test-caller-{n}")
               for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT * 2)
    assert len(answers) == 80 and all(v == str(n + i) for (n, i), v in answers.items())


def test_stop_ends_the_process(sdk_spec):
    server = McpServer(sdk_spec, kill_grace=0.3)
    server.start_f().result(WAIT)
    pid = server.pid
    started = time.monotonic()
    server.stop()
    assert time.monotonic() - started < 2
    assert server.status == "stopped" and server.pid is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
