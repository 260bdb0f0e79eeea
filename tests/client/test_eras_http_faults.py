"""Bad input of the stateless era over Streamable HTTP (the stdio cases are in
test_eras.py): a discover answered with garbage, a server that lies about its era, an
input_required loop, a listen stream cut short. Each gives a clear error or the documented
fallback, within a bound."""
from __future__ import annotations

import pytest

from raider_sync import McpError, McpServer, SubscriptionEnded
from raider_sync.gateway.serving import Serving

from conftest import config_of
from fakes.modern_http_fake import ModernHttpFake

WAIT = 15.0


@pytest.fixture
def fake():
    """fake(mode, **entry) -> (McpServer started, the fake app)."""
    opened: list = []

    def make(mode: str, **options):
        app = ModernHttpFake(mode)
        serving = Serving(app).start()
        opened.append(serving)
        spec = config_of({"mf": {"type": "http", "url": f"{serving.url}/mcp"}}).server("mf")
        server = McpServer(spec, **options)
        opened.append(server)
        server.start_f().result(WAIT * 2)
        return server, app

    yield make
    for thing in reversed(opened):
        thing.stop()


def test_garbage_from_discover_means_the_handshake(fake):
    server, app = fake("garbage")
    assert server.status == "connected", server.reason
    assert server.era == "legacy" and server.server_info["name"] == "garbage-http-fake"
    assert app.seen[:2] == ["server/discover", "initialize"]


def test_a_server_that_lies_about_its_era_fails_with_its_answer(fake):
    server, _ = fake("lies")
    assert server.status == "failed"
    assert "Server not initialized" in server.reason


def test_an_endless_input_loop_is_bounded(fake):
    server, app = fake("loop", roots=["file:///work"], max_input_rounds=2)
    with pytest.raises(McpError, match="asked for input 2 times"):
        server.call_tool("mcp__mf__echo", {}, timeout=WAIT)
    assert app.seen.count("tools/call") == 3


def test_a_listen_stream_cut_short_ends_the_subscription(fake):
    server, _ = fake("listen-cut")
    sub = server.listen(tools=True)
    assert sub.wait_acknowledged(WAIT)
    with pytest.raises(SubscriptionEnded, match="the server ended the stream"):
        sub.next(WAIT)
    sub.close()
    assert server.call_tool("mcp__mf__echo", {}).text == "echo", "the server stays usable"
