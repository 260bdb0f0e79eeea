"""Safe retries after a broken connection: a stdio server that crashes mid-call and is
restarted, and an HTTP connection cut after the server ran the tool. The servers count what
they executed, so no unsafe tool may run twice."""
from __future__ import annotations

import pytest

from raider_sync import ConnectionClosed, InvalidArgument, McpServer, TransportError
from raider_sync.client.retries import Retrying, safe_to_repeat
from raider_sync.threads.futures import Deadline

from conftest import config_of, fake_spec, poll

WAIT = 30.0
RESTART = {"maxRestarts": 3, "backoffMs": 0}


@pytest.fixture
def crashing(tmp_path):
    """``crashing(**options)``: a started McpServer on the fake in crash-once mode, restarted
    at once after a crash; ``runs(tool)`` counts the tool's executions."""
    servers: list[McpServer] = []

    def start(**options) -> McpServer:
        options.setdefault("kill_grace", 0.2)
        spec = fake_spec("crash-once", restart=RESTART,
                         env={"RAIDER_FAKE_RUNS": str(tmp_path)})
        server = McpServer(spec, **options)
        servers.append(server)
        server.start_f().result(WAIT)
        assert server.status == "connected", server.reason
        return server

    def runs(tool: str) -> int:
        path = tmp_path / tool
        return len(path.read_text().splitlines()) if path.exists() else 0

    yield start, runs
    for server in servers:
        server.stop()


@pytest.mark.parametrize("tool", ["read-once", "idem-once"])
def test_a_tool_that_says_a_repeat_is_harmless_runs_again_after_the_restart(crashing, tool):
    start, runs = crashing
    server = start()
    result = server.call_tool(f"mcp__fake__{tool}", {}, timeout=WAIT)
    assert result.text == f"{tool} ran 2 times" and result.attempts == 2
    assert runs(tool) == 2 and server.retries == 1
    assert server.status == "connected"


def test_a_future_call_follows_its_first_attempt_then_the_repeat(crashing):
    start, runs = crashing
    server = start()
    call = server.call_tool_f("mcp__fake__read-once", {}, timeout=WAIT)
    result = call.result(WAIT)
    assert result.text == "read-once ran 2 times" and result.attempts == 2
    assert runs("read-once") == 2 and server.retries == 1


def test_cancelling_a_future_call_that_waits_for_its_repeat_sends_nothing_more(tmp_path):
    spec = fake_spec("crash-once", restart={"backoffMs": 600000},  # the restart is far off
                     env={"RAIDER_FAKE_RUNS": str(tmp_path)})
    server = McpServer(spec, kill_grace=0.2)
    try:
        server.start_f().result(WAIT)
        call = server.call_tool_f("mcp__fake__read-once", {}, timeout=WAIT * 4)
        poll(lambda: len(server._repeats._calls) == 1, WAIT, "the call waiting for its repeat")
        repeat = next(iter(server._repeats._calls))
        assert call.cancel() and call.cancelled()
        # told at once, on this thread: the repeat's wait ends and it sends nothing
        assert repeat.outer.cancelled() and repeat._pause.is_set()
        poll(lambda: not server._repeats._calls, WAIT, "the repeat to leave the waiting calls")
        assert (tmp_path / "read-once").read_text().count("\n") == 1  # the first run alone
    finally:
        server.stop()


def test_a_tool_that_may_act_is_not_sent_again(crashing):
    start, runs = crashing
    server = start()
    with pytest.raises(ConnectionClosed, match="crashed mid-call"):
        server.call_tool("mcp__fake__write-once", {}, timeout=WAIT)
    assert runs("write-once") == 1 and server.retries == 0
    # the server comes back for the next call, which the caller makes knowingly
    assert server.call_tool("mcp__fake__write-once", {}, timeout=WAIT).text == (
        "write-once ran 2 times")


def test_always_repeats_a_tool_that_may_act_and_never_repeats_none(crashing):
    start, runs = crashing
    server = start()
    assert server.call_tool_f("mcp__fake__write-once", {}, timeout=WAIT,
                              retry="always").result(WAIT).attempts == 2
    assert runs("write-once") == 2
    never = start(retry="never")  # the server's own choice
    with pytest.raises(ConnectionClosed):
        never.call_tool("mcp__fake__idem-once", {}, timeout=WAIT)
    assert runs("idem-once") == 1


def test_attempts_are_bounded_by_the_policy(crashing):
    start, runs = crashing
    server = start(max_attempts=1)
    with pytest.raises(ConnectionClosed):
        server.call_tool("mcp__fake__read-once", {}, timeout=WAIT)
    assert runs("read-once") == 1 and server.retries == 0


def test_a_server_without_a_restart_policy_is_not_waited_for(tmp_path):
    spec = fake_spec("crash-once", env={"RAIDER_FAKE_RUNS": str(tmp_path)})
    with McpServer(spec, kill_grace=0.2) as server:
        with pytest.raises(ConnectionClosed):
            server.call_tool("mcp__fake__read-once", {}, timeout=WAIT)
        assert server.status == "failed" and server.retries == 0


def test_bad_retry_options_are_named():
    with pytest.raises(InvalidArgument, match="retry of McpServer must be one of safe, never, "
                                              "always, not 'sometimes'"):
        McpServer(fake_spec("plain"), retry="sometimes")
    with pytest.raises(InvalidArgument, match="max_attempts of McpServer"):
        McpServer(fake_spec("plain"), max_attempts=0)
    with pytest.raises(Exception, match=r"mcpServers\.x\.retry"):
        config_of({"x": {"command": "x", "retry": "often"}})


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
def test_an_http_call_cut_after_it_ran_is_repeated_only_when_safe(fake, connect, era):
    server = fake(answer="json", stateless=era != "legacy",
                  annotations={"echo": {"readOnlyHint": True}})
    client = connect(server, {"protocol": era})
    server.drop_answers = 1
    result = client.call_tool("echo", {"n": 1}, timeout=WAIT)
    assert result.attempts == 2 and server.executed == ["echo", "echo"]
    server.drop_answers = 1
    with pytest.raises(TransportError, match="may have received it"):
        client.call_tool("cut", {}, timeout=WAIT)  # no hints: it may have acted
    assert server.executed == ["echo", "echo", "cut"]


def test_a_hub_passes_the_choice_on(crashing):
    from raider_sync import McpHub
    start, runs = crashing
    spec = start().spec
    with McpHub(config_of({"fake": {"command": spec.command, "args": spec.args,
                                    "env": spec.env, "restart": RESTART}}),
                kill_grace=0.2) as hub:
        with pytest.raises(ConnectionClosed):
            hub.call_tool("mcp__fake__read-once", {}, timeout=WAIT, retry="never")
        assert hub.call_tool("mcp__fake__idem-once", {}, timeout=WAIT).attempts == 2


def test_the_hints_that_make_a_repeat_safe():
    assert safe_to_repeat({"annotations": {"readOnlyHint": True}})
    assert safe_to_repeat({"annotations": {"idempotentHint": True}})
    assert not safe_to_repeat({"annotations": {"readOnlyHint": "yes"}})
    assert not safe_to_repeat({"annotations": {}}) and not safe_to_repeat(None)


def test_cancelling_the_call_stops_the_attempts():
    from concurrent.futures import Future
    sent: list[Future] = []

    def attempt(deadline, first):
        sent.append(Future())
        return sent[-1]
    retrying = Retrying(attempt, Deadline(WAIT), max_attempts=3, may_repeat=lambda e: True,
                        back_in=lambda e, n: WAIT / 2, on_retry=lambda n, e: None, name="t")
    outer = retrying.start()
    sent[0].set_exception(ConnectionClosed("gone"))  # a repeat waits WAIT / 2 ...
    assert outer.cancel()  # ... and is called off
    assert len(sent) == 1 and retrying.attempts == 1


def test_what_an_http_failure_says_of_whether_the_request_went_out():
    import requests
    import urllib3

    from raider_sync.client.retries import lost_in_flight, never_sent
    from raider_sync.transports.http_common import unreachable
    refused = unreachable(requests.exceptions.ConnectionError(
        urllib3.exceptions.NewConnectionError(None, "Connection refused")), "http://x/mcp")
    assert "cannot connect" in str(refused) and never_sent(refused)
    cut = unreachable(requests.exceptions.ConnectionError(urllib3.exceptions.ProtocolError(
        "Connection aborted.", ConnectionResetError(104, "reset"))), "http://x/mcp")
    assert lost_in_flight(cut) and not never_sent(cut)
    assert not never_sent(TransportError("http://x/mcp: 500", status_code=500))


def test_a_stop_fails_a_call_that_waits_to_be_sent_again(tmp_path):
    from raider_sync import NotConnected
    spec = fake_spec("crash-once", restart={"backoffMs": 600000},  # the restart is far off
                     env={"RAIDER_FAKE_RUNS": str(tmp_path)})
    server = McpServer(spec, kill_grace=0.2)
    server.start_f().result(WAIT)
    call = server.call_tool_f("mcp__fake__read-once", {}, timeout=WAIT * 4)
    poll(lambda: server.retries == 1, WAIT, "the call waiting for its repeat")
    assert not call.done()
    server.stop()
    with pytest.raises(NotConnected, match="stopped while a call waited to be sent again"):
        call.result(WAIT)
