"""A handshake-era tool call that becomes a 2025-11-25 task, followed by the TaskFuture to its
end, against server-everything's simulate-research-query over stdio and Streamable HTTP: the
report, the statuses and the polls' pace, the question asked on the tasks/result stream,
cancel, detach and resume, a resume from another HTTP session refused, and stop."""
from __future__ import annotations

import threading
import time
from concurrent.futures import CancelledError

import pytest

from raider_sync import McpServer, TaskDetached, TaskHandle, TaskNotResumable, TaskStatus
from raider_sync.client.tasks.wire_v1 import RELATED_TASK, WireV1
from raider_sync.threads.futures import Deadline

from conftest import poll

WAIT = 30.0
TOOL = "mcp__everything__simulate-research-query"
HISTORICAL = {"action": "accept", "content": {"interpretation": "historical"}}


def hearing() -> tuple[threading.Event, list[TaskStatus], object]:
    """``(created, seen, on_status)``: ``created`` is set once the call became a task."""
    created, seen = threading.Event(), []

    def on_status(status: TaskStatus) -> None:
        seen.append(status)
        created.set()
    return created, seen, on_status


def status_on_server(server: McpServer, task_id: str) -> str:
    """The task's status as one tasks/get of the test shows it."""
    return WireV1(server._task_send).get_f(task_id, Deadline(WAIT)).result(WAIT + 5).status


def test_call_tool_blocks_through_the_task_to_the_report(connect):
    server = connect()
    _, seen, on_status = hearing()
    result = server.call_tool(TOOL, {"topic": "tides"}, timeout=WAIT, on_status=on_status)
    assert result.text.startswith("# Research Report: tides")
    assert RELATED_TASK not in (result.get("_meta") or {})
    assert seen[0].status == "working" and seen[-1].status == "completed"  # it was a task


def test_call_tool_f_shows_the_task_changing_and_polls_at_the_servers_pace(connect,
                                                                          monkeypatch):
    server = connect()
    polls: list[float] = []
    send = server._task_send

    def counted(method: str, params: dict, deadline, **options):
        if method == "tasks/get":
            polls.append(time.monotonic())
        return send(method, params, deadline, **options)

    monkeypatch.setattr(server, "_task_send", counted)  # before the wire is chosen
    _, seen, on_status = hearing()
    future = server.call_tool_f(TOOL, {"topic": "glaciers"}, timeout=WAIT,
                                on_status=on_status)
    result = future.result(WAIT)

    assert result.text.startswith("# Research Report: glaciers")
    assert future.task_id and {s.task_id for s in seen} == {future.task_id}
    assert (future.status, future.handle.era, future.handle.tool) == ("completed", "v1", TOOL)
    assert seen[0].status == "working" and seen[-1].status == "completed"
    messages = [s.status_message for s in seen]
    for stage in ("Gathering sources...", "Analyzing content...", "Generating report..."):
        assert stage in messages, messages
    # pollInterval is 1000 ms: never two polls closer than that (the timer's slack aside).
    # How many there are is the server's doing: each notifications/tasks/status it sends is
    # a fresh status, and puts the next poll off by the interval again
    assert polls, "never polled"
    assert all(b - a >= 0.9 for a, b in zip(polls, polls[1:], strict=False)), polls


def test_an_ambiguous_topic_is_asked_on_the_result_stream_and_answered_by_on_elicitation(
        connect):
    asked: list[dict] = []

    def on_elicitation(params: dict) -> dict:
        asked.append(params)
        return HISTORICAL

    server = connect(on_elicitation=on_elicitation)
    _, seen, on_status = hearing()
    result = server.call_tool(TOOL, {"topic": "python", "ambiguous": True}, timeout=WAIT,
                              on_status=on_status)
    assert "# Research Report: python (historical)" in result.text
    assert len(asked) == 1
    assert asked[0]["_meta"][RELATED_TASK] == {"taskId": seen[0].task_id}
    assert "input_required" in [s.status for s in seen]


def test_cancel_after_creation_sends_tasks_cancel(connect):
    server = connect()
    created, _, on_status = hearing()
    future = server.call_tool_f(TOOL, {"topic": "dunes"}, timeout=WAIT, on_status=on_status)
    assert created.wait(WAIT)
    task_id = future.task_id
    assert future.cancel()
    with pytest.raises(CancelledError):
        future.result(WAIT)
    poll(lambda: status_on_server(server, task_id) == "cancelled", WAIT, "the task cancelled")


def test_detach_then_resume_in_the_same_server(connect, transport):
    server = connect()
    created, _, on_status = hearing()
    future = server.call_tool_f(TOOL, {"topic": "comets"}, timeout=WAIT, on_status=on_status)
    assert created.wait(WAIT)
    handle = future.detach()
    with pytest.raises(TaskDetached) as detached:
        future.result(WAIT)
    assert detached.value.handle == handle and handle.era == "v1"
    if transport[0] == "http":  # the task lives in this session: the handle says which
        assert handle.session and server._transport.session_id not in handle.to_json()
    else:
        assert handle.session is None and handle.instance == server.pid
    result = server.resume_task(TaskHandle.from_json(handle.to_json()), task_timeout=WAIT)
    assert result.text.startswith("# Research Report: comets")


def test_a_v1_task_is_not_resumed_from_another_http_session(http_peer):
    owner, stranger = (McpServer(http_peer.spec("everything"), protocol="legacy")
                       for _ in range(2))
    try:
        for server in (owner, stranger):
            server.initialize(WAIT)
        poll(lambda: TOOL in owner.tool_names, WAIT, "simulate-research-query listed")
        created, _, on_status = hearing()
        future = owner.call_tool_f(TOOL, {"topic": "reefs"}, timeout=WAIT,
                                   on_status=on_status)
        assert created.wait(WAIT)
        handle = future.detach()
        with pytest.raises(TaskNotResumable, match="HTTP session") as refused:
            stranger.resume_task(handle, timeout=WAIT)
        assert refused.value.handle == handle and handle.task_id in str(refused.value)
        assert status_on_server(owner, handle.task_id) == "working"  # still the owner's
        assert owner.resume_task_f(handle).cancel()
    finally:
        owner.stop()
        stranger.stop()


def test_stop_detaches_a_running_task(connect):
    server = connect()
    created, _, on_status = hearing()
    future = server.call_tool_f(TOOL, {"topic": "caves"}, timeout=WAIT, on_status=on_status)
    assert created.wait(WAIT)
    server.stop()
    with pytest.raises(TaskDetached, match="stopped") as detached:
        future.result(WAIT)
    assert detached.value.handle.task_id == future.task_id


def test_stop_while_tasks_result_is_open_detaches_and_lets_go_of_it(connect):
    """After the answer the task works on, its tasks/result still open: stop ends it."""
    server = connect(on_elicitation=lambda params: HISTORICAL)
    resumed = threading.Event()

    def on_status(status: TaskStatus) -> None:
        if (status.status_message or "").startswith("Continuing with interpretation"):
            resumed.set()
    future = server.call_tool_f(TOOL, {"topic": "jazz", "ambiguous": True}, timeout=WAIT,
                                on_status=on_status)
    assert resumed.wait(WAIT)
    server.stop()
    with pytest.raises(TaskDetached, match="stopped"):
        future.result(WAIT)
