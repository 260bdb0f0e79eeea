"""Streamable HTTP and legacy SSE against tests/fakes/http_fault_server.py sending what breaks
readers: events nested too deeply for the JSON parser, events and bodies over the message
size limit."""
from __future__ import annotations

import threading
import tracemalloc

import pytest

from raider_sync import ConnectionClosed, McpServer, TransportError

from conftest import config_of, poll

WAIT = 15.0
MiB = 1 << 20


@pytest.fixture
def connect():
    clients: list[McpServer] = []

    def make(url: str, kind: str = "http", **options) -> McpServer:
        spec = config_of({"fault": {"type": kind, "url": url}}).server("fault")
        client = McpServer(spec, **options)
        clients.append(client)
        client.start_f().result(WAIT)
        assert client.status == "connected", client.reason
        return client

    yield make
    for client in clients:
        client.stop()


def text_of(result: dict) -> str:
    return result["content"][0]["text"]


def test_a_deep_event_in_an_answer_stream_is_skipped(fake, connect):
    client = connect(fake(answer="sse").url)
    assert text_of(client.call_tool("deep", {}, timeout=10)) == "deep: {}"
    assert text_of(client.call_tool("echo", {"n": 1}, timeout=10)) == "echo: {'n': 1}"


def test_a_deep_event_on_the_get_stream_does_not_end_the_listener(fake, connect):
    changed = threading.Event()
    connect(fake(get_stream="deep").url, on_tools_changed=lambda _: changed.set())
    # the notification after the deep event still arrives: the listener outlived it
    assert changed.wait(WAIT)


def test_a_deep_event_on_the_legacy_stream_is_skipped(fake, connect):
    client = connect(fake().sse_url, kind="sse")
    assert text_of(client.call_tool("deep", {}, timeout=10)) == "legacy echo"
    assert text_of(client.call_tool("echo", {}, timeout=10)) == "legacy echo"
    assert client.status == "connected"


def peak_of_failed_call(client: McpServer, tool: str) -> tuple[BaseException, int]:
    """The error ``tool`` fails with, and the peak of memory traced meanwhile."""
    tracemalloc.start()
    try:
        with pytest.raises(TransportError) as caught:
            client.call_tool(tool, {}, timeout=30)
        return caught.value, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("answer, tool", [("sse", "huge"), ("json", "hugejson")])
def test_an_answer_over_the_limit_fails_its_request_not_the_connection(fake, connect, answer,
                                                                        tool):
    server = fake(answer=answer, huge_bytes=40 * MiB)
    client = connect(server.url, max_message_size=2 * MiB)
    error, peak = peak_of_failed_call(client, tool)
    assert "maximum message size of 2 MiB" in str(error)
    assert peak < 8 * MiB, f"peak {peak / MiB:.1f} MiB"
    assert text_of(client.call_tool("echo", {}, timeout=10)) == "echo: {}"
    assert client.status == "connected"


def test_a_legacy_event_over_the_limit_fails_the_connection(fake, connect):
    server = fake(huge_bytes=40 * MiB)
    client = connect(server.sse_url, kind="sse", max_message_size=2 * MiB)
    with pytest.raises(ConnectionClosed) as caught:
        client.call_tool("huge", {}, timeout=30)
    assert "maximum message size of 2 MiB" in str(caught.value)
    poll(lambda: client.status == "failed", what="status failed")
    assert "maximum message size" in client.reason
