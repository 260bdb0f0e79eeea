"""What the tests of tasks share: waiting for a call to become a task, and the script a new
process runs to resume a saved handle over HTTP."""
from __future__ import annotations

import textwrap
import time

from raider_sync import TaskFuture

WAIT = 30.0

#: ``python RESUME URL PATH``: resume the handle saved at PATH with a new McpServer of the
#: HTTP server at URL; prints {"text": the result's text, "pid": its own pid}
RESUME = textwrap.dedent("""
    import json, sys
    from raider_sync import McpConfig, McpServer, TaskHandle
    url, path = sys.argv[1], sys.argv[2]
    handle = TaskHandle.from_json(open(path).read())
    spec = McpConfig.from_dict({"mcpServers": {"jobs": {"type": "http", "url": url}}}).server("jobs")
    with McpServer(spec) as server:
        result = server.resume_task(handle, timeout=20, task_timeout=20)
    print(json.dumps({"text": result["content"][0]["text"], "pid": __import__("os").getpid()}))
""")


def created(future: TaskFuture) -> str:
    """The task id once the call became a task (bounded by WAIT)."""
    deadline = time.monotonic() + WAIT
    while future.task_id is None:
        assert not future.done(), future.exception()
        assert time.monotonic() < deadline, "the call never became a task"
        time.sleep(0.01)
    return future.task_id
