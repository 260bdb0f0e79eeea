"""jsonrpc.Session against an in-memory transport: ids, futures, deadlines, dispatch."""
from __future__ import annotations

import queue
import threading
import time
from concurrent.futures import CancelledError

import pytest

from raider_sync.errors import (
    AnswerInBody,
    ConnectionClosed,
    McpError,
    RequestTimeout,
    ToolTimeout,
    TransportError,
)
from raider_sync.jsonrpc import MethodNotFound, Session
from raider_sync.protocol.codes import HEADER_MISMATCH
from raider_sync.transports.base import RequestFailed

from conftest import poll
from fakes.memory_transport import MemoryTransport, make

WAIT = 5.0


@pytest.fixture
def pair():
    transport = MemoryTransport()
    session = Session(transport, name="mem")
    session.open()
    yield session, transport
    session.close()


def test_a_response_resolves_the_future_of_its_id(pair):
    session, transport = pair
    first = session.request_f("tools/list", timeout=WAIT)
    second = session.request_f("ping", {"a": 1}, timeout=WAIT)
    m1, m2 = transport.next_sent(), transport.next_sent()
    assert m1 == {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    assert m2 == {"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"a": 1}}
    transport.deliver({"jsonrpc": "2.0", "id": 2, "result": {"two": True}})
    transport.deliver({"jsonrpc": "2.0", "id": 1, "result": {"one": True}})
    assert first.result(WAIT) == {"one": True}
    assert second.result(WAIT) == {"two": True}


def test_an_error_answer_keeps_code_message_and_data(pair):
    session, transport = pair
    future = session.request_f("tools/call", {"name": "x"}, timeout=WAIT)
    request_id = transport.next_sent()["id"]
    transport.deliver({"jsonrpc": "2.0", "id": request_id,
                       "error": {"code": -32602, "message": "bad", "data": {"field": "x"}}})
    with pytest.raises(McpError) as info:
        future.result(WAIT)
    assert (info.value.code, info.value.message, info.value.data) == (-32602, "bad", {"field": "x"})


def test_a_batch_is_taken_apart(pair):
    session, transport = pair
    a = session.request_f("a", timeout=WAIT)
    b = session.request_f("b", timeout=WAIT)
    transport.deliver([{"jsonrpc": "2.0", "id": 1, "result": "A"},
                       {"jsonrpc": "2.0", "id": 2, "result": "B"}])
    assert (a.result(WAIT), b.result(WAIT)) == ("A", "B")


def test_junk_messages_and_unknown_ids_are_ignored(pair):
    session, transport = pair
    future = session.request_f("a", timeout=WAIT)
    for junk in ("text", 5, None, {"jsonrpc": "2.0", "id": 99, "result": 1},
                 {"jsonrpc": "2.0", "id": 1}):
        transport.deliver(junk)
    assert not future.done()
    transport.deliver({"jsonrpc": "2.0", "id": 1, "result": "ok"})
    assert future.result(WAIT) == "ok"


def test_a_timeout_sends_cancelled_and_fails_with_the_message(pair):
    session, transport = pair
    started = time.monotonic()
    future = session.request_f("tools/call", timeout=0.2, timeout_error=ToolTimeout,
                               timeout_message="MCP tool call timed out after 0.2 s")
    request_id = transport.next_sent()["id"]
    with pytest.raises(ToolTimeout, match="MCP tool call timed out after 0.2 s"):
        future.result(WAIT)
    assert 0.15 < time.monotonic() - started < 2
    cancelled = transport.next_sent("notifications/cancelled")
    assert cancelled["params"]["requestId"] == request_id
    # an answer arriving afterwards is ignored
    transport.deliver({"jsonrpc": "2.0", "id": request_id, "result": "late"})
    assert isinstance(future.exception(), TimeoutError)


def test_a_timeout_without_a_message_names_method_and_seconds(pair):
    session, _ = pair
    with pytest.raises(RequestTimeout, match=r"ping to mem timed out after 0.1 s"):
        session.request("ping", timeout=0.1)


def test_deadlines_fire_in_their_own_order(pair):
    session, _ = pair
    late = session.request_f("late", timeout=0.6)
    early = session.request_f("early", timeout=0.1)
    with pytest.raises(RequestTimeout):
        early.result(WAIT)
    assert not late.done()
    with pytest.raises(RequestTimeout):
        late.result(WAIT)


def test_a_request_that_is_not_cancellable_sends_no_cancel(pair):
    session, transport = pair
    future = session.request_f("initialize", timeout=0.1, cancellable=False)
    transport.next_sent()
    with pytest.raises(RequestTimeout):
        future.result(WAIT)
    marker = session.request_f("marker", timeout=WAIT)
    assert transport.next_sent()["method"] == "marker"
    assert transport.sent.empty()
    transport.deliver({"jsonrpc": "2.0", "id": 2, "result": None})
    marker.result(WAIT)


def test_cancelling_the_future_sends_cancelled(pair):
    session, transport = pair
    future = session.request_f("tools/call", timeout=WAIT)
    request_id = transport.next_sent()["id"]
    assert future.cancel()
    message = transport.next_sent("notifications/cancelled")
    assert message["params"]["requestId"] == request_id
    with pytest.raises(CancelledError):
        future.result(0)
    transport.deliver({"jsonrpc": "2.0", "id": request_id, "result": "late"})  # ignored


def test_progress_reaches_the_callback_of_its_request(pair):
    session, transport = pair
    seen = []
    done = threading.Event()

    def on_progress(progress, total, message):
        seen.append((progress, total, message, threading.current_thread().name))
        if progress == 2:
            done.set()

    future = session.request_f("tools/call", {"name": "t"}, timeout=WAIT, on_progress=on_progress)
    sent = transport.next_sent()
    token = sent["params"]["_meta"]["progressToken"]
    assert sent["params"]["name"] == "t"
    for p in (1, 2):
        transport.deliver({"jsonrpc": "2.0", "method": "notifications/progress",
                           "params": {"progressToken": token, "progress": p, "total": 2,
                                      "message": f"step {p}"}})
    transport.deliver({"jsonrpc": "2.0", "method": "notifications/progress",
                       "params": {"progressToken": "other", "progress": 9}})
    assert done.wait(WAIT)
    transport.deliver({"jsonrpc": "2.0", "id": sent["id"], "result": {}})
    future.result(WAIT)
    assert [s[:3] for s in seen] == [(1, 2, "step 1"), (2, 2, "step 2")]
    assert all(name.startswith("raider-mem-") for *_, name in seen)


def test_a_failing_progress_callback_does_not_stop_dispatch(pair, caplog):
    session, transport = pair

    def broken(*_):
        raise RuntimeError("callback bug")

    future = session.request_f("x", timeout=WAIT, on_progress=broken)
    request_id = transport.next_sent()["id"]
    transport.deliver({"jsonrpc": "2.0", "method": "notifications/progress",
                       "params": {"progressToken": request_id, "progress": 1}})
    transport.deliver({"jsonrpc": "2.0", "id": request_id, "result": 7})
    assert future.result(WAIT) == 7


def test_peer_requests_are_answered_off_the_reader_thread():
    calls = []

    def handle(method, params):
        calls.append((method, params, threading.current_thread().name))
        if method == "ping":
            return {}
        if method == "boom":
            raise ValueError("handler bug")
        if method == "refuse":
            raise McpError(-32000, "refused", {"why": 1})
        raise MethodNotFound(method)

    session, transport = make(handle_request=handle)
    try:
        reader = threading.current_thread().name
        for i, method in enumerate(["ping", "sampling/createMessage", "boom", "refuse"]):
            transport.deliver({"jsonrpc": "2.0", "id": f"s{i}", "method": method, "params": {"i": i}})
        replies = {m["id"]: m for m in (transport.next_sent() for _ in range(4))}
        assert replies["s0"]["result"] == {}
        assert replies["s1"]["error"]["code"] == -32601
        assert "sampling/createMessage" in replies["s1"]["error"]["message"]
        assert replies["s2"]["error"]["code"] == -32603 and "handler bug" in replies["s2"]["error"]["message"]
        assert replies["s3"]["error"] == {"code": -32000, "message": "refused", "data": {"why": 1}}
        assert all(name != reader and name.startswith("raider-mem-") for *_, name in calls)
    finally:
        session.close()


def test_without_a_request_handler_every_request_gets_method_not_found():
    session, transport = make()
    try:
        transport.deliver({"jsonrpc": "2.0", "id": 5, "method": "roots/list"})
        reply = transport.next_sent()
        assert reply["id"] == 5 and reply["error"]["code"] == -32601
    finally:
        session.close()


def test_notifications_are_dispatched_in_order_off_the_reader_thread():
    got = []
    done = threading.Event()

    def handle(method, params):
        got.append((method, params["n"], threading.current_thread().name))
        if params["n"] == 49:
            done.set()

    session, transport = make(handle_notification=handle)
    try:
        for n in range(50):
            transport.deliver({"jsonrpc": "2.0", "method": "notifications/message", "params": {"n": n}})
        assert done.wait(WAIT)
        assert [n for _, n, _ in got] == list(range(50))
        assert {name for *_, name in got} != {threading.current_thread().name}
    finally:
        session.close()


def test_a_closed_transport_fails_every_pending_request_and_tells_the_owner():
    told = []
    session, transport = make(on_close=told.append)
    try:
        pending = [session.request_f("x", timeout=WAIT) for _ in range(3)]
        error = ConnectionClosed("gone: last words", ["last words"])
        transport.close_from_peer(error)
        for future in pending:
            assert future.exception(0) is error
        assert told == [error]
        assert session.closed
        later = session.request_f("y", timeout=WAIT)
        assert later.exception(0) is error
    finally:
        session.close()


def test_close_fails_pending_requests_at_once_and_is_safe_twice():
    session, transport = make()
    future = session.request_f("x", timeout=60)
    started = time.monotonic()
    session.close()
    session.close()
    assert isinstance(future.exception(0), ConnectionClosed)
    assert time.monotonic() - started < 2


def test_a_send_that_fails_fails_the_future():
    session, _ = make(MemoryTransport(fail_send=BrokenPipeError("pipe")))
    try:
        future = session.request_f("x", timeout=WAIT)
        assert isinstance(future.exception(0), ConnectionClosed)
        session.notify("notifications/initialized")  # logged, not raised
    finally:
        session.close()


def test_a_raider_error_from_send_is_kept():
    error = ConnectionClosed("not running")
    session, _ = make(MemoryTransport(fail_send=error))
    try:
        assert session.request_f("x", timeout=WAIT).exception(0) is error
    finally:
        session.close()


def test_many_threads_get_their_own_answers(pair):
    session, transport = pair

    def peer():
        for _ in range(200):
            message = transport.next_sent()
            transport.deliver({"jsonrpc": "2.0", "id": message["id"],
                               "result": message["params"]["n"]})

    responder = threading.Thread(target=peer, name="test-peer")
    responder.start()
    results: dict[int, object] = {}

    def caller(base):
        for i in range(25):
            n = base * 100 + i
            results[n] = session.request("echo", {"n": n}, timeout=WAIT)

    callers = [threading.Thread(target=caller, args=(b,), name=f"test-caller-{b}") for b in range(8)]
    for t in callers:
        t.start()
    for t in callers:
        t.join(WAIT * 2)
    responder.join(WAIT * 2)
    assert len(results) == 200 and all(k == v for k, v in results.items())


def test_a_malformed_error_code_still_fails_the_request(pair):
    session, transport = pair
    future = session.request_f("x", timeout=WAIT)
    transport.deliver({"jsonrpc": "2.0", "id": 1, "error": {"code": "oops", "message": "m"}})
    error = future.exception(WAIT)
    assert isinstance(error, McpError) and error.code == -32603 and error.message == "m"


def test_a_send_that_runs_out_of_time_is_the_requests_own_timeout():
    session, _ = make(MemoryTransport(fail_send=RequestTimeout("stdin full")))
    try:
        future = session.request_f("tools/call", timeout=WAIT, timeout_error=ToolTimeout,
                                   timeout_message="MCP tool call timed out after 5 s")
        error = future.exception(0)
        assert isinstance(error, ToolTimeout) and str(error) == "MCP tool call timed out after 5 s"
    finally:
        session.close()


def test_close_without_wait_fails_pending_at_once_and_a_second_close_joins():
    session, transport = make()
    future = session.request_f("x", timeout=60)
    session.close(ConnectionClosed("going"), wait=False)
    assert str(future.exception(0)) == "going"
    session.close()


def test_progress_sent_before_the_answer_is_delivered_before_the_result(pair):
    """Regression: progress was looked up on the dispatch thread, after the reader thread had
    already settled the answer, so the last steps of a slow callback were dropped."""
    session, transport = pair
    seen = []

    def slow_callback(progress, total, message):
        time.sleep(0.05)  # a user callback that takes a while
        seen.append(progress)

    future = session.request_f("tools/call", timeout=WAIT, on_progress=slow_callback)
    request_id = transport.next_sent()["id"]
    transport.deliver([{"jsonrpc": "2.0", "method": "notifications/progress",
                        "params": {"progressToken": request_id, "progress": p, "total": 3}}
                       for p in (1, 2, 3)] + [{"jsonrpc": "2.0", "id": request_id, "result": "done"}])
    assert future.result(WAIT) == "done"
    assert seen == [1, 2, 3]


def test_unhashable_ids_and_tokens_are_ignored(pair):
    session, transport = pair
    future = session.request_f("x", timeout=WAIT, on_progress=lambda *a: None)
    transport.deliver({"jsonrpc": "2.0", "id": [1], "result": "bad id"})
    transport.deliver({"jsonrpc": "2.0", "method": "notifications/progress",
                       "params": {"progressToken": {"a": 1}, "progress": 1}})
    transport.deliver({"jsonrpc": "2.0", "id": 1, "result": "ok"})
    assert future.result(WAIT) == "ok"


def test_a_notification_handler_may_wait_for_a_request_with_progress():
    """Answers of requests with progress are settled on the progress thread, not on the
    notification thread a handler may be blocking."""
    box: dict = {}

    def handle(method, params):
        box["result"] = box["session"].request("inner", timeout=WAIT,
                                               on_progress=lambda *a: box.setdefault("p", a))

    session, transport = make(handle_notification=handle)
    box["session"] = session
    try:
        transport.deliver({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        sent = transport.next_sent()
        token = sent["params"]["_meta"]["progressToken"]
        transport.deliver({"jsonrpc": "2.0", "method": "notifications/progress",
                           "params": {"progressToken": token, "progress": 1}})
        transport.deliver({"jsonrpc": "2.0", "id": sent["id"], "result": "inner done"})
        poll(lambda: "result" in box, WAIT, "the callback's inner call")
        assert box["result"] == "inner done" and box["p"][0] == 1
    finally:
        session.close()


def test_params_json_cannot_carry_fail_with_the_callers_error():
    session, _ = make(MemoryTransport(fail_send=TypeError("Object of type set is not JSON serializable")))
    try:
        assert isinstance(session.request_f("x", {"a": {1}}, timeout=WAIT).exception(0), TypeError)
    finally:
        session.close()


def test_closed_error_tells_what_ended_the_session():
    session, transport = make()
    assert session.closed_error is None and not session.closed
    error = ConnectionClosed("gone")
    transport.close_from_peer(error)
    assert session.closed_error is error and session.closed
    session.close()


def test_a_blocking_request_is_bounded_even_without_the_timer(monkeypatch):
    """request() waits at most its timeout plus a margin, even if nothing else fails it."""
    from raider_sync.threads import futures, timer
    monkeypatch.setattr(futures, "WAIT_MARGIN_S", 0.2)
    monkeypatch.setattr(timer, "at", lambda when, action: None)  # no deadline fails it
    transport = MemoryTransport()
    session = Session(transport, name="mem")
    transport.start(None, None)
    started = time.monotonic()
    with pytest.raises(RequestTimeout):
        session.request("slow", timeout=0.1)
    assert time.monotonic() - started < 2
    session.close()


class AnsweringTransport(MemoryTransport):
    """Answers each request during its send, on the sending thread (as a stdio or HTTP
    answer read on the caller's thread is)."""

    def send(self, message, *, deadline=None):
        super().send(message, deadline=deadline)
        if "id" in message and "method" in message:
            self.deliver({"jsonrpc": "2.0", "id": message["id"], "result": {"ok": True}})


def test_a_request_answered_during_its_send_never_goes_on_the_timer(monkeypatch):
    """The deadline of a request sent on the caller's thread goes on the process's timer
    only when it is still pending after the send: answered during it, it costs the timer
    nothing; sent and not answered, its deadline fails it as any other's."""
    from raider_sync.threads import timer
    scheduled: list[float] = []
    real_at = timer.at

    def at(when, action):
        scheduled.append(when)
        return real_at(when, action)
    monkeypatch.setattr(timer, "at", at)
    session, _ = make(AnsweringTransport())
    assert session.request("tools/call", timeout=WAIT) == {"ok": True}
    assert session.request_f("a", timeout=WAIT).result(WAIT) == {"ok": True}
    assert scheduled == [] and session._pending == {}
    session.close()
    session, transport = make()
    with pytest.raises(ToolTimeout, match="timed out after 0.1 s"):
        session.request("tools/call", timeout=0.1, timeout_error=ToolTimeout)
    assert len(scheduled) == 1 and transport.next_sent("notifications/cancelled")
    session.close()


def test_pings_and_cancellations_pass_handlers_that_wait():
    """Four handlers waiting (say, elicitations waiting for a person) hold up neither the
    answer to a ping nor the notifications/cancelled of a request that timed out."""
    release = threading.Event()
    asked = threading.Semaphore(0)

    def handle(method, params):
        if method == "ping":
            return {}
        asked.release()
        release.wait(WAIT)
        return {"action": "decline"}

    session, transport = make(handle_request=handle)
    try:
        for n in range(4):
            transport.deliver({"jsonrpc": "2.0", "id": f"e{n}", "method": "elicitation/create",
                               "params": {}})
        for _ in range(4):
            assert asked.acquire(timeout=WAIT)  # every handler thread is now waiting
        transport.deliver({"jsonrpc": "2.0", "id": "p1", "method": "ping"})
        assert transport.next_sent() == {"jsonrpc": "2.0", "id": "p1", "result": {}}
        late = session.request_f("tools/call", {"name": "slow"}, timeout=0.1)
        assert transport.next_sent("tools/call")["id"] == late.request_id
        cancel = transport.next_sent("notifications/cancelled")
        assert cancel["params"]["requestId"] == late.request_id
        with pytest.raises(RequestTimeout):
            late.result(WAIT)
    finally:
        release.set()
        session.close()


def test_a_request_the_transport_could_not_complete_fails_with_its_error(pair):
    session, transport = pair
    doomed = session.request_f("tools/call", {"name": "x"}, timeout=WAIT)
    other = session.request_f("tools/list", timeout=WAIT)
    error = TransportError("the stream broke off", 200, "partial")
    transport.deliver(RequestFailed(doomed.request_id, error))
    with pytest.raises(TransportError) as caught:
        doomed.result(WAIT)
    assert caught.value is error
    assert not other.done()  # the other request still waits for its answer
    transport.deliver({"jsonrpc": "2.0", "id": other.request_id, "result": {"tools": []}})
    assert other.result(WAIT) == {"tools": []}


def test_every_kind_of_work_runs_on_the_sessions_one_pool_whose_threads_end_when_idle():
    ran_on: list[str] = []
    noticed = threading.Event()

    def note(method, params):
        ran_on.append(threading.current_thread().name)
        noticed.set()

    session, transport = make(handle_request=lambda method, params: ran_on.append(
        threading.current_thread().name) or {}, handle_notification=note)
    try:
        transport.deliver({"jsonrpc": "2.0", "method": "notifications/message", "params": {}})
        assert noticed.wait(WAIT)
        transport.deliver({"jsonrpc": "2.0", "id": "s1", "method": "roots/list"})
        transport.deliver({"jsonrpc": "2.0", "id": "p1", "method": "ping"})
        assert {transport.next_sent()["id"] for _ in range(2)} == {"s1", "p1"}
        steps = threading.Event()
        future = session.request_f("tools/call", timeout=WAIT, inline=False, on_progress=lambda
                                   *_: ran_on.append(threading.current_thread().name) or steps.set())
        sent = transport.next_sent("tools/call")
        transport.deliver({"jsonrpc": "2.0", "method": "notifications/progress",
                           "params": {"progressToken": sent["id"], "progress": 1}})
        assert steps.wait(WAIT)
        transport.deliver({"jsonrpc": "2.0", "id": sent["id"], "result": {}})
        assert future.result(WAIT) == {}
        names = ran_on + transport.send_threads[-3:]  # the two answers, the request's send
        assert len(names) == 7  # the ping was handled too
        assert all(name.startswith("raider-mem-session_") for name in names), names
        poll(lambda: not [t for t in threading.enumerate() if t.name.startswith("raider-mem-")],
             WAIT, "the idle session's threads gone")
    finally:
        session.close()


# -- what the transport raises or reports, decided here ----------------------------------------


class AbandoningTransport(MemoryTransport):
    """Records the requests whose answers the session abandons, in order with what it sends."""

    def __init__(self):
        super().__init__()
        self.events: "queue.Queue[tuple]" = queue.Queue()

    def abandon(self, request_id):
        self.events.put(("abandon", request_id))

    def send(self, message, *, deadline=None):
        super().send(message, deadline=deadline)
        self.events.put(("send", message.get("method"), message.get("params")))


@pytest.mark.parametrize("how", ["cancel", "timeout"])
def test_a_cancelled_request_is_abandoned_at_the_transport_then_cancelled_at_the_peer(how):
    session, transport = make(AbandoningTransport())
    try:
        future = session.request_f("tools/call", timeout=WAIT if how == "cancel" else 0.1)
        request_id = transport.next_sent()["id"]
        assert transport.events.get(timeout=WAIT)[:2] == ("send", "tools/call")
        if how == "cancel":
            assert future.cancel()
        else:
            with pytest.raises(RequestTimeout):
                future.result(WAIT)
        assert transport.events.get(timeout=WAIT) == ("abandon", request_id)
        kind, method, params = transport.events.get(timeout=WAIT)
        assert (kind, method, params["requestId"]) == ("send", "notifications/cancelled",
                                                       request_id)
    finally:
        session.close()


def test_a_request_that_is_not_cancellable_is_not_abandoned():
    session, transport = make(AbandoningTransport())
    try:
        with pytest.raises(RequestTimeout):
            session.request("initialize", timeout=0.1, cancellable=False)
        marker = session.request_f("marker", timeout=WAIT)
        events = [transport.events.get(timeout=WAIT) for _ in range(2)]
        assert [event[:2] for event in events] == [("send", "initialize"), ("send", "marker")]
        assert transport.events.empty()
        marker.cancel()
    finally:
        session.close()


def test_an_error_status_whose_body_is_an_error_answer_fails_the_request_with_it():
    body = ('{"jsonrpc":"2.0","id":1,"error":{"code":-32020,"message":"Mcp-Name does not '
            'match","data":{"header":"Mcp-Name"}}}')
    session, _ = make(MemoryTransport(fail_send=AnswerInBody("HTTP 400", 400, body)))
    try:
        with pytest.raises(McpError) as caught:
            session.request("tools/call", timeout=WAIT)
        assert caught.value.code == HEADER_MISMATCH
        assert caught.value.message == "Mcp-Name does not match"
        assert caught.value.data == {"header": "Mcp-Name"}
    finally:
        session.close()
    refused = AnswerInBody("MCP server 'mem' (POST) answered HTTP 500: boom", 500, "boom")
    session, _ = make(MemoryTransport(fail_send=refused))
    try:
        with pytest.raises(AnswerInBody) as raised:
            session.request("tools/call", timeout=WAIT)
        assert raised.value is refused  # no error answer in it: the transport's error itself
    finally:
        session.close()
