"""The tasks client against a server it was not written with: FastMCP with fastmcp-tasks
(tests/peers/fastmcp_tasks_server.py), over stdio and Streamable HTTP, followed by McpServer of
the stateless era. What that server does that our own ToolServer does not: task ids of 43
characters, ``ttlMs`` 900000, an inlined result that carries ``resultType`` and FastMCP's own
``_meta``, question keys ``"<taskId>:<16 hex>"``, and a ``lastUpdatedAt`` that is the time of
each answer, new on every poll. The peer's ``polls`` and ``task_state`` tools show its side."""
from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from raider_sync import (
    McpError,
    McpServer,
    TaskExpired,
    TaskStatus,
    ToolError,
    ToolTimeout,
)

from client.tasks.support import RESUME, created
from conftest import FASTMCP_TASKS_SERVER, config_of
from fakes.http_peers import HttpPeer

WAIT = 30.0
ROOT = str(Path(__file__).resolve().parents[3])
ACCEPT = {"action": "accept", "content": {"confirm": True}}


class Peer:
    """How to reach the peer: ``spec`` for an McpServer, ``url`` (None over stdio)."""

    def __init__(self, spec, url: str | None):
        self.spec = spec
        self.url = url

    def client(self, **options) -> McpServer:
        options.setdefault("on_elicitation", lambda params: ACCEPT)
        server = McpServer(self.spec, kill_grace=1.0, **options)
        server.initialize(WAIT)
        assert server.status == "connected" and server.era == "modern", server.reason
        return server


@pytest.fixture(scope="module", params=["stdio", "http"])
def peer(request):
    """The peer: one HTTP server for the module's tests (each test a session of its own, its
    tasks its own), or a stdio process per client."""
    if request.param == "http":
        server = HttpPeer.fastmcp_tasks().start(timeout=60)
        yield Peer(server.spec("fm"), server.url)
        server.close()
    else:
        yield Peer(config_of({"fm": {"command": sys.executable,
                                     "args": [FASTMCP_TASKS_SERVER, "stdio"]}}).server("fm"),
                   None)


@pytest.fixture
def client(peer):
    server = peer.client()
    yield server
    server.stop()


def peer_says(client: McpServer, tool: str, task_id: str):
    """What the peer's ``polls`` or ``task_state`` tool says of ``task_id``."""
    return client.call_tool(tool, {"task_id": task_id}, timeout=WAIT)["structuredContent"][
        "result"]


def test_call_tool_blocks_through_a_task_to_the_result_an_ordinary_call_gives(client):
    direct = client.call_tool("slow_compute", {"seconds": 0.2, "label": "a"}, timeout=WAIT,
                              tasks=False)  # optional: without the extension, a plain call
    future = client.call_tool_f("slow_compute", {"seconds": 0.2, "label": "a"}, timeout=WAIT)
    tasked = future.result(WAIT)
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}", future.task_id), future.task_id
    assert (future.handle.ttl_ms, future.handle.poll_interval_ms) == (900_000, 200)
    assert "resultType" not in tasked, "the inlined result's resultType is the wire's"
    assert type(tasked) is type(direct)
    for key in ("content", "structuredContent", "isError"):
        assert tasked[key] == direct[key], key
    assert tasked["_meta"]["fastmcp"] == direct["_meta"]["fastmcp"] == {"wrap_result": True}
    assert tasked.text == "a: computed in 0.2 s"
    assert client.call_tool("slow_compute", {"seconds": 0.2, "label": "b"},
                            timeout=WAIT).text == "b: computed in 0.2 s"


def test_on_status_hears_changes_not_each_answers_new_timestamp(client):
    """fastmcp-tasks stamps each tasks/get answer with the time it answered: the task looks
    updated on every poll. on_status hears a change of status or message, not that."""
    seen: list[TaskStatus] = []
    future = client.call_tool_f("slow_compute", {"seconds": 1.0, "label": "c"}, timeout=WAIT,
                                on_status=seen.append)
    assert future.result(WAIT).text == "c: computed in 1 s"
    polls = peer_says(client, "polls", future.task_id)
    assert polls >= 3, "the task was polled while it worked"
    assert [s.status for s in seen] == ["working", "completed"], seen
    assert seen[0].task_id == seen[1].task_id == future.task_id


def test_a_new_timestamp_alone_is_not_progress(client):
    """With a deadline that progress restarts, a task that says nothing new times out idle,
    though every poll's answer carries a new lastUpdatedAt."""
    started = time.monotonic()
    with pytest.raises(ToolTimeout) as timed_out:
        client.call_tool("slow_compute", {"seconds": 20, "label": "d"}, timeout=2.0,
                         reset_on_progress=True, max_total=WAIT)
    assert time.monotonic() - started < 15, "a poll's answer was taken for progress"
    assert timed_out.value.kind == "idle"
    task_id = timed_out.value.handle.task_id
    deadline = time.monotonic() + WAIT
    while peer_says(client, "task_state", task_id) != "cancelled":
        assert time.monotonic() < deadline, "the timed-out task was not cancelled"
        time.sleep(0.05)


def test_a_tool_error_is_a_result_with_is_error_or_a_tool_error(client):
    result = client.call_tool("failing_job", {}, timeout=WAIT)
    assert result["isError"] is True and result.text == "the job could not be done"
    with pytest.raises(ToolError) as raised:
        client.call_tool("failing_job", {}, timeout=WAIT, raise_on_error=True)
    assert "the job could not be done" in str(raised.value)


@pytest.mark.parametrize("confirm, outcome", [(True, "deleted"), (False, "kept")])
def test_the_peers_question_is_answered_and_its_key_echoed(peer, confirm, outcome):
    asked: list[dict] = []

    def answer(params):
        asked.append(params)
        return {"action": "accept", "content": {"confirm": confirm}}
    server = peer.client(on_elicitation=answer)
    try:
        future = server.call_tool_f("confirm_delete", {"filename": "notes.txt"}, timeout=WAIT)
        assert future.result(WAIT).text == f"{outcome} notes.txt"
        [key] = future.handle.answered_keys
        assert re.fullmatch(re.escape(future.task_id) + r":[0-9a-f]{16}", key), key
        assert [p["message"] for p in asked] == ["Delete notes.txt?"]
    finally:
        server.stop()


def test_cancel_after_creation_reaches_the_peer(client):
    future = client.call_tool_f("slow_compute", {"seconds": WAIT, "label": "e"}, timeout=WAIT)
    task_id = created(future)
    assert future.cancel() is True and future.cancelled()
    deadline = time.monotonic() + WAIT
    while peer_says(client, "task_state", task_id) != "cancelled":
        assert time.monotonic() < deadline, "tasks/cancel never reached the peer"
        time.sleep(0.05)


def test_polls_keep_the_peers_interval(client):
    """The peer asks for a poll every 200 ms: over a task of 1.2 s about 6 polls. At the
    client's floor (100 ms) it would be about 12; at its default (1 s), 2."""
    future = client.call_tool_f("slow_compute", {"seconds": 1.2, "label": "f"}, timeout=WAIT)
    future.result(WAIT)
    assert 3 <= peer_says(client, "polls", future.task_id) <= 9


def test_tasks_false_on_a_tool_that_needs_them_is_refused_by_the_peer(client):
    with pytest.raises(McpError) as refused:
        client.call_tool("failing_job", {}, timeout=WAIT, tasks=False)
    assert refused.value.code == -32021
    assert "io.modelcontextprotocol/tasks" in refused.value.message
    assert "failing_job" in refused.value.message


def test_a_task_the_peer_does_not_know_has_expired(client):
    future = client.call_tool_f("slow_compute", {"seconds": 0.5, "label": "g"}, timeout=WAIT)
    created(future)
    handle = dataclasses.replace(future.detach(), task_id="x" * 43)
    with pytest.raises(TaskExpired) as expired:
        client.resume_task(handle, timeout=WAIT, task_timeout=WAIT)
    assert expired.value.handle.task_id == "x" * 43
    assert "no longer knows" in str(expired.value)


BEGIN = textwrap.dedent("""
    import os, sys, time
    from raider_sync import McpConfig, McpServer
    url, path = sys.argv[1], sys.argv[2]
    spec = McpConfig.from_dict({"mcpServers": {"fm": {"type": "http", "url": url}}}).server("fm")
    with McpServer(spec) as server:
        future = server.call_tool_f("slow_compute", {"seconds": 1.5, "label": "far"}, timeout=20)
        deadline = time.monotonic() + 20
        while future.task_id is None:
            assert not future.done() and time.monotonic() < deadline, "no task"
            time.sleep(0.01)
        handle = future.detach()
    open(path, "w").write(handle.to_json())
    print(os.getpid())
""")

def test_a_new_process_resumes_the_peers_task_over_http(tmp_path):
    served = HttpPeer.fastmcp_tasks().start(timeout=60)
    try:
        env = {**os.environ, "PYTHONPATH": ROOT, "HOME": str(tmp_path),
               "XDG_CACHE_HOME": str(tmp_path / "cache")}
        saved = tmp_path / "task.json"
        runs = []
        for script in (BEGIN, RESUME):
            done = subprocess.run([sys.executable, "-c", script, served.url, str(saved)],
                                  capture_output=True, text=True, timeout=60, env=env,
                                  cwd=tmp_path)
            assert done.returncode == 0, done.stderr[-2000:]
            runs.append(done.stdout.strip().splitlines()[-1])
        saved_handle = json.loads(saved.read_text())
        answer = json.loads(runs[1])
        assert answer["text"] == "far: computed in 1.5 s"
        assert int(runs[0]) != answer["pid"] != os.getpid()
        with McpServer(served.spec("fm")) as server:
            assert peer_says(server, "task_state", saved_handle["task_id"]) == "completed"
            assert peer_says(server, "polls", saved_handle["task_id"]) >= 1
    finally:
        served.close()
