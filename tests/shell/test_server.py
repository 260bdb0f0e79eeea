"""The shell tools served over stdio by serve-shell, to the SDK's client."""
from __future__ import annotations

import argparse
import asyncio
import sys

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from raider_sync.shell.cli import register


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
