"""What the 2025-11-25 wire decides without a server: which calls become tasks (and which
servers' calls may), what a CreateTaskResult and a status notification turn into, and the
TaskStatus record itself. ``send`` is a stand-in that sends nothing; sending is tested
against server-everything in test_wire_v1.py."""
from __future__ import annotations

from concurrent.futures import CancelledError, Future

import pytest

from raider_sync import (
    ConfigError,
    McpError,
    TaskFailed,
    TaskFuture,
    TaskHandle,
    TaskNotResumable,
)
from raider_sync.client.tasks import FollowOptions, TaskTracker
from raider_sync.client.tasks.choice import wire_for, wire_named
from raider_sync.client.tasks.records import TaskStatus
from raider_sync.client.tasks.wire_v1 import (
    IMMEDIATE_RESPONSE,
    RELATED_TASK,
    WireV1,
    status_notification,
    without_related_task,
)
from raider_sync.client.tasks.wire_v2 import WireV2
from raider_sync.protocol.codes import INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND
from raider_sync.threads.futures import Deadline, failed, rescue, resolved

OFFERS_TASKS = {"tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}}
TASK = {"taskId": "t-1", "status": "working", "statusMessage": "Gathering sources...",
        "createdAt": "2025-11-25T10:30:00Z", "lastUpdatedAt": "2025-11-25T10:40:00Z",
        "ttl": 60000, "pollInterval": 5000}
CALL = {"name": "research", "arguments": {"topic": "tides"}}


def send(method: str, params: dict, deadline, **options) -> Future:
    raise AssertionError(f"{method} sent: this wire was to decide without a server")


def tool(support: str | None) -> dict:
    return {"name": "research"} if support is None else {
        "name": "research", "execution": {"taskSupport": support}}


@pytest.mark.parametrize("tasks, support, asked", [
    ("auto", "required", True), ("auto", "optional", False), ("auto", "forbidden", False),
    ("auto", None, False), (True, "required", True), (True, "optional", True),
    (True, "forbidden", False), (False, "required", False), (False, "optional", False),
])
def test_declare_asks_a_task_as_the_tool_and_the_option_say(tasks, support, asked):
    assert WireV1.needs_tool  # the call's tool listing is handed to declare
    params = WireV1(send).declare(CALL, tool(support), tasks)
    assert ("task" in params) is asked
    if asked:
        assert params == {**CALL, "task": {"ttl": 3_600_000}}
    assert "task" not in CALL  # the caller's params are never changed in place


def test_no_wire_asks_a_task_of_a_handshake_server_that_offers_none():
    for capabilities in ({}, {"tasks": {"list": {}}}, {"tasks": {"requests": {"sampling": {}}}}):
        assert wire_for("legacy", capabilities, send) is None
    assert isinstance(wire_for("legacy", OFFERS_TASKS, send), WireV1)
    assert isinstance(wire_for("modern", {}, send), WireV2)  # the stateless era's own wire


def test_declare_leaves_the_retention_to_the_server_when_asked_to():
    wire = WireV1(send, ttl_ms=None)
    assert wire.declare(CALL, tool("required"))["task"] == {}
    assert WireV1(send, ttl_ms=5000).declare(CALL, tool("required"))["task"] == {"ttl": 5000}
    assert wire.declare(CALL, None) is CALL


@pytest.mark.parametrize("options, field", [
    ({"ttl_ms": 0}, "ttl_ms"), ({"ttl_ms": True}, "ttl_ms"), ({"ttl_ms": 1.5}, "ttl_ms"),
])
def test_bad_options_are_refused_by_name(options, field):
    with pytest.raises(ConfigError, match=f"^{field}:"):
        WireV1(send, **options)


def test_the_wire_belongs_to_the_handshake_era():
    handle = TaskHandle("everything", "http://h/mcp", "http", "v1", "2025-11-25", "t-1")
    assert isinstance(wire_named("v1", "legacy", send, handle), WireV1)
    with pytest.raises(TaskNotResumable, match="v1 task.*modern era"):
        wire_named("v1", "modern", send, handle)


def test_a_task_id_must_be_a_string():
    with pytest.raises(ConfigError, match="^task_id:"):
        WireV1(send).get_f("", Deadline(1)).result(1)


def test_there_is_no_tasks_update_on_this_wire():
    with pytest.raises(McpError) as caught:
        WireV1(send).update_f("t-1", {}, Deadline(1)).result(1)
    assert caught.value.code == METHOD_NOT_FOUND and "tasks/result" in caught.value.message


def test_created_reads_the_task_and_keeps_the_immediate_response():
    result = {"task": dict(TASK), "_meta": {IMMEDIATE_RESPONSE: "Research started."}}
    status = WireV1(send).created(result)
    assert (status.task_id, status.status, status.status_message) == (
        "t-1", "working", "Gathering sources...")
    assert (status.ttl_ms, status.poll_interval_ms) == (60000, 5000)
    assert status.raw["_meta"][IMMEDIATE_RESPONSE] == "Research started."
    assert "_meta" not in result["task"]


def test_created_is_none_for_an_ordinary_result_and_refuses_a_broken_task():
    wire = WireV1(send)
    assert wire.created({"content": [{"type": "text", "text": "hi"}]}) is None
    for task in ({"status": "working"}, {"taskId": 7, "status": "working"}, "t-1",
                 {"taskId": "t-1"}):
        with pytest.raises(McpError) as caught:
            wire.created({"task": task})
        assert caught.value.code == INTERNAL_ERROR


def test_a_v1_record_reads_the_wire_names_and_knows_the_terminal_statuses():
    status = TaskStatus.from_v1({**TASK, "ttl": None, "pollInterval": "soon"})
    assert (status.ttl_ms, status.poll_interval_ms) == (None, None)  # null ttl: unlimited
    assert (status.input_requests, status.result, status.error) == (None, None, None)
    assert not status.terminal
    assert [TaskStatus.from_v1({**TASK, "status": s}).terminal for s in (
        "input_required", "completed", "failed", "cancelled")] == [False, True, True, True]


def test_a_v2_record_reads_the_extension_names_and_strips_the_inlined_result_type():
    status = TaskStatus.from_v2({"resultType": "complete", "taskId": "t-2", "status": "completed",
                                 "createdAt": "c", "lastUpdatedAt": "u", "ttlMs": 900000,
                                 "pollIntervalMs": 5000,
                                 "result": {"resultType": "complete", "content": []}})
    assert (status.ttl_ms, status.poll_interval_ms, status.result) == (900000, 5000,
                                                                        {"content": []})
    asking = TaskStatus.from_v2({"taskId": "t-2", "status": "input_required",
                                 "inputRequests": {"k": {"method": "elicitation/create"}}})
    assert asking.input_requests == {"k": {"method": "elicitation/create"}}
    failing = TaskStatus.from_v2({"taskId": "t-2", "status": "failed",
                                  "error": {"code": -32603, "message": "boom"}})
    assert failing.error == {"code": -32603, "message": "boom"} and failing.terminal


def test_the_result_loses_only_its_related_task_meta():
    assert without_related_task({"content": [], "_meta": {RELATED_TASK: {"taskId": "t"}}}
                                ) == {"content": []}
    kept = without_related_task({"content": [], "_meta": {RELATED_TASK: {}, "trace": "x"}})
    assert kept == {"content": [], "_meta": {"trace": "x"}}
    assert without_related_task({"isError": True}) == {"isError": True}


def test_a_status_notification_becomes_a_task_status():
    status = status_notification("notifications/tasks/status", {**TASK, "status": "completed"})
    assert (status.task_id, status.status, status.terminal) == ("t-1", "completed", True)
    assert status_notification("notifications/progress", TASK) is None
    assert status_notification("notifications/tasks/status", {"status": "working"}) is None


def test_rescue_follows_the_recovery_only_when_the_first_future_fails():
    assert rescue(resolved(1), lambda error: resolved(2)).result(1) == 1
    assert rescue(failed(KeyError("k")), lambda error: resolved(2)).result(1) == 2

    def refuse(error: BaseException) -> Future:
        raise error

    with pytest.raises(KeyError):
        rescue(failed(KeyError("k")), refuse).result(1)


def test_cancelling_a_rescued_future_cancels_the_recovery_under_way():
    first, second = Future(), Future()
    outer = rescue(first, lambda error: second)
    first.set_exception(KeyError("k"))
    assert outer.cancel() and second.cancelled()
    with pytest.raises(CancelledError):
        outer.result(1)


# -- the outcome: tasks/result, since a v1 tasks/get carries no result -------------------------

def scripted(**answers):
    """A ``send`` answering each method with its entry of ``answers`` (an exception fails
    the request), through the wire's transform; the methods sent, in order."""
    sent: list[str] = []

    def send(method: str, params: dict, deadline, *, transform=None, **options) -> Future:
        sent.append(method)
        answer = answers[method.replace("/", "_")]
        if isinstance(answer, BaseException):
            return failed(answer)
        return resolved(transform(answer) if transform is not None else answer)
    return send, sent


ENDED = TaskStatus.from_v1({**TASK, "status": "failed", "statusMessage": "Tool failed",
                            "ttl": None})  # kept as long as the server likes: no expiry
TOOL_ERROR = {"content": [{"type": "text", "text": "no such topic"}], "isError": True,
              "_meta": {RELATED_TASK: {"taskId": "t-1"}}}


def test_a_failed_task_with_an_is_error_result_ends_with_that_result():
    send, sent = scripted(tasks_result=TOOL_ERROR)
    outcome = WireV1(send).outcome_f(ENDED, Deadline(5)).result(5)
    assert (outcome.status, outcome.error) == ("failed", None)
    assert outcome.result == {"content": TOOL_ERROR["content"], "isError": True}
    assert sent == ["tasks/result"]


def test_a_failed_task_with_a_json_rpc_error_ends_with_that_error():
    send, sent = scripted(tasks_result=McpError(-32000, "quota", {"left": 0}),
                          tasks_get={**TASK, "status": "failed"})
    outcome = WireV1(send).outcome_f(ENDED, Deadline(5)).result(5)
    assert (outcome.status, outcome.result) == ("failed", None)
    assert outcome.error == {"code": -32000, "message": "quota", "data": {"left": 0}}
    assert sent == ["tasks/result", "tasks/get"]


def test_a_task_cancelled_meanwhile_is_cancelled_and_a_gone_one_fails_with_the_error():
    send, _ = scripted(tasks_result=McpError(INTERNAL_ERROR, "no result stored"),
                       tasks_get={**TASK, "status": "cancelled"})
    working = TaskStatus.from_v1({**TASK, "status": "input_required"})
    assert WireV1(send).outcome_f(working, Deadline(5)).result(5).status == "cancelled"
    send, _ = scripted(tasks_result=McpError(INVALID_PARAMS, "Task not found"),
                       tasks_get=McpError(INVALID_PARAMS, "Task not found"))
    with pytest.raises(McpError, match="Task not found") as caught:
        WireV1(send).outcome_f(ENDED, Deadline(5)).result(5)
    assert caught.value.code == INVALID_PARAMS  # the follower's TaskExpired
    send, sent = scripted()  # a cancelled task has no result to ask for
    cancelled = TaskStatus.from_v1({**TASK, "status": "cancelled"})
    assert WireV1(send).outcome_f(cancelled, Deadline(5)).result(5) is cancelled and not sent


def test_an_outcome_asked_early_forgets_the_message_of_then():
    send, _ = scripted(tasks_result={"content": []})
    asking = TaskStatus.from_v1({**TASK, "status": "input_required",
                                 "statusMessage": "Requesting clarification..."})
    outcome = WireV1(send).outcome_f(asking, Deadline(5)).result(5)
    assert (outcome.status, outcome.status_message, outcome.result) == ("completed", None,
                                                                        {"content": []})


def follow_ended(send, shape) -> TaskFuture:
    """A TaskTracker following ENDED on the 2025-11-25 wire over ``send``: its future."""
    tracker = TaskTracker(send=send, answer=None, pool=None, request_timeout=lambda: 5.0,
                          name="t", identity=lambda: {
                              "server": "s", "fingerprint": "f", "transport": "http",
                              "instance": None, "session": None, "protocol_version": None})
    future = TaskFuture()
    tracker.follow(future, WireV1(send), ENDED, FollowOptions(tool="research", shape=shape,
                                                              on_status=None, bound=5.0))
    return future


def test_a_tool_error_that_failed_its_task_is_the_calls_result_as_in_v2():
    send, _ = scripted(tasks_result=TOOL_ERROR)
    assert follow_ended(send, dict).result(5)["isError"] is True
    send, _ = scripted(tasks_result=McpError(-32000, "quota"), tasks_get=ENDED.raw)
    with pytest.raises(TaskFailed, match="quota") as caught:
        follow_ended(send, dict).result(5)
    assert caught.value.code == -32000 and caught.value.handle.era == "v1"
