"""What a notebook shows: HTML for servers, hubs and tool results, and the progress bar."""
import base64
import io
import sys

import pytest

from raider_sync import McpHub, McpServer, TaskStatus, ToolServer
from raider_sync.client.notebook import ProgressBar, ToolResult, result_html

from conftest import config_of

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\nfake").decode()


@pytest.fixture
def demo_config():
    return config_of({"demo": {"command": sys.executable, "args": ["-m", "raider_sync.cli.demo"]},
                      "broken": {"command": "/nonexistent/raider-demo"}})


def test_a_call_returns_a_tool_result_that_is_still_the_plain_dict(demo_config):
    with McpServer(demo_config.server("demo")) as server:
        result = server.call_tool("mcp__demo__echo", {"message": "<b>bold</b> & more"})
    assert isinstance(result, ToolResult) and isinstance(result, dict)
    assert result == {"content": [{"type": "text", "text": "<b>bold</b> & more"}]}
    assert result.text == "<b>bold</b> & more" and not result.is_error
    html = result._repr_html_()
    assert "&lt;b&gt;bold&lt;/b&gt; &amp; more" in html and "<b>bold" not in html


def test_server_html_shows_status_and_tools_table(demo_config):
    with McpServer(demo_config.server("demo")) as server:
        html = server._repr_html_()
    assert "connected" in html and "<table>" in html
    assert "mcp__demo__add" in html and "Add two numbers." in html


def test_hub_html_has_a_row_per_server_with_the_reason_of_a_failure(demo_config):
    with McpHub(demo_config) as hub:
        hub.start_f().result(60)
        html = hub._repr_html_()
    assert html.count("<tr>") == 3  # header + two servers
    assert "failed" in html and "not found" in html


def test_images_render_inline_and_errors_are_marked():
    result = ToolResult({"isError": True, "content": [
        {"type": "text", "text": "partial"},
        {"type": "image", "data": PNG, "mimeType": "image/png"},
        {"type": "resource_link", "uri": "demo://x", "name": "x"}]})
    html = result_html(result)
    assert f'src="data:image/png;base64,{PNG}"' in html
    assert "error" in html and "demo://x" in html
    assert result.images == [result["content"][1]]


def test_a_local_tool_result_is_a_tool_result_too():
    with ToolServer("local") as tools:
        tools.add_tool("hello", lambda: "hi")
        result = tools.call_tool("hello", {})
        assert isinstance(result, ToolResult) and result.text == "hi"
        assert "hello" in tools._repr_html_()


def test_progress_bar_outside_a_notebook_rewrites_one_line():
    out = io.StringIO()
    bar = ProgressBar("job", width=10, stream=out)
    bar(1, 4, "first")
    bar(4, 4, "done")
    bar.close()
    text = out.getvalue()
    assert text.startswith("\rjob [##........] 1/4 first")
    assert "\rjob [##########] 4/4 done" in text and text.endswith("\n")
    assert bar.updates == 2 and bar.last == (4, 4, "done")


def test_progress_bar_draws_a_task_status_over_a_longer_line():
    out = io.StringIO()
    bar = ProgressBar("job", width=10, stream=out)
    bar(1, 4, "first of many steps")
    bar.on_status(TaskStatus("t1", "working", "stage two"))
    bar.on_status(TaskStatus("t1", "completed"))
    bar.close()
    first = "job [##........] 1/4 first of many steps"
    assert out.getvalue() == ("\r" + first + "\r" + "job working: stage two".ljust(len(first))
                              + "\r" + "job completed".ljust(len("job working: stage two"))
                              + "\n")
    assert bar.updates == 3


def test_progress_bar_drives_from_a_real_progress_stream(sdk_spec):
    out = io.StringIO()
    bar = ProgressBar("slow", stream=out)
    with McpServer(sdk_spec) as server:
        server.call_tool("mcp__sdk__slow", {"seconds": 0.2, "steps": 4}, on_progress=bar)
    assert bar.updates == 4 and bar.last[:2] == (4, 4)
