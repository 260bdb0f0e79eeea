"""The tools the conformance harness's ``tasks-*`` server scenarios expect, written on the
public API only (so the tests of tasks and a conformance fixture can both serve them):

- ``greet {name}``: never a task; "Hello, {name}!".
- ``slow_compute {seconds, label}``: a task for a client that declares the extension; waits
  ``seconds`` unless the task is cancelled first.
- ``failing_job``: only ever a task; a tool error after about a second.
- ``protocol_error_job``: a task that fails with a JSON-RPC error.
- ``confirm_delete {filename}``: a task that asks the user one question.
- ``multi_input``: a task that asks two questions at once.
- ``test_tool_with_task``: only ever a task, begun by the handler once an ordinary round of
  the request gathered the user's name.
"""
from __future__ import annotations

from raider_sync import Context, McpError, ToolServer
from raider_sync.protocol.codes import INTERNAL_ERROR
from raider_sync.serve.context import elicitation

#: seconds failing_job works before it fails (the harness's "after about a second")
FAILING_AFTER = 1.0
NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
CONFIRM = {"type": "object", "properties": {"confirm": {"type": "boolean"}},
           "required": ["confirm"]}


def task_tools(name: str = "tasks", **options) -> ToolServer:
    """A ToolServer holding the fixtures; ``options`` are ToolServer's."""
    tools = ToolServer(name, **options)
    add_task_tools(tools)
    return tools


def add_task_tools(tools: ToolServer) -> None:
    """Add the fixtures to ``tools``."""

    @tools.tool()
    def greet(name: str) -> str:
        """Greet someone, at once."""
        return f"Hello, {name}!"

    @tools.tool(task="optional")
    def slow_compute(ctx: Context, seconds: float = 1.0, label: str = "") -> str:
        """Work for `seconds`, unless cancelled first."""
        ctx.progress(0, seconds, f"computing {label}")
        if ctx.wait_cancelled(seconds):
            return f"{label}: cancelled"
        return f"{label}: computed in {seconds:g} s"

    @tools.tool(task="required")
    def failing_job(ctx: Context) -> str:
        """Fail with a tool error after about a second."""
        ctx.wait_cancelled(FAILING_AFTER)
        raise RuntimeError("the job could not be done")

    @tools.tool(task="optional")
    def protocol_error_job() -> str:
        """Fail with a JSON-RPC error."""
        raise McpError(INTERNAL_ERROR, "the job's backend is unreachable")

    @tools.tool(task="optional")
    def confirm_delete(filename: str, ctx: Context) -> str:
        """Delete a file once the user confirms."""
        answer = ctx.elicit(f"Delete {filename}?", CONFIRM, key="confirm")
        if answer.get("action") == "accept" and (answer.get("content") or {}).get("confirm"):
            return f"deleted {filename}"
        return f"kept {filename}"

    @tools.tool(task="optional")
    def multi_input(ctx: Context) -> str:
        """Ask two questions at once."""
        answers = ctx.ask({"name": elicitation("Your name?", NAME),
                           "confirm": elicitation("Go on?", CONFIRM)})
        name = (answers["name"].get("content") or {}).get("name")
        go_on = (answers["confirm"].get("content") or {}).get("confirm")
        return f"{name} said {'yes' if go_on else 'no'}"

    @tools.tool(task="required", task_begins="handler")
    def test_tool_with_task(ctx: Context) -> str:
        """Ask the user's name (a round of the request), then greet them as a task."""
        answer = ctx.elicit("What is your name?", NAME, key="user_name")
        name = (answer.get("content") or {}).get("name", "nobody")
        ctx.begin_task(f"greeting {name}")
        return f"Hello, {name}, from a task!"
