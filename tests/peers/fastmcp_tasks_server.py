"""A real server of MCP's tasks extension (SEP-2663, ``io.modelcontextprotocol/tasks``) for
tests: FastMCP with fastmcp-tasks' ``TasksExtension`` on its in-memory backend (``memory://``,
no Redis server), stateless revision only for tasks (fastmcp-tasks serves them there alone).

    python fastmcp_tasks_server.py stdio
    python fastmcp_tasks_server.py http PORT        # http://127.0.0.1:PORT/mcp

Tools, after the harness's tasks fixtures (tests/serve/task_tools.py):

- ``greet {name}``: never a task; "Hello, {name}!".
- ``slow_compute {seconds, label}``: a task for a client that declares the extension (a
  plain call otherwise); sleeps ``seconds``; ``tasks/cancel`` ends it.
- ``failing_job``: only ever a task; a tool error after a short while (the task completes
  with ``isError``).
- ``confirm_delete {filename}``: a task that asks one question (``inputRequests``), answered
  with ``tasks/update``.

And two that let a test see the server's side (over stdio too, where the client owns the pipe):

- ``polls {task_id}``: how many ``tasks/get`` of that task this server answered.
- ``task_state {task_id}``: the task's status as this server's own record has it.
"""
import asyncio
import sys
from collections import Counter
from datetime import timedelta

import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.exceptions import ToolError
from fastmcp.utilities.tasks import TaskConfig
from fastmcp_tasks import TasksExtension
from fastmcp_tasks.handlers import tasks_get

#: seconds failing_job works before it fails
FAILING_AFTER = 0.2
#: the pollIntervalMs its tasks ask for (fastmcp-tasks' default is 5 s: slow tests)
POLL = timedelta(milliseconds=200)
CONFIRM = {"type": "object", "properties": {"confirm": {"type": "boolean"}},
           "required": ["confirm"]}



class CountingTasks(TasksExtension):
    """The extension as shipped, counting the tasks/get it answers by task id."""

    gets: Counter = Counter()

    async def _handle_get(self, ctx, params):
        CountingTasks.gets[params.task_id] += 1
        return await super()._handle_get(ctx, params)


server = FastMCP("raider-test-fastmcp-tasks")
server.add_extension(CountingTasks(url="memory://"))


@server.tool
def greet(name: str) -> str:
    """Greet someone, at once."""
    return f"Hello, {name}!"


@server.tool(task=TaskConfig(mode="optional", poll_interval=POLL))
async def slow_compute(seconds: float = 1.0, label: str = "") -> str:
    """Work for `seconds` (cancelled by tasks/cancel)."""
    await asyncio.sleep(seconds)
    return f"{label}: computed in {seconds:g} s"


@server.tool(task=TaskConfig(mode="required", poll_interval=POLL))
async def failing_job() -> str:
    """Fail with a tool error after a short while."""
    await asyncio.sleep(FAILING_AFTER)
    raise ToolError("the job could not be done")


@server.tool(task=TaskConfig(mode="optional", poll_interval=POLL))
async def confirm_delete(filename: str, ctx: Context) -> str | mcp_types.InputRequiredResult:
    """Delete a file once the user confirms: a task asks by returning its question, and
    runs again with the answer (fastmcp-tasks' way; ctx.elicit would block a worker)."""
    answer = (ctx.input_responses or {}).get("confirm")
    if answer is None:
        return mcp_types.InputRequiredResult(input_requests={"confirm": mcp_types.ElicitRequest(
            params=mcp_types.ElicitRequestFormParams(message=f"Delete {filename}?",
                                                     requested_schema=CONFIRM))})
    content = getattr(answer, "content", None) or {}
    if answer.action == "accept" and content.get("confirm"):
        return f"deleted {filename}"
    return f"kept {filename}"


@server.tool
def polls(task_id: str) -> int:
    """How many tasks/get of ``task_id`` this server answered."""
    return CountingTasks.gets[task_id]


@server.tool
async def task_state(task_id: str) -> str:
    """The status of ``task_id`` in this server's own record."""
    return (await tasks_get(server, task_id)).status


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if mode == "http":
        server.run("http", host="127.0.0.1", port=int(sys.argv[2]), show_banner=False)
    else:
        server.run("stdio", show_banner=False)
