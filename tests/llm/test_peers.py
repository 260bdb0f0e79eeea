"""End to end against real servers: every converted schema of server-everything's and
server-filesystem's tools accepts the arguments the tool accepts, and calls made the way a
model makes them (its names, JSON text, strict mode's nulls) reach the tools and succeed."""
import base64
import json
import os
import shutil

import pytest
from jsonschema import Draft202012Validator

from raider_sync import McpHub
from raider_sync.llm import ToolCaller, drop_added_nulls, to_anthropic, to_openai

from conftest import PEERS, config_of
from llm.provider_rules import check_anthropic_tool, check_openai_tool

FILESYSTEM_JS = os.path.join(PEERS, "node_modules", "@modelcontextprotocol", "server-filesystem",
                             "dist", "index.js")
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
def accepted_arguments(folder: str) -> dict[str, list[dict]]:
    """Arguments each tool accepts, by its name on the server (checked by calling it)."""
    path = lambda *parts: os.path.join(folder, *parts)  # noqa: E731
    return {
        # server-everything
        "echo": [{"message": "hi"}],
        "get-annotated-message": [{"messageType": "error"},
                                  {"messageType": "success", "includeImage": True}],
        "get-env": [{}],
        "get-resource-links": [{}, {"count": 2}],
        "get-resource-reference": [{}, {"resourceType": "Blob", "resourceId": 2}],
        "get-structured-content": [{"location": "Chicago"}],
        "get-sum": [{"a": 1, "b": 2.5}],
        "get-tiny-image": [{}],
        "gzip-file-as-resource": [{"name": "x.gz", "data": "data:text/plain;base64,aGVsbG8=",
                                   "outputType": "resource"}],
        "toggle-simulated-logging": [{}, {}],     # on, then off again
        "toggle-subscriber-updates": [{}, {}],
        "trigger-long-running-operation": [{"duration": 0.1, "steps": 1}],
        "simulate-research-query": [{"topic": "tides"}, {"topic": "tides", "ambiguous": False}],
        # server-filesystem
        "read_file": [{"path": path("notes.txt")}, {"path": path("notes.txt"), "head": 1}],
        "read_text_file": [{"path": path("notes.txt"), "tail": 1}],
        "read_media_file": [{"path": path("dot.png")}],
        "read_multiple_files": [{"paths": [path("notes.txt"), path("sub", "more.txt")]}],
        "write_file": [{"path": path("written.txt"), "content": "new"}],
        "edit_file": [{"path": path("notes.txt"), "dryRun": True,
                       "edits": [{"oldText": "line one", "newText": "line 1"}]}],
        "create_directory": [{"path": path("made")}],
        "list_directory": [{"path": folder}],
        "list_directory_with_sizes": [{"path": folder}, {"path": folder, "sortBy": "size"}],
        "directory_tree": [{"path": folder}, {"path": folder, "excludePatterns": ["*.png"]}],
        "move_file": [{"source": path("move-me.txt"), "destination": path("moved.txt")}],
        "search_files": [{"path": folder, "pattern": "*.txt"},
                         {"path": folder, "pattern": "*.txt", "excludePatterns": ["sub"]}],
        "get_file_info": [{"path": path("notes.txt")}],
        "list_allowed_directories": [{}],
    }


@pytest.fixture
def peers(everything_js, tmp_path):
    if not os.path.exists(FILESYSTEM_JS) or shutil.which("node") is None:
        if os.environ.get("CI"):
            pytest.fail("server-filesystem is not installed: run `make peers`")
        pytest.skip("server-filesystem is not installed: run `make peers`")
    folder = os.path.realpath(tmp_path / "files")
    os.makedirs(os.path.join(folder, "sub"))
    for name, text in {"notes.txt": "line one\nline two\n", "move-me.txt": "moving",
                       os.path.join("sub", "more.txt"): "more"}.items():
        with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
            f.write(text)
    with open(os.path.join(folder, "dot.png"), "wb") as f:
        f.write(PNG)
    config = config_of({"everything": {"command": "node", "args": [everything_js, "stdio"]},
                        "files": {"command": "node", "args": [FILESYSTEM_JS, folder]}})
    with McpHub(config) as hub:
        assert hub.statuses() == {"everything": "connected", "files": "connected"}
        yield hub, folder


def with_nulls(value, schema):
    """``value`` as a strict model sends it: every property present, null for those left out."""
    if isinstance(value, dict):
        branch = schema if "properties" in schema else next(
            (b for b in schema.get("anyOf", []) if "properties" in b), {})
        props = branch.get("properties", {})
        return {key: with_nulls(value[key], props[key]) if key in value else None for key in props}
    if isinstance(value, list):
        items = schema.get("items") or next(
            (b["items"] for b in schema.get("anyOf", []) if "items" in b), {})
        return [with_nulls(item, items) for item in value]
    return value


def test_converted_schemas_accept_what_the_tools_accept_and_calls_come_through(peers):
    hub, folder = peers
    tools = hub.tools()
    by_name = {tool["name"].split("__", 2)[2]: tool for tool in tools}
    accepted = accepted_arguments(folder)
    assert set(by_name) == set(accepted), "a tool without accepted arguments in the table"
    chat, anthropic = to_openai(tools), to_anthropic(tools)
    loose = to_openai(tools, strict=False)
    assert len(chat) == len(anthropic) == len(loose) == len(tools)
    for definition in chat + loose:
        check_openai_tool(definition)
    for definition in anthropic:
        check_anthropic_tool(definition)
    strict_count = sum(d["function"]["strict"] for d in chat)
    assert strict_count == len(tools), [d["function"]["name"] for d in chat
                                        if not d["function"]["strict"]]
    caller = ToolCaller(hub, tools)
    calls = 0
    for tool, strict_def, loose_def, anthropic_def in zip(tools, chat, loose, anthropic, strict=True):
        short = tool["name"].split("__", 2)[2]
        strict_params = strict_def["function"]["parameters"]
        for arguments in accepted[short]:
            model_arguments = with_nulls(arguments, strict_params)
            assert not list(Draft202012Validator(strict_params).iter_errors(model_arguments)), (
                short, arguments)
            for schema in (loose_def["function"]["parameters"], anthropic_def["input_schema"]):
                assert not list(Draft202012Validator(schema).iter_errors(arguments)), short
            assert drop_added_nulls(model_arguments, tool["inputSchema"]) == arguments
            result = caller.call(strict_def["function"]["name"], json.dumps(model_arguments),
                                 timeout=30)
            assert not result.is_error, (short, arguments, result)
            calls += 1
    assert calls >= 30
    assert os.path.exists(os.path.join(folder, "moved.txt"))  # the calls really ran
    with open(os.path.join(folder, "written.txt"), encoding="utf-8") as written:
        assert written.read() == "new"


def test_the_model_s_mistakes_and_failed_calls_come_back_as_error_results(peers):
    hub, _ = peers
    caller = ToolCaller(hub)
    echo = caller.names.model_name("mcp__everything__echo")
    assert caller.call(echo, '{"message": "hi"}', timeout=30).text == "Echo: hi"
    unknown = caller.call("mcp__nope", {})
    assert unknown.is_error and "no tool named 'mcp__nope'" in unknown.text
    bad_json = caller.call(echo, '{"message": ')
    assert bad_json.is_error and "not valid JSON" in bad_json.text
    not_object = caller.call(echo, "[1, 2]")
    assert not_object.is_error and "JSON object" in not_object.text
    slow = caller.names.model_name("mcp__everything__trigger-long-running-operation")
    timed_out = caller.call(slow, {"duration": 30, "steps": 2}, timeout=0.5)
    assert timed_out.is_error and "timed out" in timed_out.text
    refused = caller.call(echo, {})  # the server's own error result passes as it is
    assert refused.is_error and "message" in refused.text


def test_with_raise_errors_the_caller_raises(peers):
    from raider_sync import ToolError, ToolTimeout, UnknownTool
    hub, _ = peers
    caller = ToolCaller(hub, raise_errors=True)
    echo = caller.names.model_name("mcp__everything__echo")
    with pytest.raises(UnknownTool, match="mcp__nope"):
        caller.call("mcp__nope", {})
    with pytest.raises(ToolError, match="not valid JSON"):
        caller.call(echo, "{")
    slow = caller.names.model_name("mcp__everything__trigger-long-running-operation")
    with pytest.raises(ToolTimeout):
        caller.call(slow, {"duration": 30, "steps": 2}, timeout=0.5)
    assert caller.call(echo, {}).is_error  # an error result is a result: not raised here
