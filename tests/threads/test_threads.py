"""The thread economy: one thread per idle stdio server, one per idle HTTP server, none left
after a stop, the shared timer and idle pool threads that end by themselves (after a burst
too), and a long line held within its bound."""
from __future__ import annotations

import sys
import threading
import time
from concurrent.futures import CancelledError

import pytest

from raider_sync import McpHub, McpServer, ToolServer
from raider_sync.threads import timer
from raider_sync.threads.workers import Lane, Workers
from raider_sync.transports.base import LineSplitter, MessageTooLong
from raider_sync.transports.stdio import StdioTransport

from conftest import SDK_SERVER, config_of, poll
from fakes.http_peers import HttpPeer

SERVERS = 3
WAIT = 30.0


def threads_of(prefixes: list[str]) -> list[str]:
    return sorted(t.name for t in threading.enumerate()
                  if any(t.name.startswith(prefix) for prefix in prefixes))


def test_an_idle_stdio_server_keeps_one_thread_and_a_stop_leaves_none():
    names = [f"idle{i}" for i in range(SERVERS)]
    config = config_of({name: {"command": sys.executable, "args": [SDK_SERVER, "stdio"]}
                        for name in names})
    prefixes = [f"raider-{name}-" for name in names]
    with McpHub(config, kill_grace=1) as hub:
        hub.start()
        for name in names:  # work that makes pool threads: calls, a notification's dispatch
            hub.call_tool(f"mcp__{name}__echo", {"message": "hi"})
        # idle: the pools' threads end after a second without work; the reader stays
        idle = poll(lambda: (lambda found: found if len(found) == SERVERS else None)(
            threads_of(prefixes)), WAIT, "one thread per idle server")
        assert idle == [f"raider-{name}-reader" for name in names]
        assert hub.call_tool(f"mcp__{names[0]}__echo", {"message": "again"})  # still usable
    assert threads_of(prefixes) == []  # stop joins what each server owns


def test_an_idle_http_server_keeps_its_listen_thread_only_after_a_burst():
    peer = HttpPeer.sdk().start()  # every answer an event stream, read by a stream worker
    server = McpServer(peer.spec("burst"), protocol="legacy")
    try:
        server.start_f().result(WAIT)
        assert server.status == "connected", server.reason
        calls = [server.call_tool_f("mcp__burst__slow", {"seconds": 1, "steps": 1}, timeout=WAIT)
                 for _ in range(24)]
        poll(lambda: len(threads_of(["raider-burst-stream"])) > 1, WAIT,
             "streams read by several workers at once")
        for call in calls:
            assert call.result(WAIT)["content"][0]["text"] == "slept 1.0"
        # idle: the session's and the stream readers' threads end; the GET stream stays
        poll(lambda: threads_of(["raider-burst-"]) == ["raider-burst-listen"], WAIT,
             "one thread for the idle HTTP server")
        assert server.call_tool("mcp__burst__echo", {"message": "again"})  # still usable
    finally:
        server.stop()
        peer.close()
    assert threads_of(["raider-burst-"]) == []


def test_an_idle_tool_server_keeps_no_thread_after_a_burst():
    barrier = threading.Barrier(8, timeout=WAIT)
    ran_on: set[str] = set()

    def meet() -> str:
        ran_on.add(threading.current_thread().name)
        return str(barrier.wait())

    with ToolServer("burst tools") as tools:  # its pool: 8 threads
        tools.add_tool("meet", meet)
        tools.add_tool("echo", lambda message: message)
        calls = [tools.call_tool_f("meet") for _ in range(8)]
        assert sorted(call.result(WAIT)["content"][0]["text"] for call in calls) == [
            str(n) for n in range(8)]
        assert len(ran_on) == 8 and all(name.startswith(f"raider-{tools.key}-tool")
                                        for name in ran_on)
        poll(lambda: not threads_of([f"raider-{tools.key}-"]), WAIT, "the idle tool threads gone")
        assert tools.call_tool("echo", {"message": "again"})["content"][0]["text"] == "again"
    assert threads_of([f"raider-{tools.key}-"]) == []


def test_the_timer_thread_ends_once_nothing_is_scheduled():
    fired = threading.Event()
    handle = timer.at(time.monotonic() + 0.05, fired.set)
    assert timer.timer.running
    assert fired.wait(WAIT) and handle[2] is None
    dropped = timer.at(time.monotonic() + 3600, fired.clear)
    timer.cancel(dropped)
    timer.cancel(dropped)  # twice is fine
    poll(lambda: not timer.timer.running, WAIT, "the idle timer thread gone")
    assert fired.is_set()  # the cancelled action never ran


def test_timer_actions_run_in_deadline_order():
    ran: list[int] = []
    done = threading.Event()
    now = time.monotonic()
    for n in (3, 1, 2):
        timer.at(now + n * 0.02, lambda n=n: ran.append(n))
    timer.at(now + 0.1, done.set)
    assert done.wait(WAIT)
    assert ran == [1, 2, 3]


def test_pool_threads_end_when_idle_and_come_back_for_new_work():
    pool = Workers(1, "test-idle-pool")
    try:
        order: list[int] = []
        futures = [pool.submit(order.append, n) for n in range(20)]
        for future in futures:
            future.result(WAIT)
        assert order == list(range(20))  # one thread: the order submitted
        poll(lambda: not threads_of(["test-idle-pool"]), WAIT, "the idle pool thread gone")
        assert pool.submit(lambda: 42).result(WAIT) == 42
    finally:
        pool.shutdown()
    assert not threads_of(["test-idle-pool"])


def test_a_pool_shutdown_cancels_queued_work_and_refuses_more():
    pool = Workers(1, "test-shut-pool")
    started, release = threading.Event(), threading.Event()
    running = pool.submit(lambda: started.set() or release.wait(WAIT))
    assert started.wait(WAIT)
    queued = pool.submit(lambda: "never")
    pool.shutdown(wait=False, cancel_futures=True)
    release.set()
    assert running.result(WAIT) is True
    with pytest.raises(CancelledError):
        queued.result(WAIT)
    with pytest.raises(RuntimeError):
        pool.submit(lambda: None)
    pool.shutdown()
    assert not threads_of(["test-shut-pool"])


def test_lanes_on_one_pool_keep_their_bounds_and_order_and_never_wait_for_each_other():
    pool = Workers(3, "test-lane-pool")
    wide, narrow = Lane(pool, 2), Lane(pool, 1)
    release = threading.Event()
    lock = threading.Lock()
    running, most = [0], [0]

    def hold() -> None:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        release.wait(WAIT)
        with lock:
            running[0] -= 1

    try:
        held = [wide.submit(hold) for _ in range(5)]
        poll(lambda: running[0] == 2, WAIT, "the wide lane at its bound")
        order: list[int] = []
        # the wide lane is full and has work queued: the narrow one runs anyway, in order
        assert [narrow.submit(order.append, n).result(WAIT) for n in range(3)] == [None] * 3
        futures = [narrow.submit(order.append, n) for n in range(3, 30)]
        futures[-1].result(WAIT)
        assert order == list(range(30))
        assert running[0] == 2  # the wide lane's queued tasks still wait for its own
        release.set()
        for future in held:
            assert future.result(WAIT) is None
        assert most[0] == 2
        assert len(threads_of(["test-lane-pool"])) <= 3
        queued = [narrow.submit(release.wait, WAIT) for _ in range(2)]
        narrow.shutdown(cancel_futures=True)
        with pytest.raises(RuntimeError):
            narrow.submit(lambda: None)
        assert wide.submit(lambda: 42).result(WAIT) == 42  # one lane's end is not the pool's
        assert all(future.cancelled() or future.result(WAIT) for future in queued)
        poll(lambda: not threads_of(["test-lane-pool"]), WAIT, "the idle lane threads gone")
    finally:
        release.set()
        pool.shutdown()
    with pytest.raises(RuntimeError):
        wide.submit(lambda: None)  # the pool is shut down
    assert not threads_of(["test-lane-pool"])


def test_posted_work_runs_in_order_with_no_future_and_what_it_raises_is_logged(caplog):
    """Lane.post: work whose outcome nobody reads (a session's sends and handlers) runs in
    the lane's order as submitted work does, makes no future, and an error it raises is
    logged instead of kept in a future nobody looks at."""
    pool = Workers(2, "test-post-pool")
    lane = Lane(pool, 1)
    order: list[int] = []
    done = threading.Event()

    def fail() -> None:
        raise ValueError("posted work failed")

    def leave() -> None:
        raise SystemExit("a handler that exits")  # kept, as a future would: the lane goes on

    try:
        with caplog.at_level("ERROR", logger="raider_sync.threads"):
            for n in range(20):
                assert lane.post(order.append, n) is None
            lane.post(fail)
            lane.post(leave)
            lane.post(done.set)
            assert done.wait(WAIT)
        assert order == list(range(20))  # in order, and the failure stopped nothing after it
        failed = [str(r.exc_info[1]) for r in caplog.records if r.name == "raider_sync.threads"]
        assert failed == ["posted work failed", "a handler that exits"]
        release, running = threading.Event(), threading.Event()
        lane.post(lambda: (running.set(), release.wait(WAIT)))
        assert running.wait(WAIT)
        lane.post(order.append, 98)  # queued behind the running one
        lane.shutdown(cancel_futures=True)  # a queued post has no future to cancel: dropped
        with pytest.raises(RuntimeError):
            lane.post(order.append, 99)
        release.set()
    finally:
        pool.shutdown()
    assert not threads_of(["test-post-pool"])
    assert order == list(range(20))


def test_a_line_over_the_limit_is_refused_with_at_most_the_limit_held():
    lines = LineSplitter(1000)
    for _ in range(9):
        assert lines.feed(b"x" * 100) == []
    with pytest.raises(MessageTooLong):
        lines.feed(b"x" * 200)
    assert len(lines._held) == 0  # what was held is let go


def test_a_log_line_with_no_end_comes_out_in_bounded_pieces():
    lines = LineSplitter(100, pieces=True)
    pieces = [piece for _ in range(31) for piece in lines.feed(b"y" * 70)]
    assert len(lines._held) <= 100
    rest = lines.rest()
    assert all(piece == "y" * 100 for piece in pieces)
    assert sum(map(len, pieces + rest)) == 31 * 70 and len(rest) == 1


def test_lines_cut_anywhere_come_out_whole_and_decoded():
    data = 'première\n{"a": 1}\r\n'.encode() + b"\xff?\n"
    for cut in range(len(data) + 1):
        lines = LineSplitter(64)
        got = lines.feed(data[:cut]) + lines.feed(data[cut:])
        assert got == ["première", '{"a": 1}\r', b"\xff?"]


def test_the_reader_delivers_a_last_line_without_newline_then_the_last_words():
    got: list = []
    ended: list[BaseException] = []
    done = threading.Event()
    transport = StdioTransport(
        "sh", ["-c", 'printf \'{"jsonrpc":"2.0","method":"a"}\\n{"jsonrpc":"2.0","method":"b"}\'; '
               'echo "last words" >&2'], name="tail", kill_grace=1)
    try:
        transport.start(got.append, lambda error: (ended.append(error), done.set()))
        assert done.wait(WAIT)
        assert [m["method"] for m in got] == ["a", "b"]
        assert "last words" in str(ended[0])
        assert threads_of(["raider-tail-"]) in ([], ["raider-tail-reader"])  # one, ending
    finally:
        transport.close()
    assert threads_of(["raider-tail-"]) == []
