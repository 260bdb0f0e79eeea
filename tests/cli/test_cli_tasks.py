"""The command line of tasks, run as a user runs it (subprocesses, and a terminal driven with
pexpect) against a real ToolServer serving the task fixtures over HTTP in this process:
``call --task-handle FILE --detach``, ``tasks status|resume|cancel FILE``."""
from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time

import pexpect
import pytest

from raider_sync import Context, TaskHandle
from raider_sync.gateway.cli import Serving
from raider_sync.serve.serving_http import wsgi_app

from serve.task_tools import task_tools

WAIT = 30.0
RUN_TIMEOUT = 60
#: the command line in a child that sets its own SIGINT handler (CI may start it ignored)
WITH_SIGINT = """\
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
from raider_sync.cli import main
sys.exit(main(sys.argv[1:]))
"""


class Served:
    """The task fixtures and two tools of these tests, served over HTTP, and a .mcp.json
    naming them ``jobs``. ``gated`` says "stage one", waits for ``gates[0]``, says "stage
    two", waits for ``gates[1]``; ``watched`` waits until cancelled and tells ``outcomes``."""

    def __init__(self, folder, **options):
        self.tools = task_tools(task_poll_interval=0.1, **options)
        self.gates = [threading.Event(), threading.Event()]
        self.outcomes: queue.Queue = queue.Queue()

        @self.tools.tool(task="optional")
        def gated(label: str, ctx: Context) -> str:
            """Work in two stages, each let through by the test."""
            ctx.progress(0, 2, "stage one")
            self.gates[0].wait(WAIT)
            ctx.progress(1, 2, "stage two")
            self.gates[1].wait(WAIT)
            return f"{label}: done"

        @self.tools.tool(task="optional")
        def watched(ctx: Context) -> str:
            """Wait until cancelled."""
            cancelled = ctx.wait_cancelled(WAIT)
            self.outcomes.put("cancelled" if cancelled else "done")
            return "stopped"

        self.app = wsgi_app(self.tools)
        self.serving = Serving(self.app).start()
        self.config = folder / ".mcp.json"
        self.config.write_text(json.dumps({"mcpServers": {"jobs": {
            "type": "http", "url": f"{self.serving.url}/mcp"}}}))

    def close(self) -> None:
        for gate in self.gates:
            gate.set()
        self.app.close()
        self.serving.stop(10)
        self.tools.close()


@pytest.fixture
def served(tmp_path):
    made = Served(tmp_path)
    yield made
    made.close()


def cli(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "raider_sync", *args], capture_output=True,
                          text=True, timeout=RUN_TIMEOUT, cwd=str(cwd))


def detached(tool: str, arguments: dict, cwd) -> TaskHandle:
    """``call TOOL --task-handle task.json --detach``: the handle it wrote."""
    done = cli("call", tool, "--args", json.dumps(arguments), "--task-handle", "task.json",
               "--detach", cwd=cwd)
    assert done.returncode == 0, done.stderr
    handle = TaskHandle.from_json((cwd / "task.json").read_text())
    assert done.stdout.startswith(f"task {handle.task_id} runs on; its handle is in task.json")
    return handle


def test_detach_then_status_then_resume(served, tmp_path):
    handle = detached("mcp__jobs__gated", {"label": "a"}, tmp_path)
    assert handle.server == "jobs" and handle.tool == "mcp__jobs__gated"
    assert served.tools.served_tasks.store.get(handle.task_id).status == "working"

    done = cli("tasks", "status", "task.json", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    status = json.loads(done.stdout)
    assert status["task_id"] == handle.task_id and status["status"] == "working"
    assert "raw" not in status and status["result"] is None
    done = cli("tasks", "status", "task.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"task {handle.task_id} of mcp__jobs__gated: working")

    for gate in served.gates:
        gate.set()
    done = cli("tasks", "resume", "task.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "a: done"
    done = cli("tasks", "status", "task.json", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "completed"


def test_a_call_that_is_no_task_writes_no_handle(served, tmp_path):
    done = cli("call", "mcp__jobs__greet", "--args", '{"name": "Ada"}', "--task-handle",
               "task.json", "--detach", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Hello, Ada!"
    assert "did not become a task" in done.stderr
    assert not (tmp_path / "task.json").exists()


def test_detach_needs_a_task_handle(served, tmp_path):
    done = cli("call", "mcp__jobs__gated", "--args", '{"label": "a"}', "--detach", cwd=tmp_path)
    assert done.returncode == 2
    assert "--detach needs --task-handle FILE" in done.stderr


def test_cancel_reaches_the_server(served, tmp_path):
    handle = detached("mcp__jobs__watched", {}, tmp_path)
    done = cli("tasks", "cancel", "task.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"task {handle.task_id}: cancel sent"
    assert served.outcomes.get(timeout=WAIT) == "cancelled"
    assert served.tools.served_tasks.store.get(handle.task_id).status == "cancelled"
    done = cli("tasks", "cancel", "task.json", cwd=tmp_path)
    assert done.returncode == 1
    assert f"task {handle.task_id} has ended already" in done.stderr


def test_task_timeouts_cancel_the_task_on_the_server(served, tmp_path):
    done = cli("call", "mcp__jobs__watched", "--task-timeout", "0.5", cwd=tmp_path)
    assert done.returncode == 1
    assert "did not end within 0.5 s; it was cancelled" in done.stderr
    assert served.outcomes.get(timeout=WAIT) == "cancelled"
    detached("mcp__jobs__watched", {}, tmp_path)
    done = cli("tasks", "resume", "task.json", "--timeout", "0.5", cwd=tmp_path)
    assert done.returncode == 1
    assert "did not end within 0.5 s; it was cancelled" in done.stderr
    assert served.outcomes.get(timeout=WAIT) == "cancelled"


def test_resume_of_an_expired_task_exits_1(tmp_path):
    short = Served(tmp_path, task_ttl=0.5)
    try:
        handle = detached("mcp__jobs__watched", {}, tmp_path)
        deadline = time.monotonic() + WAIT
        while short.tools.served_tasks.store.get(handle.task_id) is not None:
            assert time.monotonic() < deadline, "the task never expired"
            time.sleep(0.05)
        done = cli("tasks", "resume", "task.json", "--json", cwd=tmp_path)
        assert done.returncode == 1, done.stderr
        error = json.loads(done.stdout)["error"]
        assert error["type"] == "TaskExpired"
        assert error["message"].startswith(f"task {handle.task_id} expired")
        assert f"raider-sync: task {handle.task_id} " in done.stderr
    finally:
        short.close()


@pytest.mark.parametrize("text, problem", [
    ("{not json", "a task handle must be JSON"),
    ('{"raider_sync_task": 1, "server": "jobs"}', "task handle: fingerprint is missing"),
    ('{"raider_sync_task": 7}', "raider_sync_task: version 7 of a task handle"),
])
def test_a_malformed_handle_exits_2_naming_the_problem(tmp_path, text, problem):
    (tmp_path / "task.json").write_text(text)
    for command in ("resume", "status", "cancel"):
        done = cli("tasks", command, "task.json", cwd=tmp_path)
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith(f"raider-sync: task.json: {problem}")
    done = cli("tasks", "resume", "missing.json", cwd=tmp_path)
    assert done.returncode == 2
    assert "missing.json: cannot read the task handle" in done.stderr


def spawn(tmp_path, *args: str, command: list[str] | None = None) -> pexpect.spawn:
    command = command or ["-m", "raider_sync"]
    return pexpect.spawn(sys.executable, [*command, *args], cwd=str(tmp_path),
                         encoding="utf-8", timeout=WAIT, dimensions=(24, 200))


def test_a_terminal_shows_the_task_status_as_it_changes(served, tmp_path):
    child = spawn(tmp_path, "call", "mcp__jobs__gated", "--args", '{"label": "b"}')
    try:
        child.expect("mcp__jobs__gated working: stage one")
        served.gates[0].set()
        child.expect("mcp__jobs__gated working: stage two")
        served.gates[1].set()
        child.expect("b: done")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0


def test_ctrl_c_cancels_the_task_on_the_server(served, tmp_path):
    child = spawn(tmp_path, "call", "mcp__jobs__watched", command=["-c", WITH_SIGINT])
    try:
        child.expect("mcp__jobs__watched working")
        child.sendintr()
        child.expect("KeyboardInterrupt")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert served.outcomes.get(timeout=WAIT) == "cancelled"
