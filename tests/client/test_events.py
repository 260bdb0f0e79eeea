"""Events, the client's side: McpServer.list_events and McpServer.events against a served
ToolServer, over HTTP, in process (the stdio session over queues) and over a real stdio
child, by poll and by push: delivery, a stored cursor resumed, a cursor too old, repeats
dropped, a silent stream opened again, refusals, and nothing left running after close."""
from __future__ import annotations

import contextlib
import sys
import textwrap
import threading
import time
from typing import Iterator

import pytest

from raider_sync import McpError, McpServer, ToolServer
from raider_sync.errors import SubscriptionEnded
from raider_sync.serve.serving_http import wsgi_app
from raider_sync.serve.wsgi_server import Serving

from conftest import config_of

WAIT = 30.0
FLOOR = 0.05


def event_tools() -> ToolServer:
    tools = ToolServer("local")
    tools.event("tick", input_schema={"type": "object", "properties": {"env": {"type": "string"}}},
                delivery=("poll", "push"))
    tools.event("polled", delivery=("poll",))
    tools.served_events.configure(heartbeat=0.2, next_poll=0.05)
    return tools


@pytest.fixture
def tools():
    server = event_tools()
    yield server
    server.close()


@pytest.fixture(params=["http", "in-process"])
def server(request, tools):
    if request.param == "in-process":
        with McpServer.in_process(tools, protocol="modern") as client:
            yield client
        return
    with served_over_http(tools) as client:
        yield client


@contextlib.contextmanager
def served_over_http(tools: ToolServer) -> Iterator[McpServer]:
    """A client of ``tools`` served by ``wsgi_app`` on a loopback port (the stateless era)."""
    app = wsgi_app(tools)
    serving = Serving(app).start()
    spec = config_of({"local": {"type": "http", "url": f"{serving.url}/mcp",
                                "protocol": "modern"}}).server("local")
    try:
        with McpServer(spec) as client:
            yield client
    finally:
        app.close(2)
        serving.stop(10)


def event_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if "-events-" in t.name and t.is_alive()]


def data_of(sub, count: int) -> list:
    return [sub.next(WAIT)["data"] for _ in range(count)]


def test_the_event_types_are_listed(server):
    names = {entry["name"]: entry["delivery"] for entry in server.list_events()}
    assert names == {"tick": ["poll", "push"], "polled": ["poll"]}


@pytest.mark.parametrize("mode", ["poll", "push"])
def test_events_come_in_order_filtered_by_the_arguments(server, tools, mode):
    with server.events("tick", {"env": "prod"}, mode=mode, poll_floor=FLOOR,
                       heartbeat=5) as sub:
        assert sub.mode == mode and sub.cursor is not None
        tools.publish("tick", 1, arguments_match={"env": "prod"})
        tools.publish("tick", 2, arguments_match={"env": "dev"})
        tools.publish("tick", 3)
        assert data_of(sub, 2) == [1, 3]
        assert sub.next(0.3) is None, "the event for another env was not delivered"
        assert event_threads()
    assert event_threads() == [], "close joined the subscription's thread"
    with pytest.raises(SubscriptionEnded):
        sub.next(0)


def test_auto_pushes_where_offered_else_polls(server):
    with server.events("tick", poll_floor=FLOOR) as pushed, \
            server.events("polled", poll_floor=FLOOR) as polled:
        assert (pushed.mode, polled.mode) == ("push", "poll")


@pytest.mark.parametrize("mode", ["poll", "push"])
def test_a_stored_cursor_resumes_after_what_was_taken(server, tools, mode):
    with server.events("tick", mode=mode, poll_floor=FLOOR, heartbeat=5) as sub:
        tools.publish("tick", "a")
        tools.publish("tick", "b")
        assert data_of(sub, 2) == ["a", "b"]
        stored = sub.cursor
    tools.publish("tick", "c")  # while nobody listens
    with server.events("tick", mode=mode, cursor=stored, poll_floor=FLOOR, heartbeat=5) as again:
        assert data_of(again, 1) == ["c"]
        assert again.next(0.3) is None, "nothing before the stored cursor came again"
        assert not again.truncated


def test_a_cursor_taken_midway_repeats_rather_than_loses(server, tools):
    with server.events("tick", mode="poll", poll_floor=5) as sub:
        start = sub.cursor
        for n in range(3):
            tools.publish("tick", n)
        # one poll later, all three are queued: the first taken, two still waiting
        with server.events("tick", mode="poll", cursor=start, poll_floor=5) as reader:
            assert data_of(reader, 1) == [0]
            midway = reader.cursor
    with server.events("tick", mode="poll", cursor=midway, poll_floor=5) as again:
        assert data_of(again, 3) == [0, 1, 2], "nothing after the cursor was lost"


@pytest.mark.parametrize("mode", ["poll", "push"])
def test_a_cursor_older_than_the_log_is_truncated(server, tools, mode):
    tools.served_events.configure(log_size=2)
    with server.events("tick", mode=mode, poll_floor=FLOOR, heartbeat=5) as sub:
        stored = sub.cursor
    for n in range(5):
        tools.publish("tick", n)
    with server.events("tick", mode=mode, cursor=stored, poll_floor=FLOOR, heartbeat=5) as sub:
        assert sub.truncated
        assert data_of(sub, 2) == [3, 4]


@pytest.mark.parametrize("mode", ["poll", "push"])
def test_a_repeated_event_id_is_delivered_once(server, tools, mode):
    with server.events("tick", mode=mode, poll_floor=FLOOR, heartbeat=5) as sub:
        tools.publish("tick", "first", event_id="upstream-1")
        tools.publish("tick", "again", event_id="upstream-1")
        tools.publish("tick", "next", event_id="upstream-2")
        assert data_of(sub, 2) == ["first", "next"]


def test_a_silent_stream_is_opened_again_from_its_cursor(server, tools):
    tools.served_events.configure(heartbeat=30)  # the server's heartbeats are far apart
    with server.events("tick", mode="push", heartbeat=0.2) as sub:
        tools.publish("tick", "before")
        assert data_of(sub, 1) == ["before"]
        # 0.4 s of silence: the stream is dead to the client, which opens another
        tools.publish("tick", "after")
        assert data_of(sub, 1) == ["after"]
        deadline = time.monotonic() + WAIT
        while sub.streams_opened < 2 and time.monotonic() < deadline:
            time.sleep(0.05)  # a bounded poll of a counter the client's thread moves
        assert sub.streams_opened >= 2
        assert sub.next(0.5) is None, "reopening from the cursor repeated nothing"


@pytest.mark.parametrize("name,mode,code", [("nope", "poll", -32023), ("nope", "push", -32023),
                                            ("polled", "push", -32026), ("nope", "auto", -32023)])
def test_a_refused_subscription_raises_at_once(server, name, mode, code):
    with pytest.raises(McpError) as caught:
        server.events(name, mode=mode)
    assert caught.value.code == code
    assert event_threads() == []


def test_bad_arguments_are_named(server):
    with pytest.raises(McpError, match="env: expected string"):
        server.events("tick", {"env": 3}, mode="poll")
    with pytest.raises(ValueError, match="mode"):
        server.events("tick", mode="webhook")


def test_a_server_without_events_is_not_asked():
    with ToolServer("plain") as plain, McpServer.in_process(plain, protocol="modern") as server:
        with pytest.raises(McpError, match="does not offer events") as caught:
            server.list_events()
        assert caught.value.code == -32601
    with event_tools() as tools, McpServer.in_process(tools, protocol="legacy") as server:
        with pytest.raises(McpError, match="does not offer events"):
            server.events("tick")


@pytest.mark.parametrize("mode", ["poll", "push"])
def test_stopping_the_server_ends_the_subscription(tools, mode):
    server = McpServer.in_process(tools, protocol="modern")
    server.initialize()
    sub = server.events("tick", mode=mode, poll_floor=FLOOR, heartbeat=5)
    server.stop()
    with pytest.raises(SubscriptionEnded):
        while sub.next(WAIT) is not None:
            pass
    sub.close()
    assert event_threads() == []


STDIO_SERVER = textwrap.dedent('''
    from raider_sync import ToolServer

    tools = ToolServer("child")
    tools.event("tick", delivery=("poll", "push"))
    tools.served_events.configure(heartbeat=0.2, next_poll=0.05)

    @tools.tool()
    def fire(n: int) -> str:
        "Publish the event tick with n."
        return tools.publish("tick", n)

    tools.serve_stdio()
''')


@pytest.mark.parametrize("mode", ["poll", "push"])
def test_over_a_stdio_child(tmp_path, mode):
    script = tmp_path / "child.py"
    script.write_text(STDIO_SERVER)
    spec = config_of({"child": {"command": sys.executable, "args": [str(script)],
                                "protocol": "modern"}}).server("child")
    with McpServer(spec, kill_grace=0.5) as server:
        with server.events("tick", mode=mode, poll_floor=FLOOR, heartbeat=5) as sub:
            server.call_tool("mcp__child__fire", {"n": 7})
            server.call_tool("mcp__child__fire", {"n": 8})
            assert data_of(sub, 2) == [7, 8]
            stored = sub.cursor
        server.call_tool("mcp__child__fire", {"n": 9})
        with server.events("tick", mode=mode, cursor=stored, poll_floor=FLOOR,
                           heartbeat=5) as again:
            assert data_of(again, 1) == [9]
