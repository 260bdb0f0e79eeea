"""ToolServer: local tools with the face of a connected McpServer."""
from __future__ import annotations

import base64
import threading
from concurrent.futures import Future
from typing import Optional

import pytest
from pydantic import BaseModel, Field

from raider_sync.errors import McpError, NotConnected, ToolTimeout, UnknownTool
from raider_sync.serve.toolserver import ToolServer


@pytest.fixture
def tools():
    server = ToolServer("local")
    yield server
    server.close()


def text_of(result: dict) -> str:
    return "\n".join(block["text"] for block in result["content"] if block["type"] == "text")


class Point(BaseModel):
    x: int
    y: int = Field(default=0, description="the y coordinate")


# -- the McpServer face -------------------------------------------------------------------

def test_face_of_a_connected_server(tools):
    @tools.tool()
    def add(a: int, b: int) -> str:
        """Add two numbers."""
        return str(a + b)

    assert tools.status == "connected"
    assert tools.tool_names == ["add"]
    assert tools.original_name("add") == "add" and tools.original_name("mcp__local__add") is None
    assert tools.start_f().result(1) is tools and tools.initialize() is tools
    [definition] = tools.list_tools()
    assert definition["name"] == "add" and definition["description"] == "Add two numbers."
    assert definition["inputSchema"]["required"] == ["a", "b"]
    assert definition["inputSchema"]["properties"]["a"]["type"] == "integer"
    assert tools.list_tools_f().result(1) == [definition]
    assert tools.call_tool("add", {"a": 2, "b": 3}) == {"content": [{"type": "text", "text": "5"}]}
    assert tools.call_tool_f("add", {"a": 2, "b": "4"}).result(5)["content"][0]["text"] == "6"
    tools.close()
    assert tools.status == "stopped"


def test_registration_by_call_with_a_json_schema_and_by_a_model(tools):
    tools.add_tool("shout", lambda args: args["text"].upper(), description="Shout.",
                   input_schema={"type": "object", "properties": {"text": {"type": "string"}},
                                 "required": ["text"]})
    tools.add_tool("where", lambda point: f"{point.x},{point.y}", input_model=Point)
    assert tools.tool_names == ["shout", "where"]
    assert text_of(tools.call_tool("shout", {"text": "hi"})) == "HI"
    assert text_of(tools.call_tool("where", {"x": 3})) == "3,0"
    schema = {t["name"]: t for t in tools.list_tools()}["where"]["inputSchema"]
    assert schema["properties"]["y"]["description"] == "the y coordinate"
    assert "title" not in schema


def test_unknown_tool_raises(tools):
    with pytest.raises(UnknownTool, match="no tool 'nope'"):
        tools.call_tool("nope", {})
    assert isinstance(tools.call_tool_f("nope").exception(1), UnknownTool)


def test_tools_changed_is_told_on_add_and_remove(tools):
    seen = []
    tools.on_tools_changed = lambda server: seen.append(list(server.tool_names))
    tools.add_tool("a", lambda: "a")
    tools.add_tool("b", lambda: "b")
    tools.remove_tool("a")
    tools.remove_tool("a")  # nothing to remove: nobody is told
    assert seen == [["a"], ["a", "b"], ["b"]]


# -- validation errors name the field -----------------------------------------------------

def test_signature_validation_names_the_field(tools):
    called = []

    @tools.tool()
    def add(a: int, b: int) -> str:
        called.append((a, b))
        return str(a + b)

    result = tools.call_tool("add", {"a": 1, "b": "x"})
    assert result["isError"] is True
    assert text_of(result).startswith("Invalid arguments for tool add: b: ")
    missing = tools.call_tool("add", {"a": 1})
    assert missing["isError"] and "b: Field required" in text_of(missing)
    assert called == []  # the handler never ran with bad arguments


def test_model_validation_names_the_field(tools):
    tools.add_tool("where", lambda point: "ok", input_model=Point)
    result = tools.call_tool("where", {"x": "left"})
    assert result["isError"] and "x: " in text_of(result)
    assert "y" not in text_of(result).split(":", 1)[1]


def test_json_schema_validation_names_the_field(tools):
    schema = {"type": "object", "additionalProperties": False,
              "properties": {"n": {"type": "integer"}, "mode": {"type": "string", "enum": ["a", "b"]},
                             "flag": {"type": ["boolean", "null"]}},
              "required": ["n"]}
    tools.add_tool("pick", lambda args: "picked", input_schema=schema)
    assert text_of(tools.call_tool("pick", {"n": 1, "mode": "a", "flag": None})) == "picked"
    cases = {"missing": ({}, "n: Field required"),
             "type": ({"n": "1"}, "n: expected integer, got str"),
             "bool is no integer": ({"n": True}, "n: expected integer, got bool"),
             "enum": ({"n": 1, "mode": "c"}, "mode: expected one of ['a', 'b']"),
             "extra": ({"n": 1, "other": 2}, "other: unknown field")}
    for label, (arguments, expected) in cases.items():
        result = tools.call_tool("pick", arguments)
        assert result.get("isError") is True, label
        assert expected in text_of(result), (label, text_of(result))


# -- handlers ---------------------------------------------------------------------------

def test_handler_exception_is_an_error_result(tools):
    def boom(reason: str) -> str:
        raise RuntimeError(f"it broke: {reason}")

    def silent() -> str:
        raise KeyError()

    tools.add_tool("boom", boom)
    tools.add_tool("silent", silent)
    result = tools.call_tool("boom", {"reason": "why"})
    assert result == {"content": [{"type": "text", "text": "Error: it broke: why"}], "isError": True}
    assert tools.call_tool("silent")["isError"] is True
    assert text_of(tools.call_tool("silent")) == "Error: KeyError"


def test_handler_return_shapes(tools):
    tools.add_tool("text", lambda: "plain")
    tools.add_tool("pair", lambda: ("bad news", True))
    tools.add_tool("blocks", lambda: [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}])
    tools.add_tool("full", lambda: {"content": [], "structuredContent": {"n": 1}})
    tools.add_tool("data", lambda: {"n": 1})
    tools.add_tool("nothing", lambda: None)
    assert tools.call_tool("text") == {"content": [{"type": "text", "text": "plain"}]}
    assert tools.call_tool("pair") == {"content": [{"type": "text", "text": "bad news"}],
                                       "isError": True}
    assert text_of(tools.call_tool("blocks")) == "one\ntwo"
    assert tools.call_tool("full") == {"content": [], "structuredContent": {"n": 1}}
    assert text_of(tools.call_tool("data")) == '{"n": 1}'
    assert tools.call_tool("nothing") == {"content": []}


def test_future_returning_handler_is_awaited(tools):
    pending: Future = Future()
    tools.add_tool("later", lambda: pending)
    tools.add_tool("broken_later", lambda: _failed_future(ValueError("no luck")))
    call = tools.call_tool_f("later")
    assert not call.done()
    pending.set_result("arrived")
    assert call.result(5) == {"content": [{"type": "text", "text": "arrived"}]}
    broken = tools.call_tool("broken_later")
    assert broken["isError"] and text_of(broken) == "Error: no luck"


def test_cancelled_future_of_a_handler_is_an_error_result(tools):
    pending: Future = Future()
    tools.add_tool("later", lambda: pending)
    call = tools.call_tool_f("later")
    pending.cancel()
    assert call.result(5)["isError"] is True


def test_blocking_call_times_out_with_tool_timeout(tools):
    release = threading.Event()
    tools.add_tool("stuck", lambda: release.wait(10) and "released")
    with pytest.raises(ToolTimeout):
        tools.call_tool("stuck", timeout=0.2)
    release.set()


def test_handlers_run_in_parallel_on_the_pool(tools):
    barrier = threading.Barrier(3, timeout=5)
    tools.add_tool("meet", lambda: str(barrier.wait()))
    calls = [tools.call_tool_f("meet") for _ in range(3)]
    answers = sorted(text_of(call.result(10)) for call in calls)
    assert answers == ["0", "1", "2"]
    # the handlers ran on the pool; the tool server has no other thread (deadlines are on
    # the process's timer)
    assert all(t.name.startswith("raider-local-tool")
               for t in threading.enumerate() if t.name.startswith("raider-local"))


def test_calls_after_close_fail_as_not_connected_and_start_no_threads(tools):
    tools.add_tool("x", lambda: "x")
    assert text_of(tools.call_tool("x")) == "x"
    tools.close()
    tools.close()  # twice is fine
    with pytest.raises(NotConnected, match="closed"):
        tools.call_tool("x")
    assert isinstance(tools.call_tool_f("x").exception(1), NotConnected)
    assert not [t for t in threading.enumerate() if t.name.startswith("raider-local-tool")]


# -- resources and prompts --------------------------------------------------------------

def test_resources_text_and_bytes(tools):
    assert not tools.has_resources
    tools.add_resource("local://note.txt", lambda: "a note", description="A note")
    tools.add_resource("local://pixel.png", lambda: b"\x89PNG\r\n", mime_type="image/png")
    assert tools.has_resources
    assert [r["uri"] for r in tools.list_resources()] == ["local://note.txt", "local://pixel.png"]
    assert tools.read_resource("local://note.txt") == [
        {"uri": "local://note.txt", "mimeType": "text/plain", "text": "a note"}]
    [blob] = tools.read_resource_f("local://pixel.png").result(1)
    assert base64.b64decode(blob["blob"]) == b"\x89PNG\r\n" and blob["mimeType"] == "image/png"
    with pytest.raises(McpError) as info:
        tools.read_resource("local://none")
    assert info.value.code == -32002
    assert isinstance(tools.read_resource_f("local://none").exception(1), McpError)


def test_prompts(tools):
    @tools.prompt()
    def review(topic: str, depth: Optional[str] = None) -> str:
        """Ask for a review."""
        return f"Review {topic}"

    assert tools.has_prompts
    assert tools.list_prompts() == [{"name": "review", "description": "Ask for a review.",
                                     "arguments": [{"name": "topic", "required": True},
                                                   {"name": "depth", "required": False}]}]
    got = tools.get_prompt("review", {"topic": "the plan"})
    assert got["messages"] == [{"role": "user", "content": {"type": "text", "text": "Review the plan"}}]
    with pytest.raises(McpError, match="Invalid arguments for prompt review"):
        tools.get_prompt("review", {})
    with pytest.raises(McpError, match="Unknown prompt"):
        tools.get_prompt("nope")


def _failed_future(error: BaseException) -> Future:
    future: Future = Future()
    future.set_exception(error)
    return future


def test_a_handler_with_a_progress_parameter_reports_progress():
    with ToolServer("local") as tools:
        @tools.tool()
        def count(progress, to: int) -> str:
            """Count, reporting each step."""
            for i in range(to):
                progress(i + 1, to, f"at {i + 1}")
            return "counted"

        schema = tools.list_tools()[0]["inputSchema"]
        assert list(schema["properties"]) == ["to"]  # progress is not an argument
        seen = []
        result = tools.call_tool("count", {"to": 3}, on_progress=lambda *a: seen.append(a))
        assert result.text == "counted"
        assert seen == [(1, 3, "at 1"), (2, 3, "at 2"), (3, 3, "at 3")]
        assert tools.call_tool("count", {"to": 2}).text == "counted"  # nobody listening: fine


def test_a_stuck_handler_fails_the_future_at_its_timeout_without_a_waiter():
    release = threading.Event()
    with ToolServer("local") as tools:
        tools.add_tool("stuck", lambda: release.wait(30) and "late")
        future = tools.call_tool_f("stuck", {}, timeout=0.2)
        with pytest.raises(ToolTimeout, match="timed out after 0.2 s"):
            future.result(10)  # settled by the tool server, not by this wait's bound
        with pytest.raises(ToolTimeout):
            tools.call_tool("stuck", {}, timeout=0.1)
        release.set()  # the handlers finish unseen; close() joins them
