"""Both protocol eras: the stateless 2026-07-28 revision beside the handshake, against the
official SDK's server (dual-era and modern-only), server-everything (handshake only) and fakes
for the faults real servers will not produce."""
from __future__ import annotations

import json
import os
import sys
import threading

import pytest

from raider_sync import McpError, McpServer, SubscriptionEnded, ToolTimeout, UnsupportedProtocol
from raider_sync.client.eras import negotiate

from conftest import FAKES, SDK_SERVER, config_of, everything_available
from fakes.http_peers import HttpPeer

WAIT = 15.0
MODERN_FAKE = os.path.join(FAKES, "modern_fake.py")


def sdk_stdio(mode: str = "stdio", **entry):
    return config_of({"sdk": {"command": sys.executable, "args": [SDK_SERVER, mode],
                              **entry}}).server("sdk")


def fake(mode: str, **entry):
    return config_of({"mf": {"command": sys.executable, "args": [MODERN_FAKE, mode],
                             **entry}}).server("mf")


@pytest.fixture
def connect():
    servers: list[McpServer] = []

    def make(spec, **options) -> McpServer:
        options.setdefault("kill_grace", 0.3)
        server = McpServer(spec, **options)
        servers.append(server)
        server.start_f().result(WAIT * 2)
        return server

    yield make
    for server in servers:
        server.stop()


def text_of(result: dict) -> str:
    return result["content"][0]["text"]


# -- choosing the era ---------------------------------------------------------------------

@pytest.mark.parametrize("protocol,era,version", [
    ("auto", "modern", "2026-07-28"), ("modern", "modern", "2026-07-28"),
    ("2026-07-28", "modern", "2026-07-28"), ("legacy", "legacy", "2025-11-25"),
    ("2025-06-18", "legacy", "2025-06-18")])
def test_the_sdk_server_in_either_era_reads_the_same(connect, protocol, era, version):
    server = connect(sdk_stdio(protocol=protocol))
    assert server.status == "connected", server.reason
    assert (server.era, server.protocol_version) == (era, version)
    assert server.server_info["name"] == "raider-test-sdk"
    assert server.instructions == "A test server built with the official SDK."
    assert {"tools", "prompts", "resources"} <= set(server.capabilities)
    assert text_of(server.call_tool("mcp__sdk__add", {"a": 2, "b": 3})) == "5"


def test_the_protocol_option_and_config_key_are_checked():
    with pytest.raises(ValueError, match="protocol must be one of auto, legacy, modern"):
        McpServer(sdk_stdio(), protocol="2030-01-01")
    with pytest.raises(Exception, match="protocol"):
        sdk_stdio(protocol="newest")


def test_server_everything_falls_back_to_the_handshake_and_the_verdict_is_remembered(
        connect, everything_js):
    spec = config_of({"everything": {"command": "node", "args": [everything_js, "stdio"]}}
                     ).server("everything")
    server = connect(spec)
    assert server.status == "connected", server.reason
    assert server.era == "legacy" and server.protocol_version == "2025-11-25"
    assert negotiate.remembered(server.fingerprint) == "legacy"
    assert text_of(server.call_tool("mcp__everything__echo", {"message": "hi"})) == "Echo: hi"


class Recording(McpServer):
    """An McpServer that keeps the exception that failed its start."""

    failure: BaseException | None = None

    def __init__(self, *args, **options):
        super().__init__(*args, **options)
        describe = self._connection.describe_failure

        def recording(exc: BaseException) -> str:
            self.failure = exc
            return describe(exc)
        self._connection.describe_failure = recording


@pytest.mark.parametrize("protocol", ["modern", "2026-07-28"])
def test_a_stateless_era_pinned_against_server_everything_names_both_sides_and_the_fix(
        everything_spec, protocol):
    server = Recording(everything_spec, protocol=protocol, kill_grace=0.3)
    try:
        server.start_f().result(WAIT * 2)
        assert server.status == "failed"
        error = server.failure
        assert isinstance(error, UnsupportedProtocol) and isinstance(error, McpError), error
        assert error.requested == ["2026-07-28"] and error.supported is None
        for said in (str(error), server.reason):
            assert f"protocol is {protocol!r}" in said
            assert "asked for the stateless revision 2026-07-28" in said
            assert "speaks only the initialize handshake" in said
            assert "Method not found" in said, "what the server answered"
            assert '"protocol": "legacy"' in said and '"auto"' in said, "the fix"
            assert "-32603" not in said and "(code" not in said, "no code it never sent"
    finally:
        server.stop()


def test_a_modern_only_server(connect):
    modern = connect(sdk_stdio("stdio-modern-only"))
    assert modern.status == "connected", modern.reason
    assert modern.era == "modern"
    refused = connect(sdk_stdio("stdio-modern-only", protocol="legacy"))
    assert refused.status == "failed"
    assert "2026-07-28" in refused.reason and "2025-11-25" in refused.reason


def test_garbage_from_discover_means_the_handshake(connect):
    server = connect(fake("garbage"))
    assert server.status == "connected", server.reason
    assert server.era == "legacy" and server.server_info["name"] == "garbage-fake"
    strict = connect(fake("garbage", protocol="modern"))
    assert strict.status == "failed"
    assert "not a discover result" in strict.reason and "'modern'" in strict.reason


def test_a_server_that_lies_about_its_era_fails_with_its_answer(connect):
    server = connect(fake("lies"))
    assert server.status == "failed"
    assert "Server not initialized" in server.reason


# -- the stateless wire -------------------------------------------------------------------

def seen(server: McpServer) -> list[dict]:
    return json.loads(text_of(server.call_tool("mcp__mf__seen", {})))


def test_every_request_carries_the_meta(connect):
    server = connect(fake("plain"), client_info={"name": "me", "version": "9"},
                     roots=["file:///tmp"])
    assert server.era == "modern"
    requests = [m for m in seen(server) if m["method"] != "notifications/cancelled"]
    assert [m["method"] for m in requests][:3] == ["server/discover", "tools/list",
                                                   "subscriptions/listen"]
    for message in requests:
        meta = message["params"]["_meta"]
        assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
        assert meta["io.modelcontextprotocol/clientInfo"] == {"name": "me", "version": "9"}
        # the tasks extension (SEP-2663) is declared unless the client says tasks=False
        assert meta["io.modelcontextprotocol/clientCapabilities"] == {
            "roots": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}


def test_a_client_without_tasks_declares_no_extension(connect):
    server = connect(fake("plain"), roots=["file:///tmp"], tasks=False)
    requests = [m for m in seen(server) if m["method"] != "notifications/cancelled"]
    assert requests
    for message in requests:
        assert message["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] == {
            "roots": {}}


def test_input_required_rounds_reach_the_handlers(connect):
    server = connect(fake("plain"), roots=["file:///work"])
    answer = json.loads(text_of(server.call_tool("mcp__mf__ask", {})))
    assert answer["state"] == "again"
    assert answer["responses"]["r"]["roots"][0]["uri"] == "file:///work"


def test_input_required_without_a_handler_fails_the_call(connect):
    server = connect(fake("plain"))
    with pytest.raises(McpError, match="no handler"):
        server.call_tool("mcp__mf__ask", {})


def test_an_endless_input_loop_is_bounded(connect):
    server = connect(fake("loop"), roots=["file:///work"], max_input_rounds=3)
    with pytest.raises(McpError, match="asked for input 3 times"):
        server.call_tool("mcp__mf__echo", {}, timeout=WAIT)
    calls = [m for m in seen(server) if m["method"] == "tools/call"
             and m["params"]["name"] == "echo"]
    assert len(calls) == 4


def test_header_mismatch_relists_and_retries_once(connect):
    server = connect(fake("mismatch"))
    assert text_of(server.call_tool("mcp__mf__echo", {})) == "echo"
    methods = [m["method"] for m in seen(server)]
    assert methods.count("tools/list") == 2


def test_a_listen_stream_that_ends_ends_the_subscription(connect):
    server = connect(fake("listen-ends"))
    assert server.status == "connected", server.reason
    sub = server.listen(tools=True)
    with pytest.raises(SubscriptionEnded, match="listen stream ended"):
        sub.next(WAIT)
    assert list(sub.events(timeout=1)) == []
    sub.close()


def test_results_are_cached_by_their_ttl_and_each_call_chooses(connect):
    server = connect(fake("plain"))

    def read(**kw) -> str:
        return server.read_resource("file:///a", **kw)[0]["text"]

    assert read() == "read 1"
    assert read() == "read 1", "fresh for its ttlMs: not asked again"
    assert read(cache="refresh") == "read 2"
    assert read() == "read 2"
    assert read(cache="bypass") == "read 3"
    assert read() == "read 2", "a bypassing read keeps nothing"
    assert server.read_resource("file:///b")[0]["text"] == "read 4", "one entry per URI"
    with pytest.raises(ValueError, match="cache must be one of use, refresh, bypass"):
        read(cache="sometimes")


# -- the SDK's server in the stateless era ----------------------------------------------

def test_elicitation_in_both_eras(connect):
    for protocol in ("legacy", "auto"):
        server = connect(sdk_stdio(protocol=protocol),
                         on_elicitation=lambda params: {"action": "accept",
                                                        "content": {"answer": "Ada"}})
        result = text_of(server.call_tool("mcp__sdk__ask", {"question": "Name?"}))
        assert result.startswith("accept: Ada"), result


def test_timeouts_and_cancellation_in_the_stateless_era(connect):
    server = connect(sdk_stdio())
    assert server.era == "modern"
    with pytest.raises(ToolTimeout):
        server.call_tool("mcp__sdk__slow", {"seconds": 30}, timeout=0.3)
    future = server.call_tool_f("mcp__sdk__slow", {"seconds": 30})
    assert future.cancel()
    assert text_of(server.call_tool("mcp__sdk__echo", {"message": "after"})) == "after"


def test_listen_sees_list_changes_in_both_eras(connect):
    for protocol in ("legacy", "auto"):
        server = connect(sdk_stdio(protocol=protocol))
        with server.listen(tools=True) as sub:
            assert sub.wait_acknowledged(WAIT)
            assert sub.honored.get("toolsListChanged")
            server.call_tool("mcp__sdk__grow", {})
            event = sub.next(WAIT)
            assert event is not None and event["method"] == "notifications/tools/list_changed"


@pytest.mark.parametrize("flags", [(), ("--json",), ("--stateless",)])
def test_the_sdk_server_over_http_in_the_stateless_era(flags):
    peer = HttpPeer.sdk(*flags).start()
    changed = threading.Event()
    server = McpServer(peer.spec("peer"), on_tools_changed=lambda s: changed.set(),
                       on_elicitation=lambda p: {"action": "accept", "content": {"answer": "x"}})
    try:
        server.start_f().result(WAIT)
        assert server.status == "connected", server.reason
        assert server.era == "modern" and server._transport.session_id is None
        assert text_of(server.call_tool("mcp__peer__add", {"a": 1, "b": 2})) == "3"
        steps = []
        server.call_tool("mcp__peer__slow", {"seconds": 0.2},
                         on_progress=lambda p, t, m: steps.append(p))
        if "--json" not in flags:  # a JSON answer has no room for progress
            assert steps == [1, 2, 3, 4]
        assert server.read_resource("test://hello")[0]["text"] == "hello from the sdk"
        assert server.get_prompt("greet", {"name": "B"})["messages"]
        assert text_of(server.call_tool("mcp__peer__ask", {"question": "q"})).startswith("accept: x")
        server.ping()
        if "--json" not in flags:  # a listen stream needs event-stream answers
            server.call_tool("mcp__peer__grow", {})
            assert changed.wait(WAIT)
    finally:
        server.stop()
        peer.close()


def test_server_everything_over_http_falls_back(everything_js):
    if not everything_available():
        pytest.skip("server-everything is not installed")
    peer = HttpPeer.everything().start()
    server = McpServer(peer.spec("peer"))
    try:
        server.start_f().result(WAIT)
        assert server.status == "connected", server.reason
        assert server.era == "legacy"
        assert text_of(server.call_tool("mcp__peer__echo", {"message": "hi"})) == "Echo: hi"
    finally:
        server.stop()
        peer.close()


# -- raw requests go the way of every request --------------------------------------------

@pytest.mark.parametrize("protocol", ["legacy", "auto"])
def test_a_raw_request_waits_for_the_start_and_takes_input_rounds(protocol):
    """request()/request_f() are sent like the wrapped calls: one made while the server
    starts waits for it, and in the stateless era a tools/call reaches the elicitation
    handler through input_required rounds (the handshake era: a request of the server)."""
    server = McpServer(sdk_stdio(protocol=protocol), kill_grace=0.3,
                       on_elicitation=lambda p: {"action": "accept", "content": {"answer": "Ada"}})
    try:
        start = server.start_f()
        early = server.request_f("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}},
                                 timeout=WAIT * 2)
        assert text_of(early.result(WAIT * 2)) == "3"
        start.result(WAIT)
        assert server.era == ("legacy" if protocol == "legacy" else "modern")
        asked = server.request("tools/call", {"name": "ask", "arguments": {"question": "Name?"}},
                               timeout=WAIT)
        assert text_of(asked).startswith("accept: Ada"), asked
        assert "resultType" not in asked
        steps = []
        server.request("tools/call", {"name": "slow", "arguments": {"seconds": 0.2}},
                       on_progress=lambda p, t, m: steps.append(p), timeout=WAIT)
        assert steps == [1, 2, 3, 4]
    finally:
        server.stop()


def test_input_rounds_still_reach_the_handler_after_a_stop_and_a_restart():
    """A stopped server started again answers the server's input requests as before: what
    its eras share (the input pool among it) comes back with it."""
    server = McpServer(sdk_stdio(protocol="auto"), kill_grace=0.3,
                       on_elicitation=lambda p: {"action": "accept", "content": {"answer": "Ada"}})
    ask = {"name": "ask", "arguments": {"question": "Name?"}}
    try:
        server.initialize(WAIT)
        assert server.era == "modern", server.reason
        assert text_of(server.request("tools/call", ask, timeout=WAIT)).startswith("accept: Ada")
        server.stop()
        server.restart(WAIT)
        assert server.status == "connected", server.reason
        assert text_of(server.request("tools/call", ask, timeout=WAIT)).startswith("accept: Ada")
    finally:
        server.stop()


def test_a_raw_request_in_an_endless_input_loop_is_bounded(connect):
    server = connect(fake("loop"), roots=["file:///work"], max_input_rounds=2)
    with pytest.raises(McpError, match="asked for input 2 times"):
        server.request("tools/call", {"name": "echo", "arguments": {}}, timeout=WAIT)
