"""Where tasks are kept (MemoryTaskStore) and how a task's handler reaches its client
(TaskLink, and the context's task methods), without a server."""
from __future__ import annotations

import logging
import re
import threading
import time

import pytest

from raider_sync import Context, McpError, RequestTimeout
from raider_sync.serve.client_links import RoundsLink
from raider_sync.serve.context import InputRequired, elicitation
from raider_sync.serve.tasks import MemoryTaskStore, TaskRecord
from raider_sync.serve.tasks.link import TaskLink
from raider_sync.serve.tasks.store import iso_time, new_task_id

WAIT = 30.0
ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
QUESTION = {"method": "elicitation/create", "params": {"message": "ok?"}}


def record(**fields) -> TaskRecord:
    return TaskRecord(fields.pop("task_id", new_task_id()), fields.pop("created_at", time.time()),
                      fields.pop("ttl_ms", 60_000), fields.pop("poll_interval_ms", 500), **fields)


@pytest.fixture
def store():
    store = MemoryTaskStore()
    yield store
    store.close()


def waiter(store, task_id, keys, timeout=WAIT):
    """take_responses on a thread of its own; (thread, box of its answer)."""
    box: list = []
    thread = threading.Thread(target=lambda: box.append(store.take_responses(task_id, keys, timeout)),
                              name="test-task-waiter")
    thread.start()
    return thread, box


# -- records --------------------------------------------------------------------------------

def test_a_record_on_the_wire():
    task = record(task_id="t1", ttl_ms=None)
    wire = task.wire()
    assert list(wire) == ["taskId", "status", "createdAt", "lastUpdatedAt", "ttlMs",
                          "pollIntervalMs"]
    assert ISO.match(wire["createdAt"]) and wire["createdAt"] == wire["lastUpdatedAt"]
    assert wire["ttlMs"] is None and wire["pollIntervalMs"] == 500
    assert iso_time(0) == "1970-01-01T00:00:00.000Z"
    task.status_message = "busy"
    assert task.wire()["statusMessage"] == "busy"


def test_the_detailed_task_carries_what_its_status_says():
    task = record(input_requests={"q": QUESTION}, result={"content": []},
                  error={"code": -32603, "message": "x"})
    assert "inputRequests" not in task.detailed() and "result" not in task.detailed()
    for status, field in (("input_required", "inputRequests"), ("completed", "result"),
                          ("failed", "error"), ("cancelled", None)):
        task.status = status
        shown = set(task.detailed()) & {"inputRequests", "result", "error"}
        assert shown == ({field} if field else set()), status


def test_task_ids_are_unguessable():
    ids = {new_task_id() for _ in range(100)}
    assert len(ids) == 100 and all(len(i) >= 40 for i in ids)


# -- the store ------------------------------------------------------------------------------

def test_what_is_created_is_found_as_a_copy(store):
    task = record()
    store.create(task)
    found = store.get(task.task_id)
    assert found == task and found is not task
    found.status = "failed"
    assert store.get(task.task_id).status == "working"
    assert store.get("unknown") is None


def test_the_first_end_wins(store):
    task = record()
    store.create(task)
    assert store.settle(task.task_id, "cancelled", message="by the client") is True
    assert store.settle(task.task_id, "completed", result={"content": []}) is False
    ended = store.get(task.task_id)
    assert (ended.status, ended.status_message, ended.result) == ("cancelled", "by the client", None)
    store.set_message(task.task_id, "too late")
    assert store.get(task.task_id).status_message == "by the client"
    assert store.settle("unknown", "failed") is False
    with pytest.raises(ValueError, match="not 'working'"):
        store.settle(task.task_id, "working")


def test_questions_are_answered_in_parts_and_unknown_answers_ignored(store):
    task = record()
    store.create(task)
    store.request_input(task.task_id, {"a": QUESTION, "b": QUESTION})
    assert store.get(task.task_id).status == "input_required"
    store.respond(task.task_id, {"a": {"action": "accept"}, "zzz": {"action": "accept"}})
    partly = store.get(task.task_id)
    assert partly.status == "input_required" and list(partly.input_requests) == ["b"]
    assert partly.responses == {"a": {"action": "accept"}}
    store.respond(task.task_id, {"a": {"action": "decline"}})  # answered already: ignored
    store.respond(task.task_id, {"b": {"action": "cancel"}})
    answered = store.get(task.task_id)
    assert answered.status == "working" and answered.input_requests == {}
    assert store.take_responses(task.task_id, ["a", "b"], WAIT) == {
        "a": {"action": "accept"}, "b": {"action": "cancel"}}
    assert store.get(task.task_id).responses == {}, "taken answers are gone"


def test_a_waiter_gets_its_answers_once_all_came(store):
    task = record()
    store.create(task)
    store.request_input(task.task_id, {"a": QUESTION, "b": QUESTION})
    thread, box = waiter(store, task.task_id, ["a", "b"])
    store.respond(task.task_id, {"a": {"action": "accept"}})
    store.respond(task.task_id, {"b": {"action": "accept"}})
    thread.join(WAIT)
    assert box == [{"a": {"action": "accept"}, "b": {"action": "accept"}}]


@pytest.mark.parametrize("end", ["settle", "close"])
def test_a_waiter_stops_waiting_when_the_task_ends_or_the_store_closes(store, end):
    task = record()
    store.create(task)
    store.request_input(task.task_id, {"a": QUESTION})
    thread, box = waiter(store, task.task_id, ["a"])
    started = time.monotonic()
    if end == "settle":
        store.settle(task.task_id, "cancelled")
    else:
        store.close()
    thread.join(WAIT)
    assert box == [None] and time.monotonic() - started < WAIT / 2
    if end == "settle":
        assert store.get(task.task_id).input_requests == {}, "an ended task asks nothing"


def test_a_waiter_gives_up_after_its_timeout(store):
    task = record()
    store.create(task)
    store.request_input(task.task_id, {"a": QUESTION})
    assert store.take_responses(task.task_id, ["a"], 0.05) is None
    assert store.get(task.task_id).status == "input_required"


def test_expired_tasks_are_forgotten(store):
    old = record(created_at=time.time() - 10, ttl_ms=1000)
    forever = record(created_at=time.time() - 10**6, ttl_ms=None)
    store.create(old)
    store.create(forever)
    assert store.get(old.task_id) is None
    assert store.get(forever.task_id) is not None
    assert len(store) == 1


# -- a task's link, and the context --------------------------------------------------------

def test_a_context_without_a_task_link_begins_no_task():
    context = Context()
    assert context.begin_task("now") is False and context.task_id is None
    assert context.wait_cancelled(0.01) is False
    context.cancel()
    started = time.monotonic()
    assert context.wait_cancelled(WAIT) is True
    assert time.monotonic() - started < WAIT / 2


def link_of(store, *, notified=None, progressed=None, begin_ok=True, answers=None):
    created: list = []

    def begin(message):
        if not begin_ok:
            return None
        task = record(status_message=message)
        store.create(task)
        created.append(task.task_id)
        return task.task_id

    rounds = RoundsLink(answers or {}, (lambda m, p: notified.append((m, p)))
                        if notified is not None else None)
    return TaskLink(store, rounds, begin,
                    (lambda *a: progressed.append(a)) if progressed is not None else None), created


def test_before_its_task_begins_a_call_is_an_ordinary_round(store):
    notified: list = []
    progressed: list = []
    link, created = link_of(store, notified=notified, progressed=progressed,
                            answers={"known": {"action": "accept"}})
    context = Context(link=link, client_capabilities={"elicitation": {}},
                      on_progress=link.progress)
    context.progress(1, 2, "first")
    context.log("info", "hello")
    assert progressed == [(1, 2, "first")]
    assert notified == [("notifications/message", {"level": "info", "data": "hello"})]
    assert context.elicit("known?", {"type": "object"}, key="known") == {"action": "accept"}
    with pytest.raises(InputRequired):
        context.elicit("new?", {"type": "object"}, key="new")
    assert created == [] and context.task_id is None


def test_once_begun_the_task_keeps_the_status_and_parks_questions(store, caplog):
    notified: list = []
    link, created = link_of(store, notified=notified, progressed=[])
    context = Context(link=link, client_capabilities={"elicitation": {}},
                      on_progress=link.progress)
    assert context.begin_task("starting") is True and context.begin_task() is True
    assert created == [context.task_id] and store.get(context.task_id).status_message == "starting"
    context.progress(1, 2, "halfway")
    assert store.get(context.task_id).status_message == "halfway"
    with caplog.at_level(logging.INFO, logger="raider_sync.serve.handler"):
        context.log("info", "no stream for this")
    assert notified == [] and "no stream for this" in caplog.text
    answers: list = []
    asker = threading.Thread(target=lambda: answers.append(
        context.ask({"q": elicitation("Sure?", {"type": "object"})})), name="test-task-asker")
    asker.start()
    deadline = time.monotonic() + WAIT
    while "q" not in store.get(context.task_id).input_requests:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    store.respond(context.task_id, {"q": {"action": "accept"}})
    asker.join(WAIT)
    assert answers == [{"q": {"action": "accept"}}]


def test_a_parked_question_ends_with_its_task_or_its_timeout(store):
    link, _ = link_of(store)
    assert link.begin_task() is True
    with pytest.raises(RequestTimeout, match="did not answer q"):
        link.ask({"q": elicitation("?", {})}, 0.05)
    store.settle(link.task_id, "cancelled")
    with pytest.raises(McpError) as ended:
        link.ask({"q": elicitation("?", {})}, WAIT)
    assert ended.value.code == -32800


def test_a_call_that_can_no_longer_become_a_task_begins_none(store):
    link, created = link_of(store, begin_ok=False)
    assert link.begin_task() is False and link.task_id is None and created == []
