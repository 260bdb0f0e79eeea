"""The shell tools as a ToolServer and as async tools (raider_sync.shell.as_tools)."""
from __future__ import annotations

from raider_sync.shell import Tasks


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
