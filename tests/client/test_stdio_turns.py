"""Who reads a stdio server's stdout: a blocking call alone in flight reads its answer on its
own thread; everything else (futures, concurrent callers, what the server sends on its own,
what a caller must not take) goes to the reader thread, in order, and nothing is lost, not
even to a storm of Ctrl-C."""
from __future__ import annotations

import threading

import pytest

from raider_sync import ConnectionClosed, McpServer, ToolTimeout
from raider_sync.transports import stdout as stdout_module

from conftest import answers_from_threads, poll, run_script

WAIT = 30.0


@pytest.fixture
def connected(started):
    """``connected(mode, **options)``: a started McpServer on the fake, without telemetry."""
    def start(mode: str = "plain", **options) -> McpServer:
        server = started(mode, kill_grace=0.5, telemetry=False, **options)
        assert server.status == "connected", server.reason
        return server
    return start


def settled_on(server: McpServer) -> list[str]:
    """The names of the threads that settle the server's requests, from now on."""
    names: list[str] = []

    def observe(method, params, request_id):
        return lambda future: names.append(threading.current_thread().name)
    server._session.observe = observe
    return names


def test_a_blocking_call_takes_its_answer_on_the_callers_thread(connected, monkeypatch):
    # stdout lent for good: on a loaded machine the time between two calls may pass the lend
    monkeypatch.setattr(stdout_module, "LEND_SECONDS", 3600.0)
    server = connected()
    names = settled_on(server)
    for n in range(5):
        assert server.call_tool("mcp__fake__echo", {"message": f"m{n}"}).text == f"m{n}"
    # the first may find the reader holding stdout, and the answer there before the reader
    # let go; the calls right after it read their own
    assert names[1:] == [threading.current_thread().name] * 4


def test_a_blocking_call_on_another_thread_takes_its_answer_there_too(connected, monkeypatch):
    monkeypatch.setattr(stdout_module, "LEND_SECONDS", 3600.0)  # as above
    server = connected()
    names = settled_on(server)
    texts: list[str] = []
    worker = threading.Thread(target=lambda: texts.extend(
        server.call_tool("mcp__fake__echo", {"message": f"w{n}"}).text for n in range(5)),
        name="test-worker")
    worker.start()
    worker.join(WAIT)
    assert texts == [f"w{n}" for n in range(5)]
    assert names[1:] == ["test-worker"] * 4


def test_a_future_is_answered_by_the_reader_right_after_a_blocking_call(connected, monkeypatch):
    monkeypatch.setattr(stdout_module, "LEND_SECONDS", 3600.0)  # lent for good, but for a send
    server = connected()
    names = settled_on(server)
    server.call_tool("mcp__fake__echo", {"message": "first"})
    # while stdout is left to the next caller, the send brings the reader back
    assert server.call_tool_f("mcp__fake__echo", {"message": "f"}).result(WAIT).text == "f"
    assert names[1] == "raider-fake-reader"


def test_a_notification_before_the_answer_reaches_its_handler_and_the_caller_its_answer(connected):
    logged: list = []
    server = connected(on_log=lambda srv, level, logger, data: logged.append(data))
    for n in range(5):  # on the main thread the caller leaves the two lines to the reader
        assert server.call_tool("mcp__fake__log", {"data": f"d{n}"}).text == "logged"
    poll(lambda: len(logged) == 5, WAIT, "five log messages")
    assert logged == [f"d{n}" for n in range(5)]
    assert server.call_tool("mcp__fake__echo", {"message": "after"}).text == "after"


def test_lines_that_are_not_json_before_each_answer_are_skipped_by_a_leading_caller(connected):
    server = connected("garbage")
    for n in range(3):
        assert server.call_tool("mcp__fake__echo", {"message": f"g{n}"}).text == f"g{n}"
    assert server.status == "connected"


def test_an_answer_larger_than_one_read_comes_whole(connected):
    server = connected(max_output_tokens=10_000_000)
    result = server.call_tool("mcp__fake__big", {}, timeout=WAIT)
    assert len(result.text) == 20 * 1024 * 1024
    assert server.call_tool("mcp__fake__echo", {"message": "small"}).text == "small"


def test_callers_on_many_threads_get_their_own_answers(connected):
    server = connected()
    answers = answers_from_threads(
        6, 20, lambda message: server.call_tool("mcp__fake__echo", {"message": message}).text)
    assert len(answers) == 120 and all(text == message for message, text in answers.items())


def test_what_the_server_sends_on_its_own_after_a_call_is_read(connected):
    changed = threading.Event()
    server = connected("collide", on_tools_changed=lambda srv: changed.set())
    server.call_tool("mcp__fake__announce", {})  # answers, then announces a new tool list
    assert changed.wait(WAIT)


def test_a_server_that_dies_while_a_caller_reads_fails_the_call_with_its_last_words(connected):
    server = connected()
    with pytest.raises(ConnectionClosed, match="exploded"):
        server.call_tool("mcp__fake__crash", {}, timeout=WAIT)
    poll(lambda: server.status == "failed", WAIT, "status failed")


def test_a_stop_from_another_thread_ends_a_call_that_reads_for_its_answer(connected):
    server = connected("ignore-eof")
    stopper = threading.Thread(target=lambda: (
        poll(lambda: server._session._pending, WAIT, "the call in flight"), server.stop()))
    stopper.start()
    with pytest.raises(ConnectionClosed):
        server.call_tool("mcp__fake__sleep", {}, timeout=WAIT)
    stopper.join(WAIT)
    assert server.status == "stopped"


def test_the_reader_takes_stdout_back_once_callers_pause(connected, monkeypatch):
    monkeypatch.setattr(stdout_module, "LEND_SECONDS", 0.05)
    server = connected()
    stdout = server._session.transport._stdout
    server.call_tool("mcp__fake__echo", {"message": "x"})
    poll(lambda: stdout._reader_holds, WAIT, "the reader holding stdout again")
    monkeypatch.setattr(stdout_module, "LEND_SECONDS", 3600.0)  # and now leaving it for good
    names = settled_on(server)
    # the next caller asks for stdout before it sends: the reader lets go and leaves the
    # answer to it, and the one after it reads its answer itself again
    assert server.call_tool("mcp__fake__echo", {"message": "y"}).text == "y"
    assert server.call_tool("mcp__fake__echo", {"message": "z"}).text == "z"
    assert names == [threading.current_thread().name] * 2
    assert not stdout._reader_holds


def test_a_caller_whose_write_waits_leaves_stdout_to_the_reader_meanwhile(connected, monkeypatch):
    """A server busy writing a long answer reads its stdin only once that answer is read. A
    caller whose request does not fit the pipe must not keep stdout from the reader thread
    while it waits for room: both would wait until the caller's deadline."""
    monkeypatch.setattr(stdout_module, "LEND_SECONDS", 3600.0)  # no lending runs out
    server = connected(max_output_tokens=10_000_000)
    big = server.call_tool_f("mcp__fake__big", {}, timeout=WAIT)  # 20 MB: the server blocks
    message = "s" * (4 * 1024 * 1024)  # far more than a pipe holds
    assert server.call_tool("mcp__fake__echo", {"message": message}, timeout=WAIT).text == message
    assert len(big.result(WAIT).text) == 20 * 1024 * 1024


def test_a_stop_ends_the_reader_while_stdout_is_lent_for_long(connected, monkeypatch):
    """stop() wakes the reader thread however long stdout is lent to callers: it must not
    sit out the lending before it sees the end (and leave its thread and pipe behind)."""
    server = connected()
    reader = server._session.transport._reader
    monkeypatch.setattr(stdout_module, "LEND_SECONDS", 3600.0)
    assert server.call_tool("mcp__fake__echo", {"message": "x"}).text == "x"
    server.stop()
    assert not reader.is_alive()


def test_on_the_main_thread_a_chunk_with_more_than_the_answer_goes_to_the_reader_in_order():
    """The main thread takes only a chunk that is its whole answer: a log message before the
    answer is left, with the answer, to the reader thread, which takes both in order."""
    out = run_script("""
        logged = []
        server = McpServer(fake_spec("plain"), kill_grace=0.5, telemetry=False,
                           on_log=lambda srv, level, logger, data: logged.append(data))
        server.initialize()
        texts = [server.call_tool("mcp__fake__log", {"data": n}).text for n in range(5)]
        poll(lambda: len(logged) == 5, 10, "every log message")
        echo = server.call_tool("mcp__fake__echo", {"message": "after"}).text
        print(json.dumps({"texts": texts, "logged": logged, "echo": echo}))
        server.stop()
    """)
    assert out == {"texts": ["logged"] * 5, "logged": list(range(5)), "echo": "after"}


def test_while_a_caller_reads_for_a_long_answer_the_reader_thread_mostly_sleeps(connected, monkeypatch):
    server = connected()
    looks = []
    reader_turn = stdout_module.StdoutReader.reader_turn
    monkeypatch.setattr(stdout_module.StdoutReader, "reader_turn",
                        lambda self: looks.append(1) or reader_turn(self))
    with pytest.raises(ToolTimeout):
        server.call_tool("mcp__fake__sleep", {}, timeout=1)
    # it looks again every LEND_SECONDS (50 times a second), not every millisecond
    assert len(looks) < 3 / stdout_module.LEND_SECONDS
