"""serve_stdio: a ToolServer served as a real MCP server, driven by the official SDK's client."""
from __future__ import annotations

import sys
import textwrap

import anyio
import mcp.types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

# A ToolServer with more tools than one page holds, one that grows the list, one that fails,
# one that prints to stdout (which must not reach the protocol stream).
SERVED = textwrap.dedent('''
    import sys
    from raider_sync.serve.serving import serve_stdio
    from raider_sync.serve.toolserver import ToolServer

    tools = ToolServer("served", instructions="Served for a test.")
    for i in range(5):
        tools.add_tool(f"t{i}", lambda i=i: f"tool {i}", description=f"tool number {i}")

    @tools.tool()
    def add(a: int, b: int) -> str:
        """Add two numbers."""
        return str(a + b)

    @tools.tool()
    def grow() -> str:
        """Add the tool 'extra'."""
        tools.add_tool("extra", lambda: "extra!", description="added at run time")
        return "grown"

    @tools.tool()
    def boom() -> str:
        raise RuntimeError("the handler broke")

    @tools.tool()
    def noisy() -> str:
        print("stray output on stdout")
        sys.stdout.flush()
        return "quiet answer"

    tools.add_resource("served://note.txt", lambda: "a note", name="note")
    with tools:
        serve_stdio(tools, page_size=2)
''')

TIMEOUT = 30


def run_client(params: StdioServerParameters, errlog_path, scenario):
    """Run ``scenario(session, notifications)`` against the server, inside asyncio.run."""
    notifications: list = []

    async def on_message(message) -> None:
        if not isinstance(message, Exception):
            notifications.append(message)

    async def main():
        with open(errlog_path, "w") as errlog, anyio.fail_after(TIMEOUT):
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write, message_handler=on_message) as session:
                    return await scenario(session, notifications)

    return anyio.run(main, backend="asyncio")


@pytest.fixture
def served(tmp_path):
    script = tmp_path / "served.py"
    script.write_text(SERVED)
    return StdioServerParameters(command=sys.executable, args=[str(script)])


def test_sdk_client_lists_every_page_calls_and_pings(served, tmp_path):
    async def scenario(session: ClientSession, notifications):
        init = await session.initialize()
        pages, cursor = [], None
        while True:
            page = await session.list_tools(
                params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
            pages.append([tool.name for tool in page.tools])
            cursor = page.next_cursor
            if not cursor:
                break
        added = await session.call_tool("add", {"a": 2, "b": 40})
        invalid = await session.call_tool("add", {"a": 2, "b": "forty"})
        broken = await session.call_tool("boom", {})
        noisy = await session.call_tool("noisy", {})
        pong = await session.send_ping()
        note = await session.read_resource("served://note.txt")
        return init, pages, added, invalid, broken, noisy, pong, note

    init, pages, added, invalid, broken, noisy, pong, note = run_client(
        served, tmp_path / "err.log", scenario)
    assert init.server_info.name == "served"
    assert init.instructions == "Served for a test."
    assert init.capabilities.tools is not None and init.capabilities.tools.list_changed
    assert pages == [["t0", "t1"], ["t2", "t3"], ["t4", "add"], ["grow", "boom"], ["noisy"]]
    assert added.is_error is False and added.content[0].text == "42"
    assert invalid.is_error is True and "b: " in invalid.content[0].text
    assert broken.is_error is True and broken.content[0].text == "Error: the handler broke"
    assert noisy.content[0].text == "quiet answer"
    assert pong is not None
    assert note.contents[0].text == "a note"
    assert "stray output on stdout" in (tmp_path / "err.log").read_text()


def test_sdk_client_is_told_when_tools_change(served, tmp_path):
    async def scenario(session: ClientSession, notifications):
        await session.initialize()
        before = await _all_tool_names(session)
        grown = await session.call_tool("grow", {})
        with anyio.fail_after(10):
            while not any(isinstance(n, types.ToolListChangedNotification) for n in notifications):
                await anyio.sleep(0.02)  # a bounded poll for the notification
        after = await _all_tool_names(session)
        extra = await session.call_tool("extra", {})
        return before, grown, after, extra

    before, grown, after, extra = run_client(served, tmp_path / "err.log", scenario)
    assert "extra" not in before
    assert grown.content[0].text == "grown"
    assert after[-1] == "extra" and len(after) == len(before) + 1
    assert extra.content[0].text == "extra!"


def test_sdk_client_against_the_demo_server(tmp_path):
    params = StdioServerParameters(command=sys.executable, args=["-m", "raider_sync.cli.demo"])

    async def scenario(session: ClientSession, notifications):
        init = await session.initialize()
        tools = await session.list_tools()
        echoed = await session.call_tool("echo", {"message": "hello"})
        unknown = None
        try:
            await session.call_tool("nope", {})
        except Exception as exc:  # the SDK raises for a JSON-RPC error answer
            unknown = exc
        resources = await session.list_resources()
        guide = await session.read_resource("demo://guide.md")
        prompt = await session.get_prompt("review", {"topic": "the plan"})
        return init, tools, echoed, unknown, resources, guide, prompt

    init, tools, echoed, unknown, resources, guide, prompt = run_client(
        params, tmp_path / "err.log", scenario)
    assert init.server_info.name == "demo"
    assert [t.name for t in tools.tools] == ["echo", "add", "wait", "system"]
    assert tools.next_cursor is None
    assert echoed.content[0].text == "hello"
    assert unknown is not None and "nope" in str(unknown)
    assert [str(r.uri) for r in resources.resources] == ["demo://guide.md"]
    assert guide.contents[0].text.startswith("# raider_sync demo")
    assert prompt.messages[0].content.text == "Please review the plan and list three risks."


async def _all_tool_names(session: ClientSession) -> list[str]:
    names, cursor = [], None
    while True:
        page = await session.list_tools(
            params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
        names += [tool.name for tool in page.tools]
        cursor = page.next_cursor
        if not cursor:
            return names


def test_served_progress_reaches_a_raider_client():
    """The demo's wait tool reports progress; over stdio it arrives as notifications/progress."""
    from raider_sync import McpConfig, McpServer
    spec = McpConfig.from_dict({"mcpServers": {"demo": {
        "command": sys.executable, "args": ["-m", "raider_sync.cli.demo"]}}}).server("demo")
    seen = []
    with McpServer(spec) as server:
        result = server.call_tool("mcp__demo__wait", {"seconds": 0.1, "steps": 3},
                                  on_progress=lambda *a: seen.append(a))
    assert result.text.startswith("waited")
    assert seen == [(1, 3, "step 1 of 3"), (2, 3, "step 2 of 3"), (3, 3, "step 3 of 3")]


AWKWARD = textwrap.dedent('''
    import time
    from raider_sync.serve.serving import serve_stdio
    from raider_sync.serve.toolserver import ToolServer

    tools = ToolServer("awkward", call_timeout=0.3)
    tools.add_tool("slow", lambda: time.sleep(30) or "late", description="never in time")
    tools.add_tool("surrogate", lambda: "half a pair: \\ud800", description="a lone surrogate")
    tools.add_tool("nan", lambda: {"content": [], "structuredContent": {"x": float("nan")}},
                   description="what JSON cannot carry")
    serve_stdio(tools)
''')


@pytest.fixture
def awkward(tmp_path):
    from raider_sync import McpConfig, McpServer
    script = tmp_path / "awkward.py"
    script.write_text(AWKWARD)
    spec = McpConfig.from_dict({"mcpServers": {"awkward": {
        "command": sys.executable, "args": [str(script)]}}}).server("awkward")
    server = McpServer(spec, kill_grace=0.2)
    server.start_f().result(TIMEOUT)
    assert server.status == "connected", server.reason
    yield server
    server.stop()


def test_a_served_call_is_bounded_by_the_tool_servers_call_timeout(awkward):
    import time
    started = time.monotonic()
    result = awkward.call_tool("mcp__awkward__slow", {}, timeout=10)
    assert result["isError"] and "timed out after 0.3 s" in result.text
    assert time.monotonic() - started < 3


def test_a_served_answer_json_cannot_carry_as_it_is_still_arrives(awkward):
    import time

    from raider_sync import McpError
    started = time.monotonic()
    assert awkward.call_tool("mcp__awkward__surrogate", {}, timeout=10).text == \
        "half a pair: \ud800"
    with pytest.raises(McpError, match="cannot be sent as JSON"):
        awkward.call_tool("mcp__awkward__nan", {}, timeout=10)
    assert time.monotonic() - started < 3


def test_invalid_requests_are_answered_with_invalid_request():
    """The stdio session refuses what the HTTP app refuses, by the same check: -32600, with
    the request's id where it is a valid one; an invalid notification is not answered."""
    import io
    import json
    import threading

    from raider_sync.serve.serving import serve_stdio
    from raider_sync.serve.toolserver import ToolServer

    from jsonrpc_cases import INVALID_NOTIFICATION, INVALID_REQUESTS

    lines = [request for request, _ in INVALID_REQUESTS] + [
        INVALID_NOTIFICATION, {"jsonrpc": "2.0", "id": "fine", "method": "ping"}]
    stdin = io.BytesIO("".join(json.dumps(line) + "\n" for line in lines).encode())
    stdout = io.BytesIO()
    stdout.close = lambda: None  # keep what was written readable
    with ToolServer("t") as tools:
        thread = threading.Thread(target=serve_stdio, args=(tools,),
                                  kwargs={"stdin": stdin, "stdout": stdout})
        thread.start()
        thread.join(TIMEOUT)
        assert not thread.is_alive()
    answers = [json.loads(line) for line in stdout.getvalue().decode().splitlines()]
    assert {"jsonrpc": "2.0", "id": "fine", "result": {}} in answers
    refused = [answer for answer in answers if answer["id"] != "fine"]
    assert all(answer["error"]["code"] == -32600 for answer in refused), refused
    assert sorted(map(repr, (answer["id"] for answer in refused))) == \
        sorted(map(repr, (answer_id for _, answer_id in INVALID_REQUESTS)))
    assert "params must be an object" in json.dumps(refused)
