"""A tool call that becomes a task (the stateless era's tasks extension), followed by the
client to its end against a real ToolServer over HTTP: results, errors, cancel, input,
polling, timeouts, expiry, detach and resume, and stop."""
from __future__ import annotations

import threading
import time
from concurrent.futures import CancelledError

import pytest

from raider_sync import (
    TaskDetached,
    TaskExpired,
    TaskFailed,
    TaskFuture,
    TaskHandle,
    TaskNotResumable,
    TaskStatus,
    ToolTimeout,
)

from client.tasks.support import created

WAIT = 30.0


def test_an_ordinary_tool_answers_as_ever_with_a_task_future(client):
    future = client.call_tool_f("greet", {"name": "Ada"}, timeout=WAIT)
    assert isinstance(future, TaskFuture)
    assert future.result(WAIT)["content"][0]["text"] == "Hello, Ada!"
    assert future.task_id is None and future.handle is None and future.status is None


def test_a_completed_task_gives_what_call_tool_gives(client, served):
    direct = client.call_tool("slow_compute", {"seconds": 0.2, "label": "a"}, timeout=WAIT,
                              tasks=False)
    assert served.count("tasks/get") == 0  # tasks=False: the call did not become a task
    future = client.call_tool_f("slow_compute", {"seconds": 0.2, "label": "a"}, timeout=WAIT)
    result = future.result(WAIT)
    assert future.task_id is not None and future.status == "completed"
    assert served.count("tasks/get") >= 1
    assert dict(result) == dict(direct) == {
        "content": [{"type": "text", "text": "a: computed in 0.2 s"}]}
    assert type(result) is type(direct)
    assert future.handle.tool == "slow_compute" and future.handle.era == "v2"


def test_on_status_hears_each_change(client):
    seen: list[TaskStatus] = []
    client.call_tool("slow_compute", {"seconds": 0.3, "label": "b"}, timeout=WAIT,
                     on_status=seen.append)
    assert [s.status for s in seen][0] == "working" and seen[-1].status == "completed"
    assert seen[0].status_message is None or "computing" in seen[0].status_message
    assert any(s.status_message == "computing b" for s in seen)
    assert len({s.task_id for s in seen}) == 1
    pairs = [(s.status, s.status_message, s.last_updated_at) for s in seen]
    assert len(pairs) == len(set(pairs)), "only changes are told"


def test_a_tool_error_is_a_completed_task_with_is_error(client):
    result = client.call_tool("failing_job", {}, timeout=WAIT)
    assert result["isError"] is True
    assert "could not be done" in result["content"][0]["text"]


def test_a_failed_task_raises_task_failed_with_its_code(client):
    future = client.call_tool_f("protocol_error_job", {}, timeout=WAIT)
    with pytest.raises(TaskFailed) as failed:
        future.result(WAIT)
    assert failed.value.code == -32603
    assert failed.value.message == "the job's backend is unreachable"
    assert failed.value.handle.task_id == future.task_id


def test_cancel_after_creation_reaches_the_server(client, served):
    future = client.call_tool_f("watched", {"seconds": 60}, timeout=WAIT)
    created(future)
    assert future.cancel() is True
    assert future.cancelled()
    with pytest.raises(CancelledError):
        future.result(0)
    assert served.outcomes.get(timeout=WAIT) == "cancelled"
    assert served.tools.served_tasks.store.get(future.task_id).status == "cancelled"


def test_input_required_is_answered_by_on_elicitation(served):
    asked: list[dict] = []

    def answer(params):
        asked.append(params)
        return {"action": "accept", "content": {"confirm": True}}
    server = served.client(on_elicitation=answer)
    try:
        result = server.call_tool("confirm_delete", {"filename": "a.txt"}, timeout=WAIT)
        assert result["content"][0]["text"] == "deleted a.txt"
        assert len(asked) == 1 and "a.txt" in asked[0]["message"]
    finally:
        server.stop()


def test_two_questions_at_once_each_answered_once(served):
    asked: list[str] = []

    def answer(params):
        asked.append(params["message"])
        return {"action": "accept", "content": {"confirm": True, "name": "Ada"}}
    server = served.client(on_elicitation=answer)
    try:
        seen: list[TaskStatus] = []
        future = server.call_tool_f("multi_input", {}, timeout=WAIT, on_status=seen.append)
        assert future.result(WAIT)["content"][0]["text"] == "Ada said yes"
        assert sorted(asked) == ["Go on?", "Your name?"], "every key answered, none twice"
        assert set(future.handle.answered_keys) == {"name", "confirm"}
        assert any(s.status == "input_required" for s in seen)
    finally:
        server.stop()


def test_a_round_then_a_task(client):
    result = client.call_tool("test_tool_with_task", {}, timeout=WAIT)
    assert result["content"][0]["text"] == "Hello, Ada, from a task!"


def test_polls_keep_the_servers_interval(served):
    """The server asks for a poll every 0.5 s; over a task of 1.5 s a client that honours it
    polls about 3 times. One that polled at its floor (0.1 s) would poll about 15 times."""
    slow = type(served)(task_poll_interval=0.5)
    try:
        server = slow.client()
        try:
            started = time.monotonic()
            server.call_tool("slow_compute", {"seconds": 1.5}, timeout=WAIT)
            took = time.monotonic() - started
        finally:
            server.stop()
        polls = slow.count("tasks/get")
        assert 1 <= polls <= took / 0.5 + 2, (polls, took)
    finally:
        slow.close()


def test_task_timeout_cancels_the_task_and_raises_with_its_handle(client, served):
    future = client.call_tool_f("watched", {"seconds": 60}, timeout=WAIT, task_timeout=0.3)
    with pytest.raises(ToolTimeout) as timed_out:
        future.result(WAIT)
    handle = timed_out.value.handle
    assert isinstance(handle, TaskHandle) and handle.task_id == future.task_id
    assert served.outcomes.get(timeout=WAIT) == "cancelled"


def test_a_task_past_its_time_to_live_expires(served):
    short = type(served)(task_ttl=0.4, task_poll_interval=0.1)
    try:
        server = short.client()
        try:
            future = server.call_tool_f("watched", {"seconds": 60}, timeout=WAIT)
            with pytest.raises(TaskExpired) as expired:
                future.result(WAIT)
            assert expired.value.handle.task_id == future.task_id
            assert expired.value.handle.ttl_ms == 400
        finally:
            server.stop()
    finally:
        short.close()


def test_detach_then_resume_in_the_same_process(client, served):
    future = client.call_tool_f("slow_compute", {"seconds": 1.0, "label": "r"}, timeout=WAIT)
    created(future)
    handle = future.detach()
    assert isinstance(handle, TaskHandle)
    with pytest.raises(TaskDetached) as detached:
        future.result(WAIT)
    assert detached.value.handle == handle
    again = TaskHandle.from_json(handle.to_json())
    assert again == handle
    result = client.resume_task(again, task_timeout=WAIT)
    assert result["content"][0]["text"] == "r: computed in 1 s"


def test_stop_detaches_pending_tasks_and_leaves_no_thread(served):
    server = served.client()
    future = server.call_tool_f("watched", {"seconds": 60}, timeout=WAIT)
    created(future)
    server.stop()
    with pytest.raises(TaskDetached) as detached:
        future.result(WAIT)
    assert detached.value.handle.task_id == future.task_id
    assert "stopped" in str(detached.value)
    # the task runs on, on the server: a new client resumes it and cancels it
    other = served.client()
    try:
        resumed = other.resume_task_f(detached.value.handle)
        deadline = time.monotonic() + WAIT
        while resumed.status is None:
            assert time.monotonic() < deadline and not resumed.done()
            time.sleep(0.01)
        assert resumed.status == "working"
        assert resumed.cancel()
        assert served.outcomes.get(timeout=WAIT) == "cancelled"
    finally:
        other.stop()
    assert not [t for t in threading.enumerate() if t.name.startswith("raider-jobs")]


def test_a_handle_of_another_server_is_not_resumable(client, served):
    future = client.call_tool_f("slow_compute", {"seconds": 0.5}, timeout=WAIT)
    created(future)
    handle = future.detach()
    from dataclasses import replace
    with pytest.raises(TaskNotResumable, match="http://elsewhere") as refused:
        client.resume_task(replace(handle, fingerprint="http://elsewhere/mcp"))
    assert served.url in str(refused.value)
