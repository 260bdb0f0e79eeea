"""The pure parts of the tasks client: TaskStatus from each wire, TaskHandle's saved form and
its refusals, the poll delay's bounds, the ``tasks`` choice in a call and in .mcp.json."""
from __future__ import annotations

import json

import pytest

from raider_sync import (
    ConfigError,
    InvalidArgument,
    McpConfig,
    McpError,
    McpServer,
    TaskError,
    TaskHandle,
    TaskStatus,
)
from raider_sync.client.tasks import POLL_CAP, POLL_DEFAULT, POLL_FLOOR, poll_delay

TASK = {"resultType": "task", "taskId": "t1", "status": "working", "statusMessage": "go",
        "createdAt": "2026-01-01T00:00:00.000Z", "lastUpdatedAt": "2026-01-01T00:00:01.000Z",
        "ttlMs": 60000, "pollIntervalMs": 250}


def test_a_v2_task_is_read_flat_and_its_result_loses_result_type():
    status = TaskStatus.from_v2({**TASK, "status": "completed",
                                 "result": {"resultType": "complete", "content": []}})
    assert (status.task_id, status.status, status.ttl_ms, status.poll_interval_ms) == (
        "t1", "completed", 60000, 250)
    assert status.terminal and status.result == {"content": []}
    assert status.expires_at() == pytest.approx(1767225600.0 + 60.0)


def test_a_change_is_a_new_status_message_or_question_not_a_new_timestamp():
    first = TaskStatus.from_v2(TASK)
    assert first.changed_from(None)
    assert not TaskStatus.from_v2({**TASK, "lastUpdatedAt": "2026-01-01T00:00:02Z"}
                                  ).changed_from(first)
    assert TaskStatus.from_v2({**TASK, "statusMessage": "on"}).changed_from(first)
    assert TaskStatus.from_v2({**TASK, "status": "completed"}).changed_from(first)
    asking = TaskStatus.from_v2({**TASK, "status": "input_required",
                                 "inputRequests": {"a": {"method": "elicitation/create"}}})
    assert asking.changed_from(first)
    assert TaskStatus.from_v2({**asking.raw, "inputRequests": {
        "b": {"method": "elicitation/create"}}}).changed_from(asking)
    assert not TaskStatus.from_v2(dict(asking.raw)).changed_from(asking)


def test_a_v1_task_reads_ttl_and_poll_interval():
    status = TaskStatus.from_v1({"taskId": "t", "status": "input_required", "ttl": 5,
                                 "pollInterval": 7})
    assert (status.ttl_ms, status.poll_interval_ms, status.terminal) == (5, 7, False)


@pytest.mark.parametrize("bad, field", [({"status": "working"}, "taskId"),
                                        ({"taskId": "t", "status": "done"}, "status"),
                                        ([], "not an object")])
def test_what_is_not_a_task_is_refused_naming_the_field(bad, field):
    with pytest.raises(McpError, match=field):
        TaskStatus.from_v2(bad)


def test_a_handle_round_trips_and_holds_no_secrets():
    handle = TaskHandle(server="jobs", fingerprint="https://x/mcp", transport="http", era="v2",
                        protocol_version="2026-07-28", task_id="t1", tool="build",
                        answered_keys=("a",))
    saved = json.loads(handle.to_json())
    assert saved["raider_sync_task"] == 1 and saved["answered_keys"] == ["a"]
    assert TaskHandle.from_json(handle.to_json()) == handle
    assert handle.answered(["a", "b"]).answered_keys == ("a", "b")


@pytest.mark.parametrize("change, field", [
    ({"raider_sync_task": 2}, "raider_sync_task"), ({"task_id": ""}, "task_id"),
    ({"ttl_ms": "soon"}, "ttl_ms"), ({"answered_keys": "a"}, "answered_keys"),
    ({"session": 7}, "session"), ({"session": ""}, "session")])
def test_a_handle_that_cannot_be_read_names_the_field(change, field):
    saved = {**json.loads(TaskHandle(server="s", fingerprint="f", transport="http", era="v2",
                                     protocol_version=None, task_id="t").to_json()), **change}
    with pytest.raises(ValueError, match=field):
        TaskHandle.from_json(json.dumps(saved))
    with pytest.raises(ValueError, match="JSON"):
        TaskHandle.from_json("{not json")


def test_polls_are_spaced_as_the_server_asks_within_bounds():
    assert poll_delay(None) == POLL_DEFAULT
    assert poll_delay(250) == 0.25
    assert poll_delay(1) == POLL_FLOOR and poll_delay(10 ** 9) == POLL_CAP


def test_task_errors_are_mcp_errors_carrying_the_handle():
    error = TaskError(-32603, "no", handle="h")
    assert isinstance(error, McpError) and error.handle == "h" and error.code == -32603


def test_the_tasks_choice_of_mcp_json_and_of_a_call():
    spec = McpConfig.from_dict({"mcpServers": {"a": {"url": "http://x/mcp",
                                                     "tasks": False}}}).server("a")
    assert McpServer(spec).tasks is False
    with pytest.raises(ConfigError, match="tasks"):
        McpConfig.from_dict({"mcpServers": {"a": {"url": "http://x/mcp", "tasks": "yes"}}})
    server = McpServer(McpConfig.from_dict({"mcpServers": {"a": {"url": "http://x/mcp"}}}
                                           ).server("a"))
    assert server.tasks == "auto"
    future = server.call_tool_f("t", {}, tasks="sometimes")
    with pytest.raises(InvalidArgument, match="tasks of McpServer.call_tool_f"):
        future.result(0)
    with pytest.raises(InvalidArgument, match="task_timeout"):
        server.call_tool("t", {}, task_timeout=-1)
    server.stop()
