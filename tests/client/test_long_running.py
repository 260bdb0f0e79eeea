"""A client that lives for days: interrupts, restarts, truthful status, calls that wait for a
start, ``*_f`` methods that never block, and arguments checked before anything is sent."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
import time

import psutil
import pytest

from raider_sync import (
    ConnectionClosed,
    InvalidArgument,
    McpHub,
    McpServer,
    NotConnected,
    RequestTimeout,
    ToolTimeout,
    TransportError,
    UnknownTool,
)

from conftest import FAKE_SERVER, SDK_SERVER, config_of, fake_spec, poll, run_script
from fakes.http_peers import HttpPeer

WAIT = 30


def sdk_entry(**extra) -> dict:
    return {"command": sys.executable, "args": [SDK_SERVER, "stdio"], **extra}


def sdk_server(**options) -> McpServer:
    return McpServer(config_of({"sdk": sdk_entry()}).server("sdk"), kill_grace=0.5, **options)


def seen_methods(server: McpServer) -> list[dict]:
    result = server.call_tool("mcp__fake__seen", {}, timeout=WAIT)
    return json.loads(result["content"][0]["text"])


# -- interrupts ------------------------------------------------------------------------

def test_ctrl_c_during_call_tool_cancels_the_call_on_the_server_and_propagates():
    out = run_script("""
        server = McpServer(fake_spec("plain"), kill_grace=0.5)
        server.initialize()
        waiter = interrupt_when(lambda: server._session._pending)
        try:
            server.call_tool("mcp__fake__sleep", {}, timeout=300)
            interrupted = False
        except KeyboardInterrupt:
            interrupted = True
        waiter.join()
        def cancelled():
            seen = json.loads(server.call_tool("mcp__fake__seen", {})["content"][0]["text"])
            return [m for m in seen if m["method"] == "notifications/cancelled"]
        notes = poll(cancelled, 10, "notifications/cancelled")
        echo = server.call_tool("mcp__fake__echo", {"message": "still here"})
        print(json.dumps({"interrupted": interrupted, "notes": notes, "status": server.status,
                          "echo": echo["content"][0]["text"]}))
        server.stop()
    """)
    assert out["interrupted"] is True
    assert out["notes"][0]["params"]["requestId"] is not None
    assert out["status"] == "connected" and out["echo"] == "still here"


def test_ctrl_c_during_a_call_to_a_real_server_leaves_it_usable():
    out = run_script("""
        server = McpServer(config_of({"sdk": SDK}).server("sdk"), kill_grace=0.5)
        server.initialize()
        steps = []
        waiter = interrupt_when(lambda: steps)
        try:
            server.call_tool("mcp__sdk__slow", {"seconds": 60, "steps": 60}, timeout=300,
                             on_progress=lambda *step: steps.append(step))
            interrupted = False
        except KeyboardInterrupt:
            interrupted = True
        waiter.join()
        # the stateless era keeps a subscriptions/listen open: count the tool calls only
        pending = sum(1 for entry in server._session._pending.values()
                      if entry.method == "tools/call")
        echo = server.call_tool("mcp__sdk__echo", {"message": "after"})["content"][0]["text"]
        print(json.dumps({"interrupted": interrupted, "pending": pending, "echo": echo}))
        server.stop()
    """)
    assert out == {"interrupted": True, "pending": 0, "echo": "after"}


def test_a_storm_of_ctrl_c_loses_no_message():
    """SIGINT at random moments while the main thread makes calls and a second thread makes
    calls too: every call that was not interrupted gets its own answer, the other thread
    loses none (no lock is left held, no line half-written), no line is garbled. The storm's
    interrupts land while the main thread is inside the library only: one landing in this
    script's own bookkeeping (counting an interrupt, joining its threads, at exit) would test
    the script, not the library."""
    out = run_script("""
        import logging, random
        def interrupt(signum, frame):
            # only while the main thread is inside the library (a call under way)
            while frame is not None:
                if "raider_sync" in frame.f_code.co_filename:
                    raise KeyboardInterrupt
                frame = frame.f_back
        signal.signal(signal.SIGINT, interrupt)
        warnings = []
        class Count(logging.Handler):
            def emit(self, record):
                warnings.append(record.getMessage())
        logging.getLogger("raider_sync").addHandler(Count(logging.WARNING))
        server = McpServer(fake_spec("plain"), kill_grace=0.5, telemetry=False)
        server.initialize()
        stop = threading.Event()
        other = {"ok": 0, "bad": []}
        def second():
            n = 0
            while not stop.is_set():
                n += 1
                text = server.call_tool("mcp__fake__echo", {"message": f"o{n}"}, timeout=20).text
                if text == f"o{n}":
                    other["ok"] += 1
                else:
                    other["bad"].append(text)
        def storm():
            rng = random.Random(7)
            while not stop.is_set():
                time.sleep(rng.random() * 0.004)
                signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
        threads = [threading.Thread(target=second), threading.Thread(target=storm)]
        for thread in threads:
            thread.start()
        done = interrupted = 0
        wrong = []
        ends = time.monotonic() + 3
        while time.monotonic() < ends:
            try:
                text = server.call_tool("mcp__fake__echo", {"message": f"m{done}"},
                                        timeout=20).text
                if text != f"m{done}":
                    wrong.append(text)
                done += 1
            except KeyboardInterrupt:
                interrupted += 1
        stop.set()
        for thread in threads:
            while thread.is_alive():
                try:
                    thread.join(30)
                except KeyboardInterrupt:  # the storm's last one
                    pass
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        final = server.call_tool("mcp__fake__echo", {"message": "final"}).text
        print(json.dumps({"done": done, "interrupted": interrupted, "wrong": wrong,
                          "other": other, "final": final, "status": server.status,
                          "warnings": [w for w in warnings if "not JSON" in w]}))
        server.stop()
    """, timeout=90)
    assert out["done"] > 0 and out["interrupted"] > 0
    assert out["wrong"] == [] and out["other"]["bad"] == [] and out["other"]["ok"] > 0
    assert out["warnings"] == []
    assert out["final"] == "final" and out["status"] == "connected"


def test_ctrl_c_during_hub_startup_stops_the_servers_that_had_connected():
    out = run_script("""
        import psutil
        hub = McpHub(config_of({"sdk": SDK, "silent": SILENT}), kill_grace=0.5,
                     startup_timeout_ms=60000)
        pids = []
        waiter = interrupt_when(lambda: hub.client("sdk").status == "connected"
                                and pids.append(hub.client("sdk").pid) is None)
        try:
            with hub:
                entered = True
        except KeyboardInterrupt:
            entered = False
        waiter.join()
        print(json.dumps({"entered": entered, "pids": pids, "statuses": hub.statuses(),
                          "children": [p.pid for p in psutil.Process().children(True)]}))
    """)
    assert out["entered"] is False
    assert out["statuses"] == {"sdk": "stopped", "silent": "stopped"}
    assert out["children"] == []
    assert not psutil.pid_exists(out["pids"][0]) or \
        psutil.Process(out["pids"][0]).status() == psutil.STATUS_ZOMBIE


def test_ctrl_c_during_a_servers_with_start_stops_it():
    out = run_script("""
        import psutil
        server = McpServer(config_of({"silent": SILENT}).server("silent"), kill_grace=0.5,
                           startup_timeout_ms=60000)
        waiter = interrupt_when(lambda: server.pid)
        try:
            with server:
                entered = True
        except KeyboardInterrupt:
            entered = False
        waiter.join()
        print(json.dumps({"entered": entered, "status": server.status,
                          "children": [p.pid for p in psutil.Process().children(True)]}))
    """)
    assert out == {"entered": False, "status": "stopped", "children": []}


# -- start and stop races ------------------------------------------------------------

def test_start_f_then_stop_at_once_never_raises():
    for _ in range(25):
        server = McpServer(fake_spec("plain"), kill_grace=0.2)
        server.start_f()
        server.stop()  # raised "cannot join thread before it is started" now and then
        assert server.status == "stopped"
        assert server.start_f().result(WAIT) is server


# -- status follows what happens -----------------------------------------------------

def test_status_is_failed_as_soon_as_a_call_fails_with_connection_closed():
    server = McpServer(fake_spec("plain"), kill_grace=0.2)
    with server:
        with pytest.raises(ConnectionClosed):
            server.call_tool("mcp__fake__crash", {}, timeout=WAIT)
        assert server.status == "failed"  # no lag: said before the caller woke
        assert "exploded" in server.reason
        with pytest.raises(NotConnected, match=r"\(failed: .*exploded"):
            server.call_tool("mcp__fake__echo", {"message": "x"}, timeout=WAIT)


def test_a_real_server_killed_mid_call_reads_failed_at_once():
    server = sdk_server()
    with server:
        future = server.call_tool_f("mcp__sdk__slow", {"seconds": 30}, timeout=WAIT)
        os.killpg(server.pid, signal.SIGKILL)
        with pytest.raises(ConnectionClosed):
            future.result(WAIT)
        assert server.status == "failed"
        with pytest.raises(NotConnected, match="failed"):
            server.call_tool("mcp__sdk__echo", {"message": "x"})


def test_a_stopped_servers_reason_carries_its_last_stderr_line():
    server = McpServer(fake_spec("chatty"), kill_grace=0.2)
    server.initialize(WAIT)
    last = server.stderr_tail[-1]
    server.stop()
    assert server.reason == f"stopped by the client (last stderr line: {last})"


def test_a_draining_stop_answers_the_calls_already_sent_and_refuses_new_ones():
    server = sdk_server()
    server.initialize(WAIT)
    running = threading.Event()
    slow = server.call_tool_f("mcp__sdk__slow", {"seconds": 1, "steps": 4}, timeout=WAIT,
                              on_progress=lambda *_: running.set())
    assert running.wait(WAIT)
    stopper = threading.Thread(target=server.stop, kwargs={"drain": WAIT, "reason": "retired"},
                               name="test-draining-stop")
    stopper.start()
    try:
        def refusal():
            error = server.call_tool_f("mcp__sdk__echo", {"message": "x"}).exception(WAIT)
            return error if isinstance(error, NotConnected) else None
        refused = poll(refusal, WAIT, "a call refused while the stop drains")
        assert str(refused) == "MCP server 'sdk' is not connected (stopping: retired)"
        assert slow.result(WAIT).text == "slept 1.0"  # answered, then stopped
    finally:
        stopper.join(WAIT)
    assert server.status == "stopped" and server.reason.startswith("retired")
    with pytest.raises(InvalidArgument, match="drain"):
        server.stop(drain=-1)


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_an_unreachable_http_server_reads_degraded_until_it_answers_again(era):
    peer = HttpPeer.sdk("--json").start()
    statuses = []
    try:
        entry = {"type": "http", "url": peer.url, "protocol": era}
        hub = McpHub(config_of({"peer": entry}), kill_grace=0.2,
                     on_status=lambda s: statuses.append(s.status))
        with hub:
            server = hub.client("peer")
            assert server.call_tool("mcp__peer__echo", {"message": "up"})["content"]
            peer.kill()  # gone at once (a graceful stop waits 5 s for the open listen stream)
            with pytest.raises(TransportError):
                server.call_tool("mcp__peer__echo", {"message": "down"}, timeout=10)
            assert hub.statuses() == {"peer": "degraded"}
            # the stateless era's open listen stream may be the first to find it gone
            assert "cannot connect" in server.reason if era == "legacy" else server.reason
            with pytest.raises(TransportError):
                server.ping(5)
            assert server.status == "degraded"
            peer.start()
            server.ping(10)
            assert hub.statuses() == {"peer": "connected"} and server.reason is None
            assert server.call_tool("mcp__peer__echo", {"message": "back"})["content"]
        assert "degraded" in statuses
    finally:
        peer.close()


def test_an_unanswered_ping_reads_degraded():
    server = sdk_server()
    with server:
        with paused(server.pid):
            with pytest.raises(RequestTimeout):
                server.ping(0.5)
            assert server.status == "degraded" and "ping" in server.reason
        server.ping(WAIT)
        assert server.status == "connected"


# -- restarts ------------------------------------------------------------------------

def test_restart_starts_a_new_process_and_calls_work_again():
    statuses = []
    server = sdk_server(on_status=lambda s: statuses.append(s.status))
    with server:
        first = server.pid
        assert server.restart(WAIT) is server and server.status == "connected"
        assert server.pid != first and not _running(first)
        assert server.call_tool("mcp__sdk__add", {"a": 1, "b": 2})["content"][0]["text"] == "3"
    assert statuses == ["starting", "connected", "starting", "connected", "stopped"]


def test_start_f_and_initialize_after_a_failure_start_anew():
    server = McpServer(fake_spec("plain"), kill_grace=0.2)
    with server:
        old = server.start_f()
        with pytest.raises(ConnectionClosed):
            server.call_tool("mcp__fake__crash", {})
        assert server.start_f() is not old
        assert server.start_f().result(WAIT).status == "connected"
        with pytest.raises(ConnectionClosed):
            server.call_tool("mcp__fake__crash", {})
        assert server.initialize(WAIT).status == "connected"
        assert server.call_tool("mcp__fake__echo", {"message": "x"})["content"][0]["text"] == "x"


def test_a_stopped_server_restarts_and_the_hub_restarts_by_name():
    with McpHub(config_of({"sdk": sdk_entry()}), kill_grace=0.5) as hub:
        server = hub.client("sdk")
        server.stop()
        assert server.start_f().result(WAIT).status == "stopped"  # a stop holds...
        assert hub.restart("sdk", WAIT) is server and server.status == "connected"  # ...till this
        assert hub.call_tool("mcp__sdk__echo", {"message": "again"})["content"]


def test_the_restart_policy_restarts_a_crashed_server_on_the_next_call_up_to_its_cap(caplog):
    spec = config_of({"fake": {"command": sys.executable, "args": [FAKE_SERVER, "chatty"],
                               "restart": {"maxRestarts": 2, "backoffMs": 0}}}).server("fake")
    statuses = []
    server = McpServer(spec, kill_grace=0.2, on_status=lambda s: statuses.append(s.status))
    with server:
        for _ in range(2):
            with pytest.raises(ConnectionClosed):
                server.call_tool("mcp__fake__crash", {})
            echo = server.call_tool("mcp__fake__echo", {"message": "back"}, timeout=WAIT)
            assert echo["content"][0]["text"] == "back"
        with pytest.raises(ConnectionClosed):
            server.call_tool("mcp__fake__crash", {})
        with pytest.raises(NotConnected, match=r"failed: .*exploded.*gave up after 2 restarts"):
            server.call_tool("mcp__fake__echo", {"message": "x"})
    assert statuses == ["starting", "connected"] + ["failed", "starting", "connected"] * 2 + [
        "failed", "stopped"]
    assert [r for r in caplog.messages if "restart 1 of 2" in r]


def test_the_restart_policy_waits_its_backoff():
    server = McpServer(fake_spec("plain"), kill_grace=0.2, restart={"backoffMs": 600000})
    with server:
        with pytest.raises(ConnectionClosed):
            server.call_tool("mcp__fake__crash", {})
        with pytest.raises(NotConnected, match=r"restart 1 of 3 in \d"):
            server.call_tool("mcp__fake__echo", {})
        assert server.status == "failed"


# -- calls during a start ------------------------------------------------------------

def test_a_call_made_while_the_server_starts_waits_for_it():
    server = sdk_server()
    try:
        server.start_f()
        assert server.status == "starting"
        result = server.call_tool("mcp__sdk__echo", {"message": "waited"}, timeout=WAIT)
        assert result["content"][0]["text"] == "waited"
        server.restart_f()
        assert server.status == "starting"
        future = server.call_tool_f("mcp__sdk__echo", {"message": "again"}, timeout=WAIT)
        assert future.result(WAIT)["content"][0]["text"] == "again"
    finally:
        server.stop()


def test_a_call_waiting_for_a_start_is_bounded_by_its_own_timeout():
    server = McpServer(fake_spec("silent"), startup_timeout_ms=60000, kill_grace=0.2)
    try:
        server.start_f()
        started = time.monotonic()
        with pytest.raises(ToolTimeout, match="still starting"):
            server.call_tool("mcp__fake__echo", {}, timeout=0.5)
        assert time.monotonic() - started < 5
    finally:
        server.stop()


def test_calls_during_a_reload_that_changes_a_server_wait_for_the_new_one():
    config = {"sdk": sdk_entry(env={"GEN": "1"})}
    with McpHub(config_of(config), kill_grace=0.5) as hub:
        errors = []
        stop = threading.Event()

        def caller():
            while not stop.is_set():
                try:
                    hub.call_tool("mcp__sdk__echo", {"message": "m"}, timeout=WAIT)
                except Exception as exc:  # noqa: BLE001 - asserted below
                    errors.append(exc)
        threads = [threading.Thread(target=caller) for _ in range(4)]
        for thread in threads:
            thread.start()
        try:
            result = hub.reload(config_of({"sdk": sdk_entry(env={"GEN": "2"})}))
        finally:
            hub.start_f().result(WAIT)
            stop.set()
            for thread in threads:
                thread.join(WAIT)
        assert result.started == ["sdk"]
        # the retired client answers the calls in flight before it stops
        assert errors == []


# -- *_f methods return at once ------------------------------------------------------

def test_call_tool_f_over_http_json_answers_runs_calls_concurrently():
    peer = HttpPeer.sdk("--json").start()
    try:
        with McpServer(peer.spec(), kill_grace=0.2) as server:
            started = time.monotonic()
            futures = [server.call_tool_f("mcp__peer__slow", {"seconds": 3, "steps": 1},
                                          timeout=WAIT) for _ in range(3)]
            assert not any(f.done() for f in futures)  # a blocking POST would have finished
            assert [f.result(WAIT)["content"][0]["text"] for f in futures] == ["slept 3.0"] * 3
            # one after the other they take 9 s at least
            assert time.monotonic() - started < 7
    finally:
        peer.close()


def test_call_tool_f_to_a_stuck_http_server_returns_at_once():
    peer = HttpPeer.sdk("--json").start()
    try:
        with McpServer(peer.spec(), kill_grace=0.2) as server:
            with paused(peer.proc.pid):
                future = server.call_tool_f("mcp__peer__echo", {"message": "x"}, timeout=1)
                assert not future.done()  # before: it came back at its timeout, failed
                with pytest.raises(ToolTimeout):
                    future.result(WAIT)
    finally:
        peer.close()


def test_a_big_argument_to_a_stopped_stdio_server_does_not_block_call_tool_f():
    server = sdk_server()
    with server:
        with paused(server.pid):  # a half-written line gets the server killed
            future = server.call_tool_f("mcp__sdk__echo", {"message": "x" * 200_000}, timeout=1)
            assert not future.done()
            with pytest.raises((ToolTimeout, ConnectionClosed)):
                future.result(WAIT)


def test_call_tool_f_to_a_stopped_server_is_already_failed():
    server = McpServer(fake_spec("plain"), kill_grace=0.2)
    server.initialize(WAIT)
    server.stop()
    future = server.call_tool_f("mcp__fake__echo", {"message": "x" * 200_000}, timeout=60)
    assert isinstance(future.exception(0), NotConnected)


# -- arguments, timeouts and names ---------------------------------------------------

def test_arguments_as_a_json_string_are_accepted_and_others_refused_by_name(everything_spec):
    with McpHub(config_of({"everything": {"command": everything_spec.command,
                                          "args": everything_spec.args}})) as hub:
        server = hub.client("everything")
        result = server.call_tool("mcp__everything__echo", '{"message": "from json"}')
        assert "from json" in result["content"][0]["text"]
        assert "hub" in hub.call_tool("mcp__everything__echo", '{"message": "hub"}')[
            "content"][0]["text"]
        for bad, what in ((["message"], "got list"), ('["message"]', "an array"),
                          ("{not json", "not JSON"), (7, "got int")):
            with pytest.raises(InvalidArgument, match=f"arguments of .*{what}"):
                server.call_tool("mcp__everything__echo", bad)
            with pytest.raises(InvalidArgument, match="arguments"):
                hub.call_tool("mcp__everything__echo", bad)
            assert isinstance(server.call_tool_f("mcp__everything__echo", bad).exception(0),
                              InvalidArgument)
        for timeout in (0, -1, float("nan"), "5"):
            with pytest.raises(InvalidArgument, match="timeout"):
                server.call_tool("mcp__everything__echo", {"message": "x"}, timeout=timeout)
            with pytest.raises(InvalidArgument, match="timeout"):
                hub.call_tool("mcp__everything__echo", {"message": "x"}, timeout=timeout)
            with pytest.raises(InvalidArgument, match="timeout"):
                server.get_prompt("simple-prompt", timeout=timeout)


def test_an_unknown_tool_suggests_the_closest_and_lists_a_few(everything_spec):
    with McpServer(everything_spec) as server:
        with pytest.raises(UnknownTool) as info:
            server.call_tool("mcp__everything__ecoh", {})
        message = str(info.value)
        assert "did you mean 'mcp__everything__echo'?" in message
        assert message.count("mcp__everything__") <= 1 + 1 + 5 and "more)" in message
    with McpHub(config_of({"everything": {"command": everything_spec.command,
                                          "args": everything_spec.args}})) as hub:
        with pytest.raises(UnknownTool, match="did you mean 'mcp__everything__get-sum'"):
            hub.call_tool("get_sum", {})


def test_get_prompt_is_bounded_by_the_call_timeout():
    server = McpServer(config_of({"sdk": sdk_entry(timeout=500)}).server("sdk"), kill_grace=0.5)
    with server:
        assert server.get_prompt("greet", {"name": "Ann"})["messages"]
        with paused(server.pid):
            started = time.monotonic()
            with pytest.raises(RequestTimeout):
                server.get_prompt("greet", {"name": "Ann"})
            with pytest.raises(RequestTimeout):
                server.get_prompt("greet", {"name": "Ann"}, timeout=0.3)
            assert time.monotonic() - started < 5  # not the 600 s default


@contextlib.contextmanager
def paused(pid: int):
    """The process group of ``pid`` stopped (SIGSTOP) for the block, then resumed."""
    os.killpg(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        try:
            os.killpg(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
