"""Tasks across processes: a handle saved by one process and resumed by another over HTTP,
a stdio server's task (which lives in that server's process) followed over stdio and
refused to a new McpServer, and a hub's resume."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from raider_sync import McpConfig, McpHub, McpServer, TaskHandle, TaskNotResumable

from client.tasks.support import RESUME, created

WAIT = 30.0
TESTS = str(Path(__file__).resolve().parents[2])
ROOT = str(Path(TESTS).parent)

STDIO = textwrap.dedent("""
    from raider_sync.serve.serving import serve_stdio
    from serve.task_tools import task_tools
    serve_stdio(task_tools(task_poll_interval=0.1))
""")


def test_a_new_process_resumes_a_saved_handle_over_http(client, served, tmp_path):
    future = client.call_tool_f("slow_compute", {"seconds": 1.0, "label": "far"}, timeout=WAIT)
    created(future)
    handle = future.detach()
    saved = tmp_path / "task.json"
    saved.write_text(handle.to_json())
    script = tmp_path / "resume.py"
    script.write_text(RESUME)
    env = {**os.environ, "PYTHONPATH": ROOT, "HOME": str(tmp_path),
           "XDG_CACHE_HOME": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, str(script), served.url, str(saved)],
                          capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer["text"] == "far: computed in 1 s" and answer["pid"] != os.getpid()


@pytest.fixture
def stdio_spec(tmp_path):
    script = tmp_path / "jobs.py"
    script.write_text(STDIO)
    return McpConfig.from_dict({"mcpServers": {"jobs": {
        "command": sys.executable, "args": [str(script)],
        "env": {"PYTHONPATH": f"{ROOT}{os.pathsep}{TESTS}"}}}}).server("jobs")


def test_a_stdio_task_is_followed_and_its_handle_refused_by_a_new_server(stdio_spec):
    answers = {"action": "accept", "content": {"confirm": True}}
    with McpServer(stdio_spec, kill_grace=0.5, on_elicitation=lambda p: answers) as first:
        assert first.era == "modern", first.reason
        done = first.call_tool("confirm_delete", {"filename": "b"}, timeout=WAIT)
        assert done["content"][0]["text"] == "deleted b"
        future = first.call_tool_f("slow_compute", {"seconds": 1.0, "label": "s"},
                                   timeout=WAIT)
        created(future)
        handle = TaskHandle.from_json(future.detach().to_json())
        assert handle.transport == "stdio" and handle.instance == first.pid
        assert "jobs.py" in handle.fingerprint and "PYTHONPATH" not in handle.to_json()
        with McpServer(stdio_spec, kill_grace=0.5) as second:
            with pytest.raises(TaskNotResumable) as refused:
                second.resume_task(handle, timeout=WAIT)
            assert str(first.pid) in str(refused.value)
            assert str(second.pid) in str(refused.value)
        # the server process that runs it follows it to the end
        result = first.resume_task(handle, timeout=WAIT)
        assert result["content"][0]["text"] == "s: computed in 1 s"


def test_a_hub_resumes_by_the_handles_server(served):
    config = McpConfig.from_dict({"mcpServers": {"jobs": {"type": "http", "url": served.url}}})
    with McpHub(config) as hub:
        hub.start(WAIT)
        future = hub.call_tool_f("mcp__jobs__slow_compute", {"seconds": 0.5, "label": "h"},
                                 timeout=WAIT)
        created(future)
        handle = future.detach()
        assert handle is not None and handle.server == "jobs"
        result = hub.resume_task(handle, task_timeout=WAIT)
        assert result["content"][0]["text"] == "h: computed in 0.5 s"
