"""The shell tools as a ToolServer, as async tools, and served over stdio to the SDK's client."""
from __future__ import annotations

import argparse
import asyncio
import sys

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from raider_sync.shell import Tasks
from raider_sync.shell.cli import register


def text_of(result: dict) -> str:
    return result["content"][0]["text"]


def test_tool_definitions(shell):
    tools = {tool["name"]: tool for tool in shell.server.list_tools()}
    assert list(tools) == ["bash", "bash_output", "kill_shell", "monitor"]
    bash = tools["bash"]["inputSchema"]
    assert bash["required"] == ["command"]
    assert set(bash["properties"]) == {"command", "timeout", "description", "run_in_background"}
    assert "SECONDS" in bash["properties"]["timeout"]["description"]
    assert set(tools["bash_output"]["inputSchema"]["properties"]) == {"bash_id", "filter", "block",
                                                                      "timeout"}
    assert tools["kill_shell"]["inputSchema"]["required"] == ["shell_id"]
    assert set(tools["monitor"]["inputSchema"]["properties"]) == {"description", "command",
                                                                  "timeout_ms"}


def test_server_is_built_once(shell):
    assert shell.server is shell.server


def test_calls_through_the_server(shell):
    server = shell.server
    assert server.call_tool("bash", {"command": "echo hi"}, timeout=10) == {
        "content": [{"type": "text", "text": "hi"}]}
    failed = server.call_tool("bash", {"command": "exit 2"}, timeout=10)
    assert failed["isError"] is True and text_of(failed) == "Exit code 2"
    server.call_tool("bash", {"command": "sleep 100", "run_in_background": True}, timeout=10)
    assert text_of(server.call_tool("bash_output", {"bash_id": "bash_1"}, timeout=10)) == (
        "<status>running</status>")
    assert text_of(server.call_tool("kill_shell", {"shell_id": "bash_1"}, timeout=10)) == (
        "Successfully stopped task: bash_1 (sleep 100)")


def test_invalid_arguments_name_the_field(shell):
    result = shell.server.call_tool("bash", {"command": "ls", "timeout": "soon"}, timeout=10)
    assert result["isError"] and "timeout" in text_of(result)
    result = shell.server.call_tool("bash_output", {}, timeout=10)
    assert result["isError"] and "bash_id" in text_of(result)


def test_async_tools_use_the_callers_values(make_shell, tmp_path):
    tasks = Tasks()
    shell = make_shell(tasks=tasks)
    worktree = tmp_path / "wt"
    worktree.mkdir()
    state = {"recipient": "agent_1"}
    tools = {tool.name: tool for tool in shell.async_tools(
        recipient=lambda: state["recipient"], detached=False,
        working_directory=lambda: str(worktree), applies=lambda mcp: True)}
    assert list(tools) == ["bash", "bash_output", "kill_shell", "monitor"]
    assert tools["bash"].applies(None) is True
    assert tools["bash"].definition()["inputSchema"]["required"] == ["command"]
    assert tools["bash"]({"command": "pwd"}).result(10) == {
        "content": [{"type": "text", "text": str(worktree)}]}
    result = tools["bash"]({"command": "exit 1", "run_in_background": True}, {"call": "c4"}).result(10)
    assert "bash_1" in text_of(result)
    notes = tasks.notifications("agent_1", block=True, timeout=5)
    assert "<tool-use-id>c4</tool-use-id>" in notes[0]
    out = tools["bash_output"]({"bash_id": "bash_1", "block": True, "timeout": 5}).result(10)
    assert text_of(out).startswith("<status>failed</status>")
    state["recipient"] = "agent_2"
    tools["bash"]({"command": "true", "run_in_background": True}, {"id": "c5"}).result(10)
    assert "<tool-use-id>c5</tool-use-id>" in tasks.notifications("agent_2", block=True, timeout=5)[0]


def test_handlers_do_not_keep_the_tools_alive(tmp_path):
    import gc
    import weakref

    from raider_sync.shell import BashTools
    shell = BashTools(working_directory=str(tmp_path))
    server = shell.server
    tools = shell.async_tools()
    alive = weakref.ref(shell)
    del shell
    gc.collect()
    assert alive() is None
    assert server.status == "stopped"
    assert tools[0]({"command": "true"}).result(5)["isError"] is True


def test_serve_shell_registers_its_arguments():
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["serve-shell", "--cwd", "/tmp", "--allow", "echo", "ls", "--allow", "pwd"])
    assert (args.cwd, args.allow, args.timeout) == ("/tmp", ["echo", "ls", "pwd"], 120)
    assert callable(args.run)


async def _drive(params: StdioServerParameters, cwd: str) -> dict:
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            listed = await session.list_tools()
            echo = await session.call_tool("bash", {"command": "echo served; pwd"})
            refused = await session.call_tool("bash", {"command": "rm -rf x"})
            background = await session.call_tool("bash", {"command": "sleep 100",
                                                          "run_in_background": True})
            killed = await session.call_tool("kill_shell", {"shell_id": "bash_1"})
            unknown = await session.call_tool("bash_output", {"bash_id": "bash_9"})
            return {"tools": [t.name for t in listed.tools],
                    "echo": (echo.content[0].text, echo.is_error),
                    "refused": (refused.content[0].text, refused.is_error),
                    "background": background.content[0].text,
                    "killed": killed.content[0].text,
                    "unknown": (unknown.content[0].text, unknown.is_error)}


@pytest.mark.parametrize("module", ["raider_sync", "raider_sync.shell"])
def test_serve_shell_with_the_sdk_client(tmp_path, module):
    args = ["-m", module] + (["serve-shell"] if module == "raider_sync" else [])
    params = StdioServerParameters(command=sys.executable, args=args + [
        "--cwd", str(tmp_path), "--allow", "echo", "sleep"], cwd=str(tmp_path))
    got = asyncio.run(asyncio.wait_for(_drive(params, str(tmp_path)), 60))
    assert got["tools"] == ["bash", "bash_output", "kill_shell"]
    assert got["echo"] == (f"served\n{tmp_path}", False)
    assert got["refused"] == ("Command not allowed: rm", True)
    assert got["background"].startswith("Command running in background with ID: bash_1.")
    assert got["killed"] == "Successfully stopped task: bash_1 (sleep 100)"
    assert got["unknown"] == ("No task found with ID: bash_9", True)


def test_serve_shell_refuses_a_missing_directory(tmp_path, capsys):
    from raider_sync.shell.cli import main
    assert main(["--cwd", str(tmp_path / "missing")]) == 2
    assert "no such directory" in capsys.readouterr().err
