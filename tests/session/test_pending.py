"""The pending requests of a JSON-RPC session (raider_sync.session.pending), on their own:
deadlines, settling, cancelling, and the end of the session."""
from __future__ import annotations

import threading
from concurrent.futures import CancelledError, InvalidStateError, as_completed, wait

import pytest

from raider_sync.errors import ConnectionClosed, RequestTimeout, ToolTimeout
from raider_sync.session.lanes import Lanes
from raider_sync.session.pending import Pending, PendingRequests, RequestFuture
from raider_sync.threads.futures import Deadline

from conftest import poll

WAIT = 5.0


def _table(settled=None):
    cancels: list[tuple[int, str]] = []
    table = PendingRequests("mem", send_cancelled=lambda rid, why: cancels.append((rid, why)),
                            on_settle=None if settled is None else settled.append)
    return table, cancels


def _entry(table, request_id, *, seconds=WAIT, cancellable=True, transform=None,
           awaited=False, timeout_error=RequestTimeout):
    future = RequestFuture(table, request_id)
    entry = Pending(future, "tools/call", seconds, None, timeout_error, cancellable, None,
                    transform, awaited)
    assert table.add(request_id, entry, Deadline(seconds))
    return entry


def test_an_answer_settles_its_request_once_through_its_transform_and_is_told():
    settled: list = []
    table, _ = _table(settled)
    entry = _entry(table, 1, transform=lambda result: result["n"] + 1)
    table.settle(1, result={"n": 1})
    table.settle(1, error=RuntimeError("late"))  # a late answer is ignored
    assert entry.future.result(0) == 2 and settled == [None]
    assert not table.waiting(1) and table.get(1) is None


def test_a_transform_that_raises_fails_the_future_with_its_error():
    table, _ = _table()
    entry = _entry(table, 1, transform=lambda result: result["missing"])
    table.settle(1, result={})
    assert isinstance(entry.future.exception(0), KeyError)


def test_a_deadline_that_passes_has_the_peer_told_and_fails_with_the_timeout_error():
    table, cancels = _table()
    entry = _entry(table, 7, seconds=0.05, timeout_error=ToolTimeout)
    with pytest.raises(ToolTimeout, match="tools/call to mem timed out after 0.05 s"):
        entry.future.result(WAIT)
    assert cancels == [(7, "timed out")]
    quiet = _entry(table, 8, seconds=0.05, cancellable=False)
    with pytest.raises(RequestTimeout):
        quiet.future.result(WAIT)
    assert cancels == [(7, "timed out")]  # a request that is not cancellable sends none


def test_a_request_added_unwatched_has_no_deadline_until_it_is_watched():
    table, cancels = _table()
    future = RequestFuture(table, 3)
    entry = Pending(future, "tools/call", 0.05, None, ToolTimeout, True, None, None, True)
    assert table.add(3, entry, Deadline(0.05), watch=False)
    assert entry.timer is None  # answered during its send, it never needs the timer
    table.settle(3, result={"n": 1})
    table.watch(3)  # no longer pending: nothing goes on the timer
    assert entry.timer is None and future.result(0) == {"n": 1}
    late = RequestFuture(table, 4)
    slow = Pending(late, "tools/call", 0.05, None, ToolTimeout, True, None, None, True)
    assert table.add(4, slow, Deadline(0.05), watch=False)
    table.watch(4)  # still pending after its send: its deadline fails it as any other's
    with pytest.raises(ToolTimeout, match="timed out after 0.05 s"):
        late.result(WAIT)
    assert cancels == [(4, "timed out")]


def test_cancelling_the_future_drops_the_request_and_has_the_peer_told():
    table, cancels = _table()
    entry = _entry(table, 3)
    assert entry.future.cancel()
    assert cancels == [(3, "cancelled by the client")] and not table.waiting(3)
    table.settle(3, result={})  # the answer that comes anyway finds nothing
    assert entry.future.cancelled()


def test_check_out_says_whether_a_request_is_pending_and_whether_it_is_alone():
    table, _ = _table()
    first = _entry(table, 1, awaited=True)
    second = _entry(table, 2)
    assert table.check_out(2, second, True) is False  # the first has a caller blocking on it
    assert table.check_out(1, first, True) is True
    assert table.check_out(1, first, False) is False
    table.settle(1, result={})
    assert table.check_out(1, first, True) is None
    assert table.check_out(2, second, True) is True


def test_the_end_of_the_session_fails_every_request_and_refuses_new_ones():
    table, _ = _table()
    entries = [_entry(table, n) for n in (1, 2)]
    first, second = ConnectionClosed("gone"), ConnectionClosed("later")
    table.fail_all(first)
    table.fail_all(second)
    assert all(entry.future.exception(0) is first for entry in entries)
    assert table.closed_error is first
    late = Pending(RequestFuture(table, 3), "ping", WAIT, None, RequestTimeout, True, None, None)
    assert not table.add(3, late, Deadline(WAIT))
    assert late.future.exception(0) is first and not table.entries


def test_an_on_settle_that_raises_does_not_keep_the_answer_from_its_caller():
    def broken(error):
        raise RuntimeError("the owner's bug")
    table = PendingRequests("mem", send_cancelled=lambda *_: None, on_settle=broken)
    entry = _entry(table, 1)
    table.settle(1, result="ok")
    assert entry.future.result(0) == "ok"


def test_work_given_to_lanes_that_are_shut_down_is_dropped_not_raised():
    lanes = Lanes("mem", 2)
    ran = threading.Event()
    lanes.submit(lanes.control, ran.set)
    assert ran.wait(WAIT)
    lanes.shutdown(wait=True, finish_received=False)
    lanes.submit(lanes.control, ran.clear)  # no RuntimeError: the session is closing
    assert ran.is_set()


def test_a_request_future_is_a_future_to_every_waiter_and_callback():
    """The request's future keeps Future's contract: a thread that waits in result() or
    exception() is woken, concurrent.futures.wait and as_completed see it settle, callbacks
    run once (one added after the fact at once; one that raises is logged), and a settled
    future cannot be settled again."""
    table, _ = _table()
    answered, failed = _entry(table, 1).future, _entry(table, 2).future
    seen: list = []
    answered.add_done_callback(lambda future: seen.append(future.result()))
    answered.add_done_callback(lambda future: 1 / 0)  # logged, and the next still runs
    answered.add_done_callback(lambda future: seen.append("after"))
    got: dict = {}

    def waiter():
        got["result"] = answered.result(WAIT)
        got["error"] = failed.exception(WAIT)
    thread = threading.Thread(target=waiter)
    thread.start()
    assert wait([answered, failed], timeout=0.05).done == set()
    # the condition a waiter waits on is made once one does: settling must wake it
    poll(lambda: answered._made_condition is not None, WAIT, "the waiter waiting")
    table.settle(1, result="yes")
    table.settle(2, error=RuntimeError("no"))
    thread.join(WAIT)
    assert got["result"] == "yes" and str(got["error"]) == "no"
    assert set(as_completed([answered, failed], timeout=WAIT)) == {answered, failed}
    assert seen == ["yes", "after"] and answered.done() and not answered.cancelled()
    with pytest.raises(RuntimeError, match="no"):
        failed.result(0)
    late: list = []
    failed.add_done_callback(late.append)
    assert late == [failed]
    with pytest.raises(InvalidStateError):
        answered.set_result("again")
    with pytest.raises(InvalidStateError):
        failed.set_exception(RuntimeError("again"))
    assert not answered.cancel()


def test_a_cancelled_request_future_wakes_its_waiter_with_cancelled_error():
    table, cancels = _table()
    future = _entry(table, 5).future
    errors: list = []

    def waiter():
        try:
            future.result(WAIT)
        except CancelledError as exc:
            errors.append(exc)
    thread = threading.Thread(target=waiter)
    thread.start()
    assert wait([future], timeout=0.05).not_done == {future}
    poll(lambda: future._made_condition is not None, WAIT, "the waiter waiting")
    assert future.cancel() and future.cancelled() and future.done()
    thread.join(WAIT)
    assert len(errors) == 1 and cancels == [(5, "cancelled by the client")]
