"""FastMCP's server as a peer in both eras, over stdio and Streamable HTTP: calls, progress,
resources, prompts, elicitation (a server request in the handshake era, input_required
rounds in the stateless one), list changes, and a modern-only server.

FastMCP 4.1.4, like the official SDK 2.3.0, always serves both eras and has no option to
serve the stateless revision alone; its public middleware can refuse ``initialize`` though
(``--modern-only`` of the peer), which makes a modern-only server out of public parts. It
serves no ``subscriptions/listen``: in the stateless era a change of its tool list reaches
only the stream of the request that made it."""
from __future__ import annotations

import sys
import threading

import pytest

from raider_sync import McpError, McpServer

from conftest import FASTMCP_SERVER, config_of
from fakes.http_peers import HttpPeer

WAIT = 30.0


def accept(params: dict) -> dict:
    return {"action": "accept", "content": {"answer": "Ada"}}


@pytest.fixture(params=["stdio", "http"])
def connect(request):
    """connect(protocol, *flags, **options): a started McpServer of the FastMCP peer over
    the transport of the test's parameter."""
    started: list = []

    def make(protocol: str, *flags: str, **options) -> McpServer:
        if request.param == "stdio":
            spec = config_of({"fm": {"command": sys.executable,
                                     "args": [FASTMCP_SERVER, "stdio", *flags],
                                     "protocol": protocol}}).server("fm")
            options.setdefault("kill_grace", 0.3)
        else:
            peer = HttpPeer.fastmcp(*flags).start()
            started.append(peer)
            spec = peer.spec("fm", protocol=protocol)
        server = McpServer(spec, on_elicitation=accept, **options)
        started.append(server)
        server.start_f().result(WAIT)
        return server

    yield make
    for thing in reversed(started):
        if isinstance(thing, McpServer):
            thing.stop()
        else:
            thing.close()


@pytest.mark.parametrize("protocol,era", [("auto", "modern"), ("legacy", "legacy")])
def test_fastmcp_in_either_era(connect, protocol, era):
    server = connect(protocol)
    assert server.status == "connected", server.reason
    assert server.era == era and server.server_info["name"] == "raider-test-fastmcp"
    assert server.instructions == "A test server built with FastMCP."
    assert server.call_tool("mcp__fm__add", {"a": 2, "b": 3}).text == "5"
    steps = []
    assert server.call_tool("mcp__fm__slow", {"seconds": 0.2},
                            on_progress=lambda p, t, m: steps.append((p, t))).text == "slept 0.2"
    assert steps == [(1, 4), (2, 4), (3, 4), (4, 4)]
    answer = server.call_tool("mcp__fm__ask", {"question": "Name?"}).text
    assert answer.startswith("accept: Ada"), answer
    if era == "modern":
        assert answer.endswith("(state asked)"), "the request state came back byte-exact"
    assert server.read_resource("test://hello")[0]["text"] == "hello from fastmcp"
    prompt = server.get_prompt("greet", {"name": "B"})
    assert prompt["messages"][0]["content"]["text"] == "Please greet B."
    asked = server.request("tools/call", {"name": "ask", "arguments": {"question": "Q?"}})
    assert asked["content"][0]["text"].startswith("accept: Ada"), "raw requests take rounds too"


def test_list_changes_of_fastmcp(connect):
    """The handshake era: announced, and listed again. The stateless era: FastMCP serves no
    listen, so opening one raises its answer, and nothing hangs."""
    changed = threading.Event()
    legacy = connect("legacy", on_tools_changed=lambda s: changed.set())
    with legacy.listen(tools=True) as sub:
        assert legacy.call_tool("mcp__fm__grow", {}).text == "grown"
        event = sub.next(WAIT)
        assert event is not None and event["method"] == "notifications/tools/list_changed"
    assert changed.wait(WAIT)
    assert "mcp__fm__extra" in {tool["name"] for tool in legacy.list_tools(WAIT)}
    modern = connect("auto")
    assert modern.era == "modern"
    with pytest.raises(McpError, match="'fm' cannot serve this listen: subscriptions/listen "
                                       "was answered with 'Method not found'") as refused:
        modern.listen(tools=True, timeout=WAIT)
    assert refused.value.code == -32601, "the server's own code"
    assert modern.call_tool("mcp__fm__add", {"a": 1, "b": 1}).text == "2", "still usable"


def test_a_modern_only_fastmcp_server(connect):
    modern = connect("auto", "--modern-only")
    assert modern.status == "connected", modern.reason
    assert modern.era == "modern"
    assert modern.call_tool("mcp__fm__ask", {"question": "Name?"}).text.startswith("accept: Ada")
    refused = connect("legacy", "--modern-only")
    assert refused.status == "failed"
    assert "2026-07-28" in refused.reason and "2025-11-25" in refused.reason
