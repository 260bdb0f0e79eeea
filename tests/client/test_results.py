"""Tool results: structuredContent checked against outputSchema, typed data, and ToolError."""
import copy
import pickle
import subprocess
import sys

import pytest
from pydantic import BaseModel

from raider_sync import McpHub, McpServer, StructuredContentError, ToolError, ToolResult, ToolServer

from conftest import config_of

WEATHER = "mcp__everything__get-structured-content"


class Weather(BaseModel):
    temperature: float
    conditions: str
    humidity: float


class Wind(BaseModel):
    speed: float


def test_structured_content_of_a_real_server_is_checked_and_typed(everything_spec):
    with McpServer(everything_spec) as server:
        result = server.call_tool(WEATHER, {"location": "Chicago"}, timeout=30)
        assert result.tool == WEATHER and result.output_schema["required"] == [
            "temperature", "conditions", "humidity"]
        assert result.structured == result["structuredContent"]
        weather = result.data(Weather)
        assert isinstance(weather, Weather) and weather.conditions
        assert result.data(dict[str, object])["humidity"] == weather.humidity
        with pytest.raises(StructuredContentError, match="speed"):
            result.data(Wind)
        # a tool without an output schema: structuredContent as sent (here none)
        echo = server.call_tool("mcp__everything__echo", {"message": "hi"}, timeout=30)
        assert echo.output_schema is None and echo.structured is None


def test_an_error_result_is_never_checked(everything_spec):
    with McpServer(everything_spec) as server:
        result = server.call_tool(WEATHER, {"location": "Paris"}, timeout=30)
        assert result.is_error and result.output_schema is not None
        assert result.structured is None  # no structure, and no complaint about it
        with pytest.raises(ToolError) as raised:
            result.data(Weather)
        assert raised.value.result is result


SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
          "additionalProperties": False}


def test_content_that_breaks_the_output_schema_is_reported_where():
    # a fault a real server does not produce: made by hand
    bad = ToolResult({"content": [], "structuredContent": {"n": "seven"}}, tool="count",
                     output_schema=SCHEMA)
    with pytest.raises(StructuredContentError, match=r"tool 'count'.*at n: 'seven' is not of type"):
        _ = bad.structured
    missing = ToolResult({"content": [{"type": "text", "text": "7"}]}, output_schema=SCHEMA)
    with pytest.raises(StructuredContentError, match="no structuredContent"):
        _ = missing.structured
    broken = ToolResult({"structuredContent": {}}, output_schema={"type": "no-such-type"})
    with pytest.raises(StructuredContentError, match="not a valid JSON Schema"):
        _ = broken.structured
    good = ToolResult({"structuredContent": {"n": 7}}, tool="count", output_schema=SCHEMA)
    assert good.structured == {"n": 7}
    for copied in (copy.deepcopy(good), pickle.loads(pickle.dumps(good))):
        assert copied == good and copied.tool == "count" and copied.output_schema == SCHEMA


def test_without_jsonschema_reading_checked_content_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "jsonschema", None)  # as if not installed
    result = ToolResult({"structuredContent": {"n": 7}}, output_schema=SCHEMA)
    with pytest.raises(ImportError, match=r"raider_sync\[schema\]"):
        _ = result.structured
    unchecked = ToolResult({"structuredContent": {"n": 7}})
    assert unchecked.structured == {"n": 7}  # nothing to check against: no import needed


def test_raise_on_error_per_call_and_as_the_server_default(everything_spec):
    with McpServer(everything_spec) as server:
        with pytest.raises(ToolError, match="get-structured-content.*Invalid") as raised:
            server.call_tool(WEATHER, {"location": "Paris"}, raise_on_error=True, timeout=30)
        assert raised.value.result.is_error and raised.value.tool == WEATHER
        future = server.call_tool_f(WEATHER, {"location": "Paris"}, raise_on_error=True)
        assert isinstance(future.exception(30), ToolError)
        assert server.call_tool(WEATHER, {"location": "Paris"}, timeout=30).is_error
        assert not server.call_tool(WEATHER, {"location": "Chicago"}, raise_on_error=True,
                                    timeout=30).is_error
    with McpServer(everything_spec, raise_on_error=True) as server:
        with pytest.raises(ToolError):
            server.call_tool(WEATHER, {"location": "Paris"}, timeout=30)
        assert server.call_tool(WEATHER, {"location": "Paris"}, raise_on_error=False,
                                timeout=30).is_error


def test_the_hub_default_holds_for_servers_and_mounted_tool_servers(everything_js):
    local = ToolServer("local")

    @local.tool()
    def fail() -> str:
        "Always fails."
        raise RuntimeError("broken on purpose")

    config = config_of({"everything": {"command": "node", "args": [everything_js, "stdio"]}})
    with McpHub(config, raise_on_error=True) as hub:
        hub.mount(local)
        with pytest.raises(ToolError, match="broken on purpose"):
            hub.call_tool("fail", {})
        with pytest.raises(ToolError):
            hub.call_tool(WEATHER, {"location": "Paris"}, timeout=30)
        assert isinstance(hub.call_tool_f("fail", {}).exception(30), ToolError)
        assert hub.call_tool("fail", {}, raise_on_error=False).is_error
        assert hub.call_tool(WEATHER, {"location": "Paris"}, raise_on_error=False,
                             timeout=30).is_error


def test_the_client_no_longer_imports_the_jupyter_module():
    code = ("import sys, raider_sync; from raider_sync.client.results import ToolResult; "
            "assert 'raider_sync.client.notebook' not in sys.modules, 'notebook imported'; "
            "from raider_sync.client.notebook import ToolResult as Old; assert Old is ToolResult")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
