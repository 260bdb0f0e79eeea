"""McpServer over stdio against the reference server-everything (a peer nobody here wrote)."""
from __future__ import annotations

import json
import logging
import os
import threading
import time

import pytest

from raider_sync import McpError, McpServer, ToolTimeout, UnknownTool

from conftest import answers_from_threads, config_of
from conftest import poll as _poll

WAIT = 15.0


def poll(predicate, timeout: float = WAIT, what: str = "condition"):
    return _poll(predicate, timeout, what)
ALWAYS_THERE = ["echo", "get-annotated-message", "get-env", "get-resource-links",
                "get-resource-reference", "get-structured-content", "get-sum", "get-tiny-image",
                "gzip-file-as-resource", "toggle-simulated-logging", "toggle-subscriber-updates",
                "trigger-long-running-operation"]


@pytest.fixture
def everything(everything_spec):
    server = McpServer(everything_spec, kill_grace=0.3)
    server.start_f().result(WAIT)
    assert server.status == "connected", server.reason
    yield server
    server.stop()


def text_of(result: dict) -> str:
    return result["content"][0]["text"]


def test_handshake(everything):
    assert everything.protocol_version == "2025-11-25"
    assert everything.server_info["name"] == "mcp-servers/everything"
    assert everything.instructions and "Everything" in everything.instructions
    assert everything.has_prompts and everything.has_resources
    assert everything.reason is None and everything.warnings == []


def test_tool_names_are_prefixed_in_the_servers_order(everything):
    names = everything.tool_names
    assert names[:len(ALWAYS_THERE)] == [f"mcp__everything__{t}" for t in ALWAYS_THERE]
    assert everything.original_name("mcp__everything__get-sum") == "get-sum"
    tools = {t["name"]: t for t in everything.list_tools()}
    assert tools["mcp__everything__echo"]["inputSchema"]["required"] == ["message"]


def test_echo(everything):
    assert everything.call_tool("mcp__everything__echo", {"message": "hi"}) == \
        {"content": [{"type": "text", "text": "Echo: hi"}]}
    future = everything.call_tool_f("mcp__everything__get-sum", {"a": 2, "b": 40})
    assert "42" in text_of(future.result(WAIT))


def test_an_image_result_passes_even_over_the_limit(everything_spec):
    with McpServer(everything_spec, kill_grace=0.3, max_output_tokens=1) as server:
        result = server.call_tool("mcp__everything__get-tiny-image", {})
        images = [b for b in result["content"] if b["type"] == "image"]
        assert images and images[0]["mimeType"] == "image/png" and len(images[0]["data"]) > 100
        assert not any("MAX_MCP_OUTPUT_TOKENS" in b.get("text", "") for b in result["content"])
        # text alone is cut to 4 characters with a note
        cut = server.call_tool("mcp__everything__echo", {"message": "long message"})
        assert cut["content"][0]["text"] == "Echo"
        assert "MAX_MCP_OUTPUT_TOKENS" in cut["content"][-1]["text"]


def test_structured_content_is_kept(everything):
    result = everything.call_tool("mcp__everything__get-structured-content", {"location": "New York"})
    assert isinstance(result["structuredContent"], dict) and result["structuredContent"]


def test_an_unknown_tool_is_refused_locally(everything):
    with pytest.raises(UnknownTool):
        everything.call_tool("mcp__everything__no-such-tool", {})


def test_progress_reaches_on_progress(everything):
    progress = []
    result = everything.call_tool(
        "mcp__everything__trigger-long-running-operation", {"duration": 0.4, "steps": 4},
        on_progress=lambda p, total, message: progress.append((p, total)))
    assert "completed" in text_of(result)
    assert progress == [(1, 4), (2, 4), (3, 4), (4, 4)]


def test_a_timeout_cancels_and_the_next_call_works(everything):
    started = time.monotonic()
    with pytest.raises(ToolTimeout, match="MCP tool call timed out after 0.4 s"):
        everything.call_tool("mcp__everything__trigger-long-running-operation",
                             {"duration": 30, "steps": 2}, timeout=0.4)
    assert time.monotonic() - started < 3
    assert text_of(everything.call_tool("mcp__everything__echo", {"message": "again"})) == \
        "Echo: again"


def test_cancelling_a_call_future_leaves_the_server_usable(everything):
    future = everything.call_tool_f("mcp__everything__trigger-long-running-operation",
                                    {"duration": 30, "steps": 2})
    assert future.cancel()
    assert text_of(everything.call_tool("mcp__everything__echo", {"message": "x"})) == "Echo: x"


def test_list_changed_calls_on_tools_changed_and_list_tools_sees_the_new_tool(everything_spec):
    changed = threading.Event()
    server = McpServer(everything_spec, kill_grace=0.3, on_tools_changed=lambda s: changed.set())
    try:
        server.start_f().result(WAIT)
        assert changed.wait(WAIT), "server-everything announces tools after initialized"
        names = [t["name"] for t in server.list_tools()]
        assert "mcp__everything__simulate-research-query" in names
        assert server.tool_names == names
    finally:
        server.stop()


def test_prompts(everything):
    prompts = everything.list_prompts()
    assert [p["name"] for p in prompts] == ["simple-prompt", "args-prompt", "completable-prompt",
                                           "resource-prompt"]
    args_prompt = prompts[1]
    assert {"name": "city", "description": "Name of the city", "required": True} in \
        args_prompt["arguments"]
    result = everything.get_prompt("args-prompt", {"city": "Paris", "state": "Texas"})
    text = json.dumps(result["messages"])
    assert "Paris" in text and "Texas" in text
    assert result["messages"][0]["role"] == "user"
    with pytest.raises(McpError):
        everything.get_prompt("no-such-prompt")


def test_resources(everything):
    resources = everything.list_resources()
    uris = [r["uri"] for r in resources]
    assert len(uris) == 7
    assert all(u.startswith("demo://resource/static/document/") for u in uris)
    assert not any(u.startswith("ui://") for u in uris)
    contents = everything.read_resource(uris[0])
    assert contents[0]["uri"] == uris[0] and contents[0]["text"]
    templates = everything.list_resource_templates()
    assert {t["uriTemplate"] for t in templates} >= {"demo://resource/dynamic/text/{resourceId}",
                                                     "demo://resource/dynamic/blob/{resourceId}"}
    dynamic = everything.read_resource("demo://resource/dynamic/text/1")
    assert dynamic[0]["text"]


def test_log_messages_reach_the_servers_logger(everything, caplog):
    caplog.set_level(logging.DEBUG, logger="raider_sync.server.everything")
    everything.call_tool("mcp__everything__toggle-simulated-logging", {})
    poll(lambda: any("-level message" in r.getMessage() or "level-message" in r.getMessage()
                     for r in caplog.records if r.name == "raider_sync.server.everything"),
         what="a simulated log message")
    everything.call_tool("mcp__everything__toggle-simulated-logging", {})


def test_get_env_sees_the_child_env(everything_js, tmp_path):
    spec = config_of({"plugin:demo:everything": {
        "command": "node", "args": [everything_js, "stdio"], "env": {"RAIDER_SPEC_VAR": "from-spec"},
        "pluginRoot": str(tmp_path / "root"), "pluginData": str(tmp_path / "data")}},
        project_dir=str(tmp_path)).server("plugin:demo:everything")
    base = dict(os.environ, CLAUDE_PLUGIN_ROOT="/inherited/root", RAIDER_BASE_VAR="from-base")
    with McpServer(spec, base_env=base, kill_grace=0.3) as server:
        assert server.key == "plugin_demo_everything"
        env = json.loads(text_of(server.call_tool("mcp__plugin_demo_everything__get-env", {})))
    assert env["RAIDER_SPEC_VAR"] == "from-spec"
    assert env["RAIDER_BASE_VAR"] == "from-base"
    assert env["CLAUDE_PROJECT_DIR"] == str(tmp_path)
    assert env["CLAUDE_PLUGIN_ROOT"] == str(tmp_path / "root")
    assert env["CLAUDE_PLUGIN_DATA"] == str(tmp_path / "data")


def test_inherited_plugin_vars_do_not_reach_a_plain_server(everything_spec):
    base = dict(os.environ, CLAUDE_PLUGIN_ROOT="/inherited/root", CLAUDE_PLUGIN_DATA="/inh")
    with McpServer(everything_spec, base_env=base, kill_grace=0.3) as server:
        env = json.loads(text_of(server.call_tool("mcp__everything__get-env", {})))
    assert "CLAUDE_PLUGIN_ROOT" not in env and "CLAUDE_PLUGIN_DATA" not in env
    assert env["CLAUDE_PROJECT_DIR"] == os.getcwd()


def test_32_threads_get_their_own_answers(everything):
    answers = answers_from_threads(32, 8, lambda message: text_of(everything.call_tool(
        "mcp__everything__echo", {"message": message})), timeout=WAIT * 2)
    assert len(answers) == 256
    assert all(answer == f"Echo: {message}" for message, answer in answers.items())


def test_stop_and_pid(everything_spec):
    server = McpServer(everything_spec, kill_grace=0.3)
    server.start_f().result(WAIT)
    pid = server.pid
    assert isinstance(pid, int) and pid > 0
    os.kill(pid, 0)  # alive
    started = time.monotonic()
    server.stop()
    assert time.monotonic() - started < 2 * 0.3 + 1.5
    assert server.status == "stopped" and server.pid is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_an_on_progress_callback_may_call_another_tool_with_progress(everything):
    """A progress callback that calls back into the server, itself with on_progress, gets its
    answer: the inner call's progress and answer do not queue behind the outer callback."""
    inner = []

    def on_progress(progress, total, message):
        if progress == 1:
            result = everything.call_tool(
                "mcp__everything__trigger-long-running-operation", {"duration": 0.2, "steps": 2},
                timeout=5, on_progress=lambda p, t, m: inner.append(p))
            inner.append(text_of(result))

    started = time.monotonic()
    result = everything.call_tool("mcp__everything__trigger-long-running-operation",
                                  {"duration": 0.4, "steps": 2}, timeout=10,
                                  on_progress=on_progress)
    assert "completed" in text_of(result)
    assert inner[:2] == [1, 2] and "completed" in inner[2]
    assert time.monotonic() - started < 4
