"""Sessions of the handshake era over HTTP (``wsgi_app(tools, sessions=True)``): the
``Mcp-Session-Id`` lifecycle, what a session keeps (log level, subscriptions, its requests'
contexts), and event streams resumed with ``Last-Event-ID``; raider_sync's client and the
official SDK's."""
from __future__ import annotations

import asyncio
import json
import queue
import threading

import pytest
import requests

from raider_sync import Context, McpServer, ToolServer
from raider_sync.gateway.cli import Serving
from raider_sync.serve.resumable import ResumableStream, parse_event_id
from raider_sync.serve.serving_http import wsgi_app

from conftest import config_of

WAIT = 30.0
VERSION = "2025-11-25"
ACCEPT = "application/json, text/event-stream"


def session_tools(release: threading.Event, started: threading.Event,
                  cancelled: threading.Event) -> ToolServer:
    tools = ToolServer("sessions")
    tools.add_resource("test://watched", lambda: "v1", name="watched")

    @tools.tool()
    def chatty(ctx: Context) -> str:
        """Log at three levels."""
        for level in ("debug", "info", "warning"):
            ctx.log(level, f"a {level} message", logger="chatty")
        return "logged"

    @tools.tool()
    def polled(ctx: Context) -> str:
        """Close the answer's stream, then answer once released."""
        ctx.close_stream()
        release.wait(WAIT)
        return "answered after the reconnection"

    @tools.tool()
    def waits(ctx: Context) -> str:
        """Wait until cancelled."""
        started.set()
        while not ctx.cancelled and not release.is_set():
            release.wait(0.01)
        if ctx.cancelled:
            cancelled.set()
        return "done"

    return tools


class Served:
    def __init__(self):
        self.release, self.started, self.cancelled = (threading.Event(), threading.Event(),
                                                      threading.Event())
        self.tools = session_tools(self.release, self.started, self.cancelled)
        self.app = wsgi_app(self.tools, sessions=True)
        self.serving = Serving(self.app).start()
        self.url = f"{self.serving.url}/mcp"

    def close(self) -> None:
        self.release.set()
        self.app.close()
        self.serving.stop(10)
        self.tools.close()

    def post(self, message: dict, session: str | None = None, **kw) -> requests.Response:
        headers = {"Accept": ACCEPT, "MCP-Protocol-Version": VERSION}
        if session is not None:
            headers["Mcp-Session-Id"] = session
        return requests.post(self.url, json=message, headers=headers, timeout=WAIT, **kw)

    def initialize(self) -> str:
        answer = self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": VERSION, "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}})
        assert answer.status_code == 200, answer.text
        session = answer.headers["Mcp-Session-Id"]
        assert self.post({"jsonrpc": "2.0", "method": "notifications/initialized"},
                         session).status_code == 202
        return session


@pytest.fixture
def served():
    serving = Served()
    yield serving
    serving.close()


def events(body: str) -> list[dict]:
    """The SSE events of a body: ``{"id", "data", "retry"}`` each."""
    found = []
    for block in body.split("\n\n"):
        event: dict = {}
        for line in block.splitlines():
            field, _, value = line.partition(":")
            event[field] = value.strip()
        if event:
            found.append(event)
    return found


def test_a_session_is_opened_named_and_ended(served):
    session = served.initialize()
    assert len(session) >= 32 and session.isascii() and session.isprintable()
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    assert served.post(call, session).json()["result"]["tools"]
    missing = served.post(call)
    assert missing.status_code == 400 and "Mcp-Session-Id" in missing.json()["error"]["message"]
    assert served.post(call, "no-such-session").status_code == 404
    other = served.initialize()
    assert other != session
    ended = requests.delete(served.url, headers={"Mcp-Session-Id": session}, timeout=WAIT)
    assert ended.status_code == 204
    assert served.post(call, session).status_code == 404
    assert served.post(call, other).status_code == 200  # the other session goes on
    assert requests.delete(served.url, headers={"Mcp-Session-Id": session},
                           timeout=WAIT).status_code == 404


def test_without_sessions_delete_is_not_allowed():
    with ToolServer("plain") as tools:
        app = wsgi_app(tools)
        serving = Serving(app).start()
        try:
            answer = requests.delete(f"{serving.url}/mcp", timeout=WAIT)
            assert answer.status_code == 405 and answer.headers["Allow"] == "GET, POST"
        finally:
            app.close()
            serving.stop(10)


def test_a_stream_cut_mid_call_is_resumed_with_last_event_id(served):
    session = served.initialize()
    first = served.post({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                         "params": {"name": "polled", "arguments": {}}}, session)
    assert first.headers["Content-Type"].startswith("text/event-stream")
    sent = events(first.text)
    assert sent[0]["data"] == "" and sent[0]["retry"] and sent[0]["id"]  # priming, first
    assert not any('"result"' in e.get("data", "") for e in sent)  # cut before the answer
    last = sent[-1]["id"]
    assert parse_event_id(last) is not None
    served.release.set()
    resumed = requests.get(served.url, headers={"Accept": "text/event-stream",
                                                "Mcp-Session-Id": session,
                                                "Last-Event-ID": last}, timeout=WAIT)
    answers = [json.loads(e["data"]) for e in events(resumed.text) if e.get("data")]
    assert answers[-1]["id"] == 7
    assert answers[-1]["result"]["content"][0]["text"] == "answered after the reconnection"
    gone = requests.get(served.url, headers={"Accept": "text/event-stream",
                                             "Mcp-Session-Id": session,
                                             "Last-Event-ID": "s999-1"}, timeout=WAIT)
    assert gone.status_code == 404


def test_notifications_cancelled_reaches_the_handler_of_its_session(served):
    session = served.initialize()
    box: list = []
    call = threading.Thread(target=lambda: box.append(served.post(
        {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
         "params": {"name": "waits", "arguments": {}}}, session)))
    call.start()
    try:
        assert served.started.wait(WAIT)
        assert served.post({"jsonrpc": "2.0", "method": "notifications/cancelled",
                            "params": {"requestId": 9}}, session).status_code == 202
        assert served.cancelled.wait(WAIT)
    finally:
        served.release.set()
        call.join(WAIT)
    assert box and box[0].status_code == 200


def test_each_session_keeps_its_log_level_and_subscriptions(served):
    spec = config_of({"s": {"type": "http", "url": served.url,
                            "protocol": "legacy"}}).server("s")
    quiet_logs: list = []
    loud_logs: list = []
    updates: queue.Queue = queue.Queue()
    loud_done = threading.Event()

    def loud_log(server, level, logger, data) -> None:
        loud_logs.append(level)
        if len(loud_logs) == 3:
            loud_done.set()

    with McpServer(spec, on_log=lambda server, level, *rest: quiet_logs.append(level),
                   on_resource_updated=lambda server, uri: updates.put(uri)) as quiet, \
            McpServer(spec, on_log=loud_log) as loud:
        assert quiet.status == loud.status == "connected", (quiet.reason, loud.reason)
        quiet.set_log_level("warning", timeout=WAIT)
        loud.set_log_level("debug", timeout=WAIT)
        quiet.call_tool("mcp__s__chatty", {}, timeout=WAIT)
        loud.call_tool("mcp__s__chatty", {}, timeout=WAIT)
        assert loud_done.wait(WAIT)
        quiet.subscribe("test://watched", timeout=WAIT)
        served.tools.resource_updated("test://watched")
        assert updates.get(timeout=WAIT) == "test://watched"
        quiet.ping(timeout=WAIT)
    assert loud_logs == ["debug", "info", "warning"]
    assert quiet_logs == ["warning"]


def test_the_sdk_client_keeps_a_session(served):
    from mcp import Client

    async def run() -> tuple:
        async with Client(served.url, mode="legacy") as client:
            await client.set_logging_level("info")
            result = await client.call_tool("chatty", {})
            listed = await client.list_tools()
            return result.content[0].text, [tool.name for tool in listed.tools]

    import warnings
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "The logging capability is deprecated")
        text, names = asyncio.run(asyncio.wait_for(run(), WAIT))
    assert text == "logged" and "polled" in names


def test_a_resumable_stream_keeps_its_events_and_ends_a_cut_connection_in_order():
    stream = ResumableStream("s1", keepalive=5.0, retry_ms=100, keep=3)
    first = stream.body()
    assert next(first).startswith(b"retry: 100\nid: s1-0\ndata: \n")
    stream.put({"n": 1})
    stream.cut()
    stream.put({"n": 2})  # after the cut: not on the first connection
    assert b'"n":1' in next(first)
    with pytest.raises(StopIteration):
        next(first)
    for n in range(3, 6):
        stream.put({"n": n})
    stream.end()
    resumed = b"".join(stream.body(after=1, priming=False))
    # at most 3 events are kept: 2 fell out; what is kept comes in order
    assert resumed.count(b"data:") == 3 and resumed.index(b'"n":3') < resumed.index(b'"n":5')
    assert b'"n":2' not in resumed


def asking_tools(outcome: queue.Queue) -> ToolServer:
    """A ToolServer whose tool ``asks`` elicits an answer and puts what came of it."""
    tools = ToolServer("asking")

    @tools.tool()
    def asks(ctx: Context) -> str:
        """Ask the client, and say what came of it."""
        try:
            outcome.put(ctx.elicit("Which?", {"type": "object", "properties": {}}))
        except Exception as exc:  # noqa: BLE001 - what ended the question is the point
            outcome.put(type(exc).__name__)
        return "done"

    return tools


@pytest.mark.parametrize("ending", ["delete", "cancel"])
def test_a_question_ends_when_its_session_ends_or_its_request_is_cancelled(ending):
    outcome: queue.Queue = queue.Queue()
    tools = asking_tools(outcome)
    app = wsgi_app(tools, sessions=True)
    serving = Serving(app).start()
    url = f"{serving.url}/mcp"
    headers = {"Accept": ACCEPT, "MCP-Protocol-Version": VERSION}
    try:
        opened = requests.post(url, headers=headers, timeout=WAIT, json={
            "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": VERSION, "capabilities": {"elicitation": {}},
                "clientInfo": {"name": "t", "version": "1"}}})
        headers["Mcp-Session-Id"] = opened.headers["Mcp-Session-Id"]
        with requests.post(url, headers=headers, timeout=WAIT, stream=True, json={
                "jsonrpc": "2.0", "id": 5, "method": "tools/call",
                "params": {"name": "asks", "arguments": {}}}) as call:
            for line in call.iter_lines():  # until the question is on the stream
                if line.startswith(b"data:") and b"elicitation/create" in line:
                    break
            if ending == "delete":
                assert requests.delete(url, headers=headers, timeout=WAIT).status_code == 204
            else:
                assert requests.post(url, headers=headers, timeout=WAIT, json={
                    "jsonrpc": "2.0", "method": "notifications/cancelled",
                    "params": {"requestId": 5}}).status_code == 202
            # not the question's 300 s: the handler is freed at once
            assert outcome.get(timeout=WAIT) in ("McpError", "RequestCancelled")
    finally:
        app.close()
        serving.stop(10)
        tools.close()


def question_id(call: requests.Response) -> str:
    """The id of the question a streamed call's handler puts to the client."""
    for line in call.iter_lines():
        if line.startswith(b"data:") and b"elicitation/create" in line:
            return json.loads(line[5:])["id"]
    raise AssertionError("no question on the stream")


def test_a_question_cannot_be_answered_by_a_client_that_guesses_its_id():
    outcome: queue.Queue = queue.Queue()
    tools = asking_tools(outcome)
    app = wsgi_app(tools, sessions=True)
    serving = Serving(app).start()
    url = f"{serving.url}/mcp"

    def headers_of_new_session() -> dict:
        headers = {"Accept": ACCEPT, "MCP-Protocol-Version": VERSION}
        opened = requests.post(url, headers=headers, timeout=WAIT, json={
            "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": VERSION, "capabilities": {"elicitation": {}},
                "clientInfo": {"name": "t", "version": "1"}}})
        return {**headers, "Mcp-Session-Id": opened.headers["Mcp-Session-Id"]}

    def answer(headers: dict, to: str, who: str) -> None:
        assert requests.post(url, headers=headers, timeout=WAIT, json={
            "jsonrpc": "2.0", "id": to, "result": {"action": "accept",
                                                   "content": {"who": who}}}).status_code == 202

    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "asks", "arguments": {}}}
    victim, intruder = headers_of_new_session(), headers_of_new_session()
    try:
        with requests.post(url, headers=intruder, json=call, timeout=WAIT, stream=True) as own, \
                requests.post(url, headers=victim, json=call, timeout=WAIT, stream=True) as theirs:
            seen = question_id(own)
            asked = question_id(theirs)
            stem, _, number = seen.rpartition("-")  # the ids next to its own
            for n in (-1, 1, 2) if number.isdigit() else ():
                answer(intruder, f"{stem}-{int(number) + n}", "intruder")
            answer(victim, asked, "victim")
            assert outcome.get(timeout=WAIT)["content"] == {"who": "victim"}
    finally:
        app.close()
        serving.stop(10)
        tools.close()


def test_a_session_forgets_the_oldest_ended_streams_of_its_calls():
    from raider_sync.serve.http_sessions import KEEP_ENDED_STREAMS, HttpSession

    with ToolServer("kept") as tools:
        session = HttpSession(tools, "s", page_size=10, keepalive=5.0)
        streams = [session.new_stream() for _ in range(KEEP_ENDED_STREAMS + 5)]
        listening = session.new_stream("g")
        for stream in streams:
            stream.end({"jsonrpc": "2.0", "id": 1, "result": {}})
        assert [session.stream(s.stream_id) for s in streams[:5]] == [None] * 5
        assert all(session.stream(s.stream_id) is s for s in streams[5:]), \
            "the last ended ones stay, for a client that resumes"
        assert session.stream(listening.stream_id) is listening
        running = session.new_stream()
        assert session.stream(running.stream_id) is running


def test_a_sessions_get_streams_count_against_max_streams():
    with ToolServer("few") as tools:
        app = wsgi_app(tools, sessions=True, max_streams=1)
        serving = Serving(app).start()
        url = f"{serving.url}/mcp"
        try:
            opened = requests.post(url, timeout=WAIT, json={
                "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                    "protocolVersion": VERSION, "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"}}},
                headers={"Accept": ACCEPT, "MCP-Protocol-Version": VERSION})
            headers = {"Accept": "text/event-stream", "MCP-Protocol-Version": VERSION,
                       "Mcp-Session-Id": opened.headers["Mcp-Session-Id"]}
            with requests.get(url, headers=headers, timeout=WAIT, stream=True) as first:
                assert first.status_code == 200
                assert next(first.iter_lines()).startswith(b"retry:")  # it is open
                with requests.get(url, headers=headers, timeout=WAIT, stream=True) as second:
                    assert second.status_code == 503 and second.headers["Retry-After"]
        finally:
            app.close()
            serving.stop(10)
