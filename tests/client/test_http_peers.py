"""McpServer over Streamable HTTP against real peers: server-everything (every answer an event
stream with priming events) and the official SDK's server in JSON and SSE answer modes,
stateful and stateless."""
from __future__ import annotations

import threading
import time

import pytest
import requests

from raider_sync import McpServer, ToolTimeout, TransportError
from raider_sync.transports.http import StreamableHttpTransport

from conftest import everything_available
from conftest import poll as _poll
from fakes.http_peers import HttpPeer

WAIT = 15.0


def poll(predicate, timeout: float = WAIT, what: str = "condition"):
    return _poll(predicate, timeout, what)

PEERS = {
    "everything": lambda: HttpPeer.everything(),
    "sdk-sse": lambda: HttpPeer.sdk(),
    "sdk-json": lambda: HttpPeer.sdk("--json"),
    "sdk-sse-stateless": lambda: HttpPeer.sdk("--stateless"),
    "sdk-json-stateless": lambda: HttpPeer.sdk("--json", "--stateless"),
}
# what each peer calls its echo, its slow tool with progress, and echo's answer to "hi"
ECHO = {"everything": ("echo", "Echo: hi"), "sdk": ("echo", "hi")}


def family(kind: str) -> str:
    return "everything" if kind == "everything" else "sdk"


def need(kind: str) -> None:
    if kind == "everything" and not everything_available():
        pytest.skip("server-everything is not installed: run `make peers`")


@pytest.fixture(scope="module", params=list(PEERS))
def peer(request):
    need(request.param)
    server = PEERS[request.param]()
    server.kind_name = request.param
    server.start()
    yield server
    server.close()


@pytest.fixture
def client(peer):
    """A connected McpServer on the module's peer, stopped afterwards."""
    clients: list[McpServer] = []

    def make(**options) -> McpServer:
        # the handshake era over HTTP (auto would speak the stateless revision to the SDK;
        # tests/client/test_eras.py covers that)
        options.setdefault("protocol", "legacy")
        server = McpServer(peer.spec("peer"), **options)
        clients.append(server)
        server.start_f().result(WAIT)
        assert server.status == "connected", server.reason
        return server

    yield make
    for server in clients:
        server.stop()


def test_handshake_and_tools(peer, client):
    srv = client()
    assert srv.protocol_version == "2025-11-25"
    assert srv.server_info["name"] in ("mcp-servers/everything", "raider-test-sdk")
    tool, _ = ECHO[family(peer.kind_name)]
    assert f"mcp__peer__{tool}" in srv.tool_names
    assert isinstance(srv._transport, StreamableHttpTransport)
    if peer.kind_name.endswith("stateless"):
        assert srv._transport.session_id is None
    else:
        assert srv._transport.session_id


def test_call_prompts_and_resources(peer, client):
    srv = client()
    tool, answer = ECHO[family(peer.kind_name)]
    result = srv.call_tool(f"mcp__peer__{tool}", {"message": "hi"})
    assert result["content"][0]["text"] == answer
    prompts = srv.list_prompts()
    assert prompts
    resources = srv.list_resources()
    assert resources
    contents = srv.read_resource(resources[0]["uri"])
    assert contents and contents[0]["uri"] == resources[0]["uri"]
    if family(peer.kind_name) == "sdk":
        prompt = srv.get_prompt("greet", {"name": "Ada"})
        assert "Ada" in prompt["messages"][0]["content"]["text"]
    else:
        prompt = srv.get_prompt("args-prompt", {"city": "Oslo"})
        assert "Oslo" in prompt["messages"][0]["content"]["text"]


def _slow(kind: str, seconds: float, steps: int = 4) -> tuple[str, dict]:
    """A call of the peer's slow tool: ``seconds`` long, with ``steps`` progress
    notifications spread over it."""
    if family(kind) == "everything":
        return "mcp__peer__trigger-long-running-operation", {"duration": seconds, "steps": steps}
    return "mcp__peer__slow", {"seconds": seconds, "steps": steps}


# a JSON answer carries no progress notifications; a stateless server has no GET stream to
# announce anything on, and no session to delete
STREAMING = [kind for kind in PEERS if "json" not in kind]
STATEFUL = [kind for kind in PEERS if not kind.endswith("stateless")]


@pytest.mark.parametrize("peer", STREAMING, indirect=True)
def test_progress_arrives_on_the_answer_stream(peer, client):
    srv = client()
    progress = []
    name, args = _slow(peer.kind_name, 0.4)
    srv.call_tool(name, args, on_progress=lambda p, total, message: progress.append((p, total)))
    # every step the server sent before its answer is seen before the call returns
    assert progress == [(1, 4), (2, 4), (3, 4), (4, 4)]


def test_timeout_cancels_then_another_call_works(peer, client):
    srv = client()
    sent = []
    transport = srv._transport

    def spy(original):
        def send(message, **kw):
            sent.append(message)
            return original(message, **kw)
        return send

    # the blocking call reads its answer stream on its own thread (send_awaited)
    transport.send, transport.send_awaited = spy(transport.send), spy(transport.send_awaited)
    name, args = _slow(peer.kind_name, 5)
    started = time.monotonic()
    with pytest.raises(ToolTimeout, match="timed out after 0.5 s"):
        srv.call_tool(name, args, timeout=0.5)
    assert time.monotonic() - started < 2.5
    call_id = next(m["id"] for m in sent if m.get("method") == "tools/call")
    poll(lambda: any(m.get("method") == "notifications/cancelled"
                     and m["params"]["requestId"] == call_id for m in sent),
         what="notifications/cancelled")
    tool, answer = ECHO[family(peer.kind_name)]
    assert srv.call_tool(f"mcp__peer__{tool}", {"message": "hi"})["content"][0]["text"] == answer


@pytest.mark.parametrize("peer", STATEFUL, indirect=True)
def test_list_changed_arrives_on_the_get_stream(peer, client):
    changed = threading.Event()
    srv = client(on_tools_changed=lambda s: changed.set())
    if family(peer.kind_name) == "everything":
        # it announces the tools it registers after notifications/initialized
        assert changed.wait(WAIT)
    else:
        srv.call_tool("mcp__peer__grow", {})
        assert changed.wait(WAIT)
        poll(lambda: "mcp__peer__extra" in [t["name"] for t in srv.list_tools()],
             what="the re-listed tools")
    assert any(t.name == "raider-peer-listen" for t in threading.enumerate())


@pytest.mark.parametrize("peer", STATEFUL, indirect=True)
def test_stop_deletes_the_session(peer, client):
    srv = client()
    sid = srv._transport.session_id
    headers = {"Accept": "application/json, text/event-stream", "Mcp-Session-Id": sid,
               "Content-Type": "application/json", "MCP-Protocol-Version": "2025-11-25"}
    ping = b'{"jsonrpc":"2.0","id":99,"method":"ping"}'
    with requests.Session() as http:
        alive = http.post(peer.url, data=ping, headers=headers, timeout=WAIT)
        assert alive.status_code == 200
        srv.stop()
        assert srv.status == "stopped"
        gone = http.post(peer.url, data=ping, headers=headers, timeout=WAIT)
    # the SDK answers an unknown session 404; server-everything 400 "No valid session ID"
    assert gone.status_code in (400, 404)
    assert not any(t.name.startswith("raider-peer-") for t in threading.enumerate()
                   if t.is_alive() and t.name != "raider-peer-relist")


@pytest.mark.parametrize("kind", ["sdk-sse", "sdk-json", "everything"])
def test_session_expiry_after_a_restart_renews_and_relists(kind):
    need(kind)
    peer = PEERS[kind]().start()
    relisted = threading.Event()
    srv = McpServer(peer.spec("peer"), on_tools_changed=lambda s: relisted.set(),
                    protocol="legacy")
    try:
        srv.start_f().result(WAIT)
        assert srv.status == "connected", srv.reason
        old = srv._transport.session_id
        # cleared before the restart: the GET stream's reconnect may renew the session first
        relisted.clear()
        peer.restart()
        tool, answer = ECHO[family(kind)]
        result = srv.call_tool(f"mcp__peer__{tool}", {"message": "hi"}, timeout=WAIT)
        assert result["content"][0]["text"] == answer
        assert srv._transport.session_id not in (None, old)
        assert relisted.wait(WAIT), "the tools were not listed again"
        assert f"mcp__peer__{tool}" in [t["name"] for t in srv.list_tools()]
        assert srv.status == "connected"
    finally:
        srv.stop()
        peer.close()


@pytest.mark.parametrize("peer", ["sdk-sse"], indirect=True)
def test_a_blocking_call_answers_server_requests_and_sees_progress_on_its_stream(peer, client):
    asked = []
    srv = client(on_elicitation=lambda params: asked.append(params) or {
        "action": "accept", "content": {"answer": "Ada"}})
    result = srv.call_tool("mcp__peer__ask", {"question": "Name?"})
    assert result["content"][0]["text"].startswith("accept: Ada")
    assert asked and asked[0]["message"] == "Name?"
    steps = []
    srv.call_tool("mcp__peer__slow", {"seconds": 0.2}, on_progress=lambda p, t, m: steps.append(p))
    assert steps == [1, 2, 3, 4]
    # both answers were read on the calling thread: no stream reader was ever started
    assert not [t for t in threading.enumerate() if t.name.startswith("raider-peer-stream")]


def _listening(srv: McpServer) -> bool:
    return srv._transport is not None and srv._transport._listen.stream is not None


def test_a_server_gone_makes_the_get_stream_say_degraded_at_once_and_connected_when_back():
    """No call is made: the GET stream alone finds the server out of reach (the port
    refuses), and finds it back."""
    peer = HttpPeer.sdk().start()
    statuses = []
    srv = McpServer(peer.spec("peer"), protocol="legacy",
                    on_status=lambda s: statuses.append((s.status, s.reason)))
    try:
        srv.start_f().result(WAIT)
        assert srv.status == "connected", srv.reason
        poll(lambda: _listening(srv), what="the GET stream open")
        peer.kill()  # gone at once (a graceful stop waits 5 s for the open GET stream)
        poll(lambda: srv.status == "degraded", what="degraded without a call")
        assert "GET stream" in srv.reason and "Connection refused" in srv.reason, srv.reason
        peer.start()
        # the stream's backoff is at most 30 s; it renews the forgotten session on its own
        poll(lambda: srv.status == "connected" and _listening(srv), 60, "connected again")
        assert srv.reason is None
        assert [s for s, _ in statuses][-2:] == ["degraded", "connected"]
        assert srv.call_tool("mcp__peer__echo", {"message": "hi"}).text == "hi"
    finally:
        srv.stop()
        peer.close()


def test_a_call_answer_again_makes_a_degraded_server_connected():
    peer = HttpPeer.sdk("--json").start()
    srv = McpServer(peer.spec("peer"), protocol="legacy")
    try:
        srv.start_f().result(WAIT)
        poll(lambda: _listening(srv), what="the GET stream open")
        peer.kill()  # gone at once (a graceful stop waits 5 s for the open GET stream)
        poll(lambda: srv.status == "degraded", what="degraded without a call")
        peer.start()
        assert srv.call_tool("mcp__peer__echo", {"message": "back"}, timeout=WAIT).text == "back"
        assert srv.status == "connected" and srv.reason is None
    finally:
        srv.stop()
        peer.close()


@pytest.mark.parametrize("kind", ["sdk-json", "everything"])
def test_a_server_that_crashes_during_a_call_is_not_reported_as_unreachable(kind):
    """The call had connected and was sent: its error says the connection went during it
    (the outcome is unknown), not that the server could not be reached."""
    need(kind)
    peer = PEERS[kind]().start()
    srv = McpServer(peer.spec("peer"), protocol="legacy")
    try:
        srv.start_f().result(WAIT)
        assert srv.status == "connected", srv.reason
        progressed = threading.Event()
        name, args = _slow(kind, 30, steps=300)  # its first progress after 0.1 s
        future = srv.call_tool_f(name, args, timeout=WAIT,
                                 on_progress=lambda *a: progressed.set())
        if kind == "everything":  # its answer is a stream: the call is under way once it moves
            assert progressed.wait(WAIT)
        else:  # a JSON answer: the POST is out and waits for its answer
            poll(lambda: srv._transport.channel._in_flight == 1, what="the call in flight")
        peer.kill()
        with pytest.raises(TransportError) as caught:
            future.result(WAIT)
        message = str(caught.value)
        if kind == "everything":  # the stream broke; resuming it found the port closed
            assert "the answer's event stream broke off and could not be resumed" in message
        else:
            assert "during the request; the server may have received it" in message
            assert "cannot connect" not in message
        assert srv.status == "degraded"
    finally:
        srv.stop()
        peer.close()
