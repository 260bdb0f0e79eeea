"""Streamable HTTP against tests/fakes/http_fault_server.py: the faults real servers will not
produce on demand (cut streams, retry:, 500s, junk, endless answers, 401s, forgotten sessions,
the stateless revision's refusal)."""
from __future__ import annotations

import os
import stat
import sys
import threading
import time

import pytest

from raider_sync import ConnectionClosed, McpServer, NotConnected, ToolTimeout, TransportError
from raider_sync.errors import LostInFlight
from raider_sync.protocol import STATELESS_REASON

from conftest import config_of
from conftest import poll as _poll
from fakes.http_fault_server import FaultServer

WAIT = 10.0


def poll(predicate, timeout: float = WAIT, what: str = "condition"):
    return _poll(predicate, timeout, what)


def text(result: dict) -> str:
    return result["content"][0]["text"]


@pytest.mark.parametrize("answer", ["sse", "json"])
def test_plain_call_in_both_answer_modes(fake, connect, answer):
    server = fake(answer=answer)
    client = connect(server)
    assert client.status == "connected", client.reason
    assert "mcp__fault__echo" in client.tool_names
    assert text(client.call_tool("echo", {"x": 1})) == "echo: {'x': 1}"


def test_headers_session_and_protocol_version_on_every_request(fake, connect):
    server = fake()
    client = connect(server, {"headers": {"X-Team": "${TEAM}"}, "protocol": "legacy"},
                     env={"TEAM": "blue"})
    client.call_tool("echo", {})
    client.stop()
    assert [m for m, *_ in server.seen][:1] == ["POST"]
    first, *later = server.seen
    assert first[3]["method"] == "initialize"
    assert "mcp-session-id" not in first[2] and "mcp-protocol-version" not in first[2]
    assert "application/json" in first[2]["accept"] and "text/event-stream" in first[2]["accept"]
    kinds = {method for method, *_ in later}
    assert kinds == {"POST", "GET", "DELETE"}
    for _method, _path, headers, _body in server.seen:
        assert headers["x-team"] == "blue"
    for _method, _path, headers, _body in later:
        assert headers["mcp-session-id"] == "s1"
        assert headers["mcp-protocol-version"] == "2025-11-25"


def test_stream_cut_mid_answer_is_resumed_with_last_event_id(fake, connect):
    server = fake(retry_ms=300)
    client = connect(server)
    progress = []
    result = client.call_tool("cut", {"n": 1}, timeout=WAIT,
                              on_progress=lambda *args: progress.append(args))
    assert text(result) == "cut: {'n': 1}"
    resumed = [(at, last) for at, last in server.get_times if last == "c2"]
    assert len(resumed) == 1, server.get_times
    # retry: 300 came with the priming event; the resumption waited for it
    assert resumed[0][0] - server.cut_at >= 0.29
    assert progress == [(1, 2, None)]
    assert text(client.call_tool("echo", {})) == "echo: {}"


def test_get_stream_reconnects_after_retry_with_last_event_id(fake, connect):
    server = fake(get_stream="close", retry_ms=200)
    changed = threading.Event()
    client = connect(server, on_tools_changed=lambda s: changed.set())
    assert changed.wait(WAIT), "the list_changed on the GET stream was not dispatched"
    poll(lambda: len(server.get_times) >= 2, what="a second GET")
    (first_at, first_last), (second_at, second_last) = server.get_times[:2]
    assert first_last is None and second_last == "g1"
    assert second_at - first_at >= 0.19
    assert client.status == "connected"


def test_405_means_no_get_stream(fake, connect):
    server = fake(get_stream="405")
    client = connect(server)
    poll(lambda: not any(t.name == "raider-fault-listen" for t in threading.enumerate()),
         what="the listener to give up")
    assert text(client.call_tool("echo", {})) == "echo: {}"


def test_a_500_fails_that_call_only_with_status_and_body(fake, connect):
    client = connect(fake())
    with pytest.raises(TransportError) as caught:
        client.call_tool("fail500", {})
    assert caught.value.status_code == 500
    assert "boom: the fake server failed inside" in caught.value.body
    assert "HTTP 500" in str(caught.value)
    assert client.status == "connected"
    assert text(client.call_tool("echo", {})) == "echo: {}"


def test_an_answer_that_is_not_json_fails_that_call_only(fake, connect):
    client = connect(fake())
    with pytest.raises(TransportError, match="not a JSON-RPC answer") as caught:
        client.call_tool("notjson", {})
    assert caught.value.status_code == 200 and "not</b> json" in caught.value.body
    assert text(client.call_tool("echo", {})) == "echo: {}"


def test_a_json_answer_to_another_request_fails_that_call(fake, connect):
    client = connect(fake(answer="json"))
    with pytest.raises(TransportError, match="not a JSON-RPC answer") as caught:
        client.call_tool("wrongid", {})
    assert "someone-else" in caught.value.body
    assert text(client.call_tool("echo", {})) == "echo: {}"


def test_fingerprint_covers_url_and_headers_without_showing_them():
    def fingerprint(url: str, token: str) -> str:
        spec = config_of({"r": {"type": "http", "url": url,
                                "headers": {"Authorization": f"Bearer {token}"}}}).server("r")
        return McpServer(spec).fingerprint

    base = fingerprint("https://mcp.example/mcp", "s3cret-token")
    assert base == fingerprint("https://mcp.example/mcp", "s3cret-token")
    assert base != fingerprint("https://mcp.example/mcp", "another-token")
    assert base != fingerprint("https://other.example/mcp", "s3cret-token")
    assert "s3cret" not in base and "mcp.example" not in base
    assert base.startswith("http:r:")


def test_garbage_sse_lines_are_skipped(fake, connect):
    client = connect(fake())
    assert text(client.call_tool("garbage", {"g": 1})) == "garbage: {'g': 1}"


def test_stream_ending_without_answer_or_id_fails_clearly(fake, connect):
    client = connect(fake())
    with pytest.raises(TransportError, match="before answering") as caught:
        client.call_tool("drop", {})
    assert caught.value.status_code is None  # the POST itself was answered: 200, a stream
    assert text(client.call_tool("echo", {})) == "echo: {}"


def test_never_ending_answer_hits_the_call_timeout_and_is_cancelled(fake, connect):
    server = fake()
    client = connect(server)
    started = time.monotonic()
    future = client.call_tool_f("endless", {}, timeout=0.5)
    with pytest.raises(ToolTimeout, match="timed out after 0.5 s"):
        future.result(WAIT)
    assert time.monotonic() - started < 2.0
    poll(lambda: server.cancelled, what="notifications/cancelled")
    calls = [b["id"] for m, _p, _h, b in server.seen if m == "POST" and b.get("method") == "tools/call"]
    assert server.cancelled == calls
    # the stream's reader let go of it by the deadline: nothing still reads it
    poll(lambda: not any(t.name.startswith("raider-fault-stream") and t.is_alive()
                         and _busy(t) for t in threading.enumerate()), what="reader freed")
    assert text(client.call_tool("echo", {})) == "echo: {}"


def test_a_json_body_that_trickles_forever_hits_the_call_timeout(fake, connect):
    server = fake(answer="json")
    client = connect(server)
    started = time.monotonic()
    with pytest.raises(ToolTimeout):
        client.call_tool("stalljson", {}, timeout=0.6)
    assert time.monotonic() - started < 2.0
    poll(lambda: server.cancelled, what="notifications/cancelled")
    assert text(client.call_tool("echo", {})) == "echo: {}"


def _busy(thread: threading.Thread) -> bool:
    frame = sys._current_frames().get(thread.ident)
    while frame is not None:
        if frame.f_code.co_name == "_read_answer":
            return True
        frame = frame.f_back
    return False


def test_stop_during_an_endless_answer_returns_promptly(fake, connect):
    server = fake()
    client = connect(server)
    future = client.call_tool_f("endless", {}, timeout=60)
    poll(lambda: "tools/call" in server.methods(), what="the call to reach the server")
    started = time.monotonic()
    client.stop()
    assert time.monotonic() - started < 5.0
    with pytest.raises((ConnectionClosed, NotConnected)):
        future.result(WAIT)


def test_delete_on_stop_carries_the_session(fake, connect):
    server = fake()
    client = connect(server)
    client.stop()
    deletes = [headers for method, _p, headers, _b in server.seen if method == "DELETE"]
    assert len(deletes) == 1 and deletes[0]["mcp-session-id"] == "s1"
    assert client.status == "stopped"


def test_forgotten_session_is_renewed_once_and_the_call_retried(fake, connect):
    server = fake()
    relisted = threading.Event()
    client = connect(server, on_tools_changed=lambda s: relisted.set())
    server.forget_sessions()
    assert text(client.call_tool("echo", {"after": "restart"})) == "echo: {'after': 'restart'}"
    assert server.methods().count("initialize") == 2
    assert server.methods().count("notifications/initialized") == 2
    assert relisted.wait(WAIT)
    poll(lambda: server.methods().count("tools/list") >= 2, what="tools listed again")
    posted = [h.get("mcp-session-id") for m, _p, h, b in server.seen
              if m == "POST" and b.get("method") == "tools/call"]
    assert posted == ["s1", "s2"]


def test_session_renewal_that_fails_fails_the_call_clearly(fake, connect):
    server = fake()
    client = connect(server)
    server.forget_sessions()
    server.initialize = "stateless400"
    with pytest.raises(TransportError, match="no longer knows the session") as caught:
        client.call_tool("echo", {})
    assert "could not be started" in str(caught.value)
    server.initialize = "ok"  # the server is back: the next call renews and works
    assert text(client.call_tool("echo", {})) == "echo: {}"


@pytest.mark.parametrize("refusal", ["stateless400", "stateless32022"])
def test_stateless_only_server_fails_with_the_seeds_reason(fake, connect, refusal):
    client = connect(fake(initialize=refusal))
    assert client.status == "failed"
    assert client.reason == STATELESS_REASON


def test_headers_helper_runs_again_once_on_401(fake, connect, tmp_path):
    counter = tmp_path / "count"
    helper = tmp_path / "helper.sh"
    helper.write_text('n=$(( $(cat "$COUNTER" 2>/dev/null || echo 0) + 1 ))\n'
                      'echo $n > "$COUNTER"\n'
                      'printf \'{"Authorization": "Bearer t%s"}\' $n\n')
    helper.chmod(helper.stat().st_mode | stat.S_IXUSR)
    server = fake(token_from=2)
    client = connect(server, {"headersHelper": str(helper)},
                     base_env={**os.environ, "COUNTER": str(counter)})
    assert client.status == "connected", client.reason
    assert counter.read_text().strip() == "2"
    auths = [h.get("authorization") for _m, _p, h, _b in server.seen]
    assert auths[:2] == ["Bearer t1", "Bearer t2"]
    assert set(auths[2:]) == {"Bearer t2"}
    assert text(client.call_tool("echo", {})) == "echo: {}"


def test_failing_headers_helper_fails_the_start(fake, connect):
    client = connect(fake(), {"headersHelper": "echo no json here"})
    assert client.status == "failed"
    assert "headersHelper" in client.reason and "JSON object" in client.reason


def test_unreachable_server_fails_the_start_with_the_url():
    from conftest import free_port
    url = f"http://127.0.0.1:{free_port()}/mcp"
    spec = config_of({"gone": {"type": "http", "url": url}}).server("gone")
    client = McpServer(spec, startup_timeout_ms=5000)
    try:
        client.start_f().result(WAIT)
        assert client.status == "failed"
        assert url in client.reason and "cannot connect" in client.reason
    finally:
        client.stop()


def test_on_tools_changed_may_list_the_tools_after_a_session_renewal(fake, connect):
    """The renewal re-lists the tools; on_tools_changed calling list_tools() then gets them
    instead of waiting for a re-list that itself waits for the renewal to end."""
    server = fake()
    listed = []
    seen = threading.Event()

    def on_tools_changed(client):
        listed.append([t["name"] for t in client.list_tools(timeout=5)])
        seen.set()

    client = connect(server, on_tools_changed=on_tools_changed)
    server.forget_sessions()
    started = time.monotonic()
    assert text(client.call_tool("echo", {}, timeout=8)) == "echo: {}"
    assert seen.wait(WAIT)
    assert time.monotonic() - started < 4
    assert listed and "mcp__fault__echo" in listed[0]


def test_a_program_that_forgets_stop_exits_without_waiting_for_a_pending_call(fake):
    """The atexit clean-up runs before the interpreter joins pool threads: a stream reader
    waiting for a long call's answer must not hold the exit until the call's deadline."""
    import subprocess
    server = fake()
    script = (
        "from raider_sync import McpConfig, McpServer\n"
        f"spec = McpConfig.from_dict({{'mcpServers': {{'f': {{'type': 'http', "
        f"'url': {server.url!r}}}}}}}).server('f')\n"
        "s = McpServer(spec)\n"
        "s.start_f().result(10)\n"
        "print(s.status, flush=True)\n"
        "s.call_tool_f('endless', {}, timeout=60)\n"
        "input()\n")  # the test says when the call has reached the server
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        poll(lambda: any(m == "POST" and b.get("method") == "tools/call"
                         for m, _p, _h, b in server.seen), 20, "the call reached the server")
        out, err = proc.communicate("go\n", timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert out.strip() == "connected", err
    assert time.monotonic() - started < 15


def _calls_seen(server: FaultServer) -> list:
    return [body for method, _, _, body in server.seen
            if method == "POST" and isinstance(body, dict) and body.get("method") == "tools/call"]


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
def test_a_call_whose_connection_died_after_it_was_sent_runs_once(fake, connect, era):
    """The server ran the tool, then the connection went before any answer: the call may
    have had its effect, so it is never sent again by the transport (a tool without a
    read-only or idempotent hint would run twice); the caller learns the outcome is
    unknown."""
    server = fake(answer="json", stateless=era != "legacy")
    client = connect(server, {"protocol": era})
    assert client.status == "connected" and client.era == (
        "legacy" if era == "legacy" else "modern"), client.reason
    server.drop_answers = 1  # as a server that died once the work was done, then came back
    with pytest.raises(TransportError, match="may have received it") as caught:
        client.call_tool("echo", {"n": 1}, timeout=10)
    assert "cannot connect" not in str(caught.value)
    assert caught.value.status_code is None
    assert server.executed == ["echo"]
    assert len(_calls_seen(server)) == 1
    assert client.status == "degraded" and "during the request" in client.reason
    # the server is back: the next call goes out on a fresh connection and works
    assert text(client.call_tool("echo", {"n": 2}, timeout=10)) == "echo: {'n': 2}"
    assert server.executed == ["echo", "echo"]
    assert client.status == "connected"


def test_a_request_dropped_unanswered_is_not_sent_again(fake, connect):
    server = fake(answer="json")
    client = connect(server)
    server.drop_posts = 1  # read, then the connection closed with no answer
    with pytest.raises(TransportError, match="the connection was closed during the request"):
        client.call_tool("echo", {"n": 2}, timeout=10)
    assert len(_calls_seen(server)) == 1
    assert text(client.call_tool("echo", {"n": 3}, timeout=10)) == "echo: {'n': 3}"


def _pings_seen(server) -> int:
    """The pings (server/discover in the stateless era) the server read."""
    return sum(1 for method, _, _, body in server.seen
               if method == "POST" and isinstance(body, dict)
               and body.get("method") in ("ping", "server/discover"))


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
def test_a_read_lost_in_flight_is_sent_once_more_and_answered(fake, connect, era):
    """A ping (server/discover) is a read: asking twice has the effect of asking once, so the
    session sends one whose connection broke after it went out once more (a server's
    keep-alive timeout racing the request), and the caller sees only the answer."""
    server = fake(answer="json", stateless=era != "legacy")
    client = connect(server, {"protocol": era})
    before = _pings_seen(server)
    server.drop_posts = 1
    client.ping(timeout=10)
    assert _pings_seen(server) == before + 2
    assert client.status == "connected"


def test_a_read_lost_twice_is_not_sent_a_third_time(fake, connect):
    server = fake(answer="json")
    client = connect(server)
    before = _pings_seen(server)
    server.drop_posts = 2
    with pytest.raises(LostInFlight, match="may have received it"):
        client.ping(timeout=10)
    assert _pings_seen(server) == before + 2


@pytest.mark.parametrize("era", ["legacy", "2026-07-28"])
def test_a_kept_alive_connection_the_server_closed_while_idle_is_not_an_error(fake, connect,
                                                                               era):
    """A pooled connection the server closed between requests (its keep-alive timeout, a
    restart) is seen closed before anything is written on it: the call goes out once, on a
    new connection, and the caller sees nothing of it."""
    server = fake(answer="json", stateless=era != "legacy")
    client = connect(server, {"protocol": era})
    assert text(client.call_tool("echo", {"n": 1}, timeout=10)) == "echo: {'n': 1}"
    opened = server.connections
    closed = server.close_idle()
    assert closed, "no kept-alive connection to close"
    poll(lambda: not closed & server.open_connections(), what="the idle connections closed")
    assert text(client.call_tool("echo", {"n": 2}, timeout=10)) == "echo: {'n': 2}"
    assert server.executed == ["echo", "echo"]
    assert server.connections > opened, "the closed connection was used"
    assert client.status == "connected", client.reason


@pytest.mark.parametrize("idle_reuse, fresh", [(3600.0, False), (-1.0, True)])
def test_a_connection_idle_past_the_bound_is_not_reused(fake, connect, monkeypatch,
                                                        idle_reuse, fresh):
    """A server ends an idle keep-alive connection at its own timeout, and a call written in
    that instant is lost with an unknown outcome: past IDLE_REUSE a pooled connection is
    opened afresh instead of reused (the bound moved to either side of the idle time)."""
    from raider_sync.transports import http_pool
    server = fake(answer="json")
    client = connect(server)
    assert text(client.call_tool("echo", {"n": 1}, timeout=10)) == "echo: {'n': 1}"
    monkeypatch.setattr(http_pool, "IDLE_REUSE", idle_reuse)
    opened = server.connections
    assert text(client.call_tool("echo", {"n": 2}, timeout=10)) == "echo: {'n': 2}"
    assert (server.connections > opened) == fresh


def test_the_session_does_not_let_urllib3_resend_anything():
    from raider_sync.transports.http_common import HttpChannel
    channel = HttpChannel("http://127.0.0.1:9/mcp", name="x")
    try:
        for prefix in ("http://", "https://"):
            retries = channel.http.get_adapter(prefix).max_retries
            assert retries.total == 0 and retries.read is False
    finally:
        channel.close()


def _stream_workers(name: str = "fault") -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(f"raider-{name}-stream")]


def _in_function(thread: threading.Thread, function: str) -> bool:
    frame = sys._current_frames().get(thread.ident)
    while frame is not None:
        if frame.f_code.co_name == function:
            return True
        frame = frame.f_back
    return False


def test_a_blocking_call_reads_its_answer_stream_on_its_own_thread(fake, connect):
    client = connect(fake())
    for _ in range(3):
        assert text(client.call_tool("echo", {"n": 1})) == "echo: {'n': 1}"
    assert _stream_workers() == []  # no hand-off: the caller read every answer itself


def test_the_future_twin_still_returns_before_its_answer(fake, connect):
    server = fake()
    client = connect(server)
    future = client.call_tool_f("endless", {}, timeout=30)
    poll(lambda: "tools/call" in server.methods(), what="the call to reach the server")
    assert not future.done()
    poll(lambda: any(_busy(t) for t in _stream_workers()), what="a worker reading the answer")
    future.cancel()
    poll(lambda: server.cancelled, what="notifications/cancelled")


def test_a_stream_held_open_after_its_answer_does_not_hold_the_caller(fake, connect):
    server = fake()
    client = connect(server)
    assert text(client.call_tool("echo", {})) == "echo: {}"
    opened = server.connections
    # the answer comes, the stream stays open until linger_done: the call returns anyway,
    # and a worker reads the rest so that the connection can be used again
    assert text(client.call_tool("linger", {})) == "linger: {}"
    assert server.lingering.is_set() and not server.linger_done.is_set()
    server.linger_done.set()
    poll(lambda: not any(_in_function(t, "drain") for t in _stream_workers()),
         what="the rest of the stream drained")
    assert text(client.call_tool("echo", {})) == "echo: {}"
    assert server.connections == opened, "the drained connection was used again"


def test_a_blocking_call_on_an_endless_stream_ends_at_its_timeout_and_is_cancelled(fake, connect):
    server = fake()
    client = connect(server)
    started = time.monotonic()
    with pytest.raises(ToolTimeout, match="timed out after 0.5 s"):
        client.call_tool("endless", {}, timeout=0.5)  # read on this thread, bounded by 0.5 s
    assert time.monotonic() - started < 2.5
    poll(lambda: server.cancelled, what="notifications/cancelled")
    assert _stream_workers() == []
    assert text(client.call_tool("echo", {})) == "echo: {}"
