"""McpServer over the legacy HTTP+SSE transport (``"type": "sse"``): the official SDK's server
for features, tests/fakes/http_fault_server.py for the endpoint rules."""
from __future__ import annotations

import threading
import time

import pytest

from raider_sync import McpError, McpServer, ToolTimeout
from raider_sync.transports.sse import LegacySseTransport

from conftest import config_of
from fakes.http_fault_server import FaultServer
from fakes.http_peers import HttpPeer

WAIT = 15.0


@pytest.fixture(scope="module")
def peer():
    server = HttpPeer.sdk_sse().start()
    yield server
    server.close()


@pytest.fixture
def connect():
    clients: list[McpServer] = []

    def make(spec, **options) -> McpServer:
        server = McpServer(spec, **options)
        clients.append(server)
        server.start_f().result(WAIT)
        return server

    yield make
    for server in clients:
        server.stop()


def legacy_spec(url: str):
    return config_of({"old": {"type": "sse", "url": url}}).server("old")


def test_sdk_server_over_legacy_sse(peer, connect):
    srv = connect(peer.spec("old"))
    assert srv.status == "connected", srv.reason
    assert isinstance(srv._transport, LegacySseTransport)
    assert srv._transport.endpoint.startswith(peer.url.rsplit("/", 1)[0] + "/messages")
    assert "mcp__old__echo" in srv.tool_names
    assert srv.call_tool("echo", {"message": "hi"})["content"][0]["text"] == "hi"
    assert srv.call_tool("add", {"a": 2, "b": 3})["content"][0]["text"] == "5"
    assert srv.list_prompts()[0]["name"] == "greet"
    assert srv.read_resource("test://hello")[0]["text"] == "hello from the sdk"
    with pytest.raises(McpError):
        srv.get_prompt("no-such-prompt")


def test_progress_timeout_and_another_call(peer, connect):
    srv = connect(peer.spec("old"))
    progress = []
    assert srv.call_tool("slow", {"seconds": 0.4},
                         on_progress=lambda p, t, m: progress.append(p))["content"]
    assert progress[:3] == [1, 2, 3]
    started = time.monotonic()
    with pytest.raises(ToolTimeout):
        srv.call_tool("slow", {"seconds": 5}, timeout=0.5)
    assert time.monotonic() - started < 2.5
    assert srv.call_tool("echo", {"message": "again"})["content"][0]["text"] == "again"


def test_list_changed_arrives_on_the_stream(peer, connect):
    changed = threading.Event()
    srv = connect(peer.spec("old"), on_tools_changed=lambda s: changed.set())
    srv.call_tool("grow", {})
    assert changed.wait(WAIT)


def test_stop_ends_the_stream_and_joins_the_reader(peer, connect):
    srv = connect(peer.spec("old"))
    assert any(t.name == "raider-old-sse" for t in threading.enumerate())
    srv.stop()
    assert not any(t.name == "raider-old-sse" and t.is_alive() for t in threading.enumerate())


def test_relative_endpoint_is_resolved_against_the_sse_url(connect):
    with FaultServer(legacy_endpoint="/messages?session=L1") as fake:
        srv = connect(legacy_spec(fake.sse_url))
        assert srv.status == "connected", srv.reason
        assert srv._transport.endpoint == f"http://127.0.0.1:{fake.port}/messages?session=L1"
        assert srv.call_tool("echo", {})["content"][0]["text"] == "legacy echo"
        srv.stop()


@pytest.mark.parametrize("endpoint", ["http://evil.example/messages?session=L1",
                                      "https://127.0.0.1:{port}/messages?session=L1",
                                      "//127.0.0.2:{port}/messages"])
def test_endpoint_on_another_origin_is_refused(connect, endpoint):
    with FaultServer() as fake:
        fake.legacy_endpoint = endpoint.format(port=fake.port)
        srv = connect(legacy_spec(fake.sse_url))
        assert srv.status == "failed"
        assert "another origin" in srv.reason and "refused" in srv.reason
        assert not [m for m, path, *_ in fake.seen if m == "POST"]
        srv.stop()


def test_a_url_that_is_no_event_stream_fails_the_start(connect):
    with FaultServer() as fake:
        srv = connect(legacy_spec(fake.url.replace("/mcp", "/nothing")))
        assert srv.status == "failed"
        assert "not an event stream" in srv.reason or "HTTP 4" in srv.reason
        srv.stop()
