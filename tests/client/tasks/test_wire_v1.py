"""The 2025-11-25 tasks wire against server-everything's simulate-research-query (a
``required`` task tool: four stages of about a second, ttl 300000, pollInterval 1000; an
elicitation on the tasks/result stream when ``ambiguous``), over stdio and Streamable HTTP.

The wire is used directly, on the connected McpServer's request path (the one its task
followers use): the call that creates the task goes through ``McpServer.request``.
"""
from __future__ import annotations

import logging
import threading
import time

import pytest

from raider_sync import McpError, McpServer
from raider_sync.client.tasks.records import TaskStatus
from raider_sync.client.tasks.wire_v1 import RELATED_TASK, WireV1, status_notification
from raider_sync.protocol.codes import INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND
from raider_sync.threads.futures import Deadline

from conftest import poll

WAIT = 30.0
TOOL = "mcp__everything__simulate-research-query"


def start_research(server: McpServer, topic: str, ambiguous: bool = False
                   ) -> tuple[WireV1, TaskStatus]:
    """The wire around ``server``'s era, and the task it created for ``topic``."""
    wire = WireV1(server._task_send)
    tool = next(t for t in server.list_tools(WAIT) if t["name"] == TOOL)
    params = wire.declare({"name": "simulate-research-query",
                           "arguments": {"topic": topic, "ambiguous": ambiguous}}, tool)
    assert params["task"] == {"ttl": 3_600_000}
    created = wire.created(server.request("tools/call", params, timeout=WAIT))
    assert created is not None and created.status == "working"
    return wire, created


def get(wire: WireV1, task_id: str) -> TaskStatus:
    return wire.get_f(task_id, Deadline(WAIT)).result(WAIT + 5)


def poll_until(wire: WireV1, created: TaskStatus, wanted, bound: float = WAIT) -> list[TaskStatus]:
    """tasks/get at the task's pollInterval until ``wanted(status)`` (bounded); every
    status seen."""
    end = time.monotonic() + bound
    seen = [created]
    while not wanted(seen[-1]):
        if time.monotonic() > end:
            raise AssertionError(f"task {created.task_id} stayed {seen[-1].status} for {bound} s")
        time.sleep((seen[-1].poll_interval_ms or 1000) / 1000)  # polling at the server's pace
        seen.append(get(wire, created.task_id))
    return seen


def test_a_research_task_is_created_polled_to_completed_and_gives_its_report(connect, caplog,
                                                                               monkeypatch):
    server = connect()
    tapped: list[TaskStatus] = []
    offer = server._host.offer  # where every notification of the server passes

    def tap(method: str, params: dict) -> None:  # what the core will feed its future with
        status = status_notification(method, params)
        if status is not None:
            tapped.append(status)
        offer(method, params)

    monkeypatch.setattr(server._host, "offer", tap)
    with caplog.at_level(logging.DEBUG, logger="raider_sync"):
        wire, created = start_research(server, "tides")
        # the server keeps its own retention and pace, whatever was asked
        assert (created.ttl_ms, created.poll_interval_ms) == (300_000, 1000)
        assert created.created_at and created.last_updated_at
        seen = poll_until(wire, created, lambda status: status.terminal)
        result = wire.result_f(created.task_id, Deadline(WAIT)).result(WAIT + 5)

    assert seen[-1].status == "completed" and seen[-1].task_id == created.task_id
    assert {status.status for status in seen[:-1]} == {"working"}
    assert result["content"][0]["text"].startswith("# Research Report: tides")
    assert "_meta" not in result  # its only key, related-task, is stripped
    # server-everything announces every change unasked, without related-task _meta
    poll(lambda: tapped and tapped[-1].status == "completed", WAIT, "the completed notification")
    assert {status.task_id for status in tapped} == {created.task_id}
    assert [s.status_message for s in tapped[:4]] == [
        "Gathering sources...", "Analyzing content...", "Synthesizing findings...",
        "Generating report..."]
    assert not any(RELATED_TASK in status.raw.get("_meta", {}) for status in tapped)
    # ... and the client takes them in without a word above debug
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    # cancelling the ended task is no error: the server refuses, the status is got again
    again = wire.cancel_f(created.task_id, Deadline(WAIT)).result(WAIT + 5)
    assert (again.task_id, again.status) == (created.task_id, "completed")


def test_an_ambiguous_research_asks_on_the_result_stream_and_uses_the_answer(connect):
    asked: list[dict] = []
    result_open: list[bool] = []
    pending = {}

    def on_elicitation(params: dict) -> dict:
        asked.append(params)
        result_open.append(not pending["result"].done())
        return {"action": "accept", "content": {"interpretation": "historical"}}

    server = connect(on_elicitation=on_elicitation)
    wire, created = start_research(server, "python", ambiguous=True)
    # the server asks nothing until tasks/result is open: the task waits in input_required
    seen = poll_until(wire, created, lambda status: status.status == "input_required")
    assert "Requesting clarification" in seen[-1].status_message
    assert not asked
    pending["result"] = wire.result_f(created.task_id, Deadline(WAIT))
    result = pending["result"].result(WAIT + 5)

    assert len(asked) == 1 and result_open == [True]
    assert asked[0]["_meta"][RELATED_TASK] == {"taskId": created.task_id}
    options = asked[0]["requestedSchema"]["properties"]["interpretation"]["oneOf"]
    assert {"const": "snake", "title": "Python snake species"} in options
    assert "# Research Report: python (historical)" in result["content"][0]["text"]
    assert get(wire, created.task_id).status == "completed"


def test_cancelling_a_working_task_and_cancelling_it_again(connect):
    server = connect()
    wire, created = start_research(server, "glaciers")

    cancelled = wire.cancel_f(created.task_id, Deadline(WAIT)).result(WAIT + 5)
    assert (cancelled.task_id, cancelled.status) == (created.task_id, "cancelled")
    assert cancelled.terminal
    again = wire.cancel_f(created.task_id, Deadline(WAIT)).result(WAIT + 5)
    assert again.status == "cancelled"
    assert get(wire, created.task_id).status == "cancelled"
    # server-everything keeps no result for a cancelled task: tasks/result is its -32603
    with pytest.raises(McpError) as caught:
        wire.result_f(created.task_id, Deadline(WAIT)).result(WAIT + 5)
    assert caught.value.code == INTERNAL_ERROR and "no result stored" in caught.value.message


def test_a_task_id_the_server_never_made_is_invalid_params_everywhere(connect):
    server = connect()
    wire = WireV1(server._task_send)
    for send in (wire.get_f, wire.result_f, wire.cancel_f):
        with pytest.raises(McpError) as caught:
            send("no-such-task", Deadline(WAIT)).result(WAIT + 5)
        assert caught.value.code == INVALID_PARAMS, send.__name__
        assert "not found" in caught.value.message.lower(), caught.value.message
    # a cancel that met an unknown task fails with its own refusal, not the get's after it
    assert "no-such-task" in caught.value.message
    with pytest.raises(McpError) as caught:
        wire.update_f("no-such-task", {}, Deadline(WAIT)).result(WAIT)
    assert caught.value.code == METHOD_NOT_FOUND and "tasks/result" in caught.value.message


def test_a_task_belongs_to_its_http_session(http_peer):
    """server-everything keeps one task store per Mcp-Session-Id: another session (another
    client of the same URL) does not find the task."""
    servers = [McpServer(http_peer.spec("everything"), protocol="legacy") for _ in range(2)]
    try:
        for server in servers:
            server.start_f().result(WAIT)
            assert server.status == "connected", server.reason
        owner, stranger = servers
        poll(lambda: TOOL in owner.tool_names, WAIT, "simulate-research-query listed")
        wire, created = start_research(owner, "lighthouses")
        with pytest.raises(McpError) as caught:
            get(WireV1(stranger._task_send), created.task_id)
        assert caught.value.code == INVALID_PARAMS
        assert get(wire, created.task_id).task_id == created.task_id
        wire.cancel_f(created.task_id, Deadline(WAIT)).result(WAIT + 5)
    finally:
        for server in servers:
            server.stop()


def test_the_elicitation_handler_runs_off_the_thread_that_waits_for_the_result(connect):
    """The caller may block on the result future: the server's request is answered on the
    client's own handler threads meanwhile."""
    threads: list[str] = []

    def on_elicitation(params: dict) -> dict:
        threads.append(threading.current_thread().name)
        return {"action": "decline"}

    server = connect(on_elicitation=on_elicitation)
    wire, created = start_research(server, "weather", ambiguous=True)
    result = wire.result_f(created.task_id, Deadline(WAIT)).result(WAIT + 5)
    assert threads and threads[0] != threading.current_thread().name
    assert "User declined - using default interpretation" in result["content"][0]["text"]
