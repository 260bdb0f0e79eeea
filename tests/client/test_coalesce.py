"""Identical reads in flight share one request: many threads reading one resource make the
server read it once, each caller keeps its own deadline and cancel, and tool calls are never
merged. The server counts what it executed."""
from __future__ import annotations

import threading
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor

import pytest

from raider_sync import McpServer, RequestTimeout, ToolServer
from raider_sync.client.coalesce import Coalescer
from raider_sync.threads.futures import Deadline

from conftest import poll

WAIT = 30.0


class Gate:
    """A resource and a prompt whose reads wait for :meth:`open`, counting each read."""

    def __init__(self):
        self.reads = 0
        self.started = threading.Event()
        self.opened = threading.Event()
        self.tools = ToolServer("gate")
        self.tools.add_resource("gate://doc", self.read, name="doc")
        self.tools.add_prompt("greeting", self.render, description="A greeting.")
        self.calls = 0
        self.tools.add_tool("bump", self.bump)

    def read(self):
        self.reads += 1
        self.started.set()
        assert self.opened.wait(WAIT)
        return "the document"

    def render(self, who: str = "you"):
        self.reads += 1
        self.started.set()
        assert self.opened.wait(WAIT)
        return f"hello {who}"

    def bump(self) -> str:
        self.calls += 1
        assert self.opened.wait(WAIT)
        return "bumped"


@pytest.fixture
def gate():
    made = Gate()
    with McpServer.in_process(made.tools) as server:
        assert server.status == "connected", server.reason
        yield made, server
        made.opened.set()
    made.tools.close()


def test_64_threads_reading_one_resource_make_the_server_read_it_once(gate):
    made, server = gate
    with ThreadPoolExecutor(64) as pool:
        futures = [pool.submit(server.read_resource, "gate://doc", timeout=WAIT)
                   for _ in range(64)]
        assert made.started.wait(WAIT)
        poll(lambda: server._asks.reads.joined == 63, WAIT, "63 readers joining the first")
        made.opened.set()
        answers = [f.result(WAIT) for f in futures]
    assert made.reads == 1
    assert all(a == answers[0] and a[0]["text"] == "the document" for a in answers)
    answers[0][0]["text"] = "changed"  # each caller has its own copy
    assert answers[1][0]["text"] == "the document"


def test_a_caller_whose_deadline_passes_leaves_and_the_others_get_the_answer(gate):
    made, server = gate
    first = server.read_resource_f("gate://doc", timeout=WAIT)
    assert made.started.wait(WAIT)
    hasty = server.read_resource_f("gate://doc", timeout=0.2)
    with pytest.raises(RequestTimeout, match="resources/read to gate timed out after 0.2 s"):
        hasty.result(WAIT)
    assert not first.done()
    made.opened.set()
    assert first.result(WAIT)[0]["text"] == "the document"
    assert made.reads == 1


def test_a_cancelled_caller_leaves_the_others_waiting(gate):
    made, server = gate
    first = server.read_resource_f("gate://doc", timeout=WAIT)
    assert made.started.wait(WAIT)
    second = server.read_resource_f("gate://doc", timeout=WAIT / 2)
    poll(lambda: server._asks.reads.joined == 1, WAIT, "the second joining")
    assert second.cancel()
    made.opened.set()
    assert first.result(WAIT)[0]["text"] == "the document" and made.reads == 1


def test_a_caller_that_needs_longer_than_the_read_in_flight_sends_its_own(gate):
    made, server = gate
    short = server.read_resource_f("gate://doc", timeout=WAIT / 2)
    assert made.started.wait(WAIT)
    longer = server.read_resource_f("gate://doc", timeout=WAIT)
    poll(lambda: made.reads == 2, WAIT, "a second read on the server")
    made.opened.set()
    assert short.result(WAIT) == longer.result(WAIT)
    assert server._asks.reads.joined == 0


def test_prompts_with_the_same_arguments_share_and_others_do_not(gate):
    made, server = gate
    with ThreadPoolExecutor(6) as pool:
        same = [pool.submit(server.get_prompt, "greeting", {"who": "ada"}, timeout=WAIT)
                for _ in range(4)]
        other = pool.submit(server.get_prompt, "greeting", {"who": "bob"}, timeout=WAIT)
        poll(lambda: made.reads == 2 and server._asks.reads.joined == 3, WAIT,
             "two reads on the server, three callers joined")
        made.opened.set()
        texts = [f.result(WAIT)["messages"][0]["content"]["text"] for f in same]
    assert texts == ["hello ada"] * 4
    assert other.result(WAIT)["messages"][0]["content"]["text"] == "hello bob"


def test_a_bypass_read_and_tool_calls_are_never_merged(gate):
    made, server = gate
    with ThreadPoolExecutor(4) as pool:
        calls = [pool.submit(server.call_tool, "mcp__gate__bump", {}, timeout=WAIT)
                 for _ in range(3)]
        poll(lambda: made.calls == 3, WAIT, "three calls on the server")
        made.opened.set()
        assert [c.result(WAIT).text for c in calls] == ["bumped"] * 3
    server.read_resource("gate://doc", timeout=WAIT)
    server.read_resource("gate://doc", timeout=WAIT, cache="bypass")
    assert made.reads == 2


def test_when_every_caller_leaves_the_request_is_cancelled():
    coalescer = Coalescer()
    request: Future = Future()
    sent = []

    def send():
        sent.append(1)
        return request
    one = coalescer.request_f("k", Deadline(WAIT), send, list, TimeoutError)
    two = coalescer.request_f("k", Deadline(WAIT / 2), send, list, TimeoutError)
    assert sent == [1] and coalescer.joined == 1
    one.cancel()
    assert not request.cancelled()
    two.cancel()
    assert request.cancelled()
    three = coalescer.request_f("k", Deadline(WAIT), lambda: Future(), list, TimeoutError)
    assert not three.done() and coalescer.joined == 1  # a new request, not the cancelled one
    three.cancel()


def test_an_error_reaches_every_caller_and_a_send_that_raises_too():
    coalescer = Coalescer()
    request: Future = Future()
    callers = [coalescer.request_f("k", Deadline(WAIT), lambda: request, list, TimeoutError)
               for _ in range(3)]
    request.set_exception(ValueError("no such thing"))
    for caller in callers:
        with pytest.raises(ValueError, match="no such thing"):
            caller.result(0)

    def broken():
        raise OSError("pipe closed")
    with pytest.raises(OSError, match="pipe closed"):
        coalescer.request_f("j", Deadline(WAIT), broken, list, TimeoutError).result(0)
    with pytest.raises(CancelledError):
        cancelled: Future = Future()
        cancelled.cancel()
        coalescer.request_f("c", Deadline(WAIT), lambda: cancelled, list, TimeoutError).result(0)


def test_refreshes_of_a_list_join_the_fetch_under_way_and_a_bypass_does_not():
    import logging

    from raider_sync.client.catalog import Catalog
    from raider_sync.client.filters import ToolFilter
    fetched: list[str] = []
    opened = threading.Event()

    def fetch_all(method, field, timeout, message, cache):
        fetched.append(cache)
        assert opened.wait(WAIT)
        return [{"name": "p"}]
    catalog = Catalog(key="k", name="k", log=logging.getLogger("test"),
                      tool_filter=ToolFilter(None, []), fetch_all=fetch_all, call_timeout=WAIT,
                      warnings=[], check_tool=lambda tool: None, on_changed=lambda: None)
    try:
        first = catalog.cached_list("prompts/list", "prompts", list, "refresh")
        poll(lambda: fetched == ["refresh"], WAIT, "the first fetch under way")
        joined = [catalog.cached_list("prompts/list", "prompts", list, cache)
                  for cache in ("refresh", "use", "refresh")]
        bypass = catalog.cached_list("prompts/list", "prompts", list, "bypass")
        opened.set()
        assert [f.result(WAIT) for f in [first, *joined, bypass]] == [[{"name": "p"}]] * 5
        assert fetched == ["refresh", "bypass"]  # one fetch shared by four callers
        catalog.cached_list("prompts/list", "prompts", list, "refresh").result(WAIT)
        assert fetched == ["refresh", "bypass", "refresh"]  # a kept answer is not a fetch
    finally:
        catalog.close()


def test_pings_of_a_stateless_server_share_one_discover(gate):
    made, server = gate
    assert server.era == "modern"
    sent: list[str] = []
    observe = server._session.observe

    def counting(method, params, request_id):
        sent.append(method)
        return observe(method, params, request_id) if observe is not None else None
    server._session.observe = counting
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda _: server.ping(WAIT), range(8)))
    assert 1 <= sent.count("server/discover") <= 8  # at least asked; never more than asked
    assert server._asks.reads.joined == 8 - sent.count("server/discover")
