"""Events served by a ToolServer (the draft events extension): the log and its cursors, and
the wire over HTTP: discover, events/list, events/poll, an events/stream read raw, and the
errors, each with its HTTP status."""
from __future__ import annotations

import json

import pytest
import requests

from raider_sync import InvalidArgument, ToolServer
from raider_sync.protocol.events import EXTENSION
from raider_sync.serve.events.log import EventLog
from raider_sync.serve.serving_http import wsgi_app
from raider_sync.serve.wsgi_server import Serving

WAIT = 30.0
VERSION = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"}}
HEADERS = {"Content-Type": "application/json", "MCP-Protocol-Version": VERSION,
           "Accept": "application/json, text/event-stream"}


# -- the log -------------------------------------------------------------------------------

def test_a_cursor_resumes_after_what_it_saw():
    log = EventLog(10)
    start = log.start(None)
    assert not start.truncated
    log.append("a", 1)
    log.append("a", 2)
    entries, position, more = log.after(start.position, "a", {})
    assert [e.data for e in entries] == [1, 2] and not more
    log.append("a", 3)
    again = log.start(log.cursor(position))
    assert [e.data for e in log.after(again.position, "a", {})[0]] == [3]


def test_a_cursor_older_than_the_log_is_truncated():
    log = EventLog(2)
    first = log.cursor(log.start(None).position)
    for n in range(5):
        log.append("a", n)
    start = log.start(first)
    assert start.truncated
    assert [e.data for e in log.after(start.position, "a", {})[0]] == [3, 4], \
        "the entries still kept come after the gap"


def test_an_unknown_cursor_starts_now_truncated():
    log = EventLog(10)
    log.append("a", 1)
    for cursor in ("elsewhere.1", "garbage", log.cursor(99)):
        start = log.start(cursor)
        assert start.truncated and start.position == log.position


def test_max_age_skips_old_entries_and_says_so():
    log = EventLog(10)
    begin = log.cursor(log.start(None).position)
    old = log.append("a", "old")
    object.__setattr__(old, "epoch_ms", old.epoch_ms - 60_000)  # a minute ago
    log.append("a", "new")
    start = log.start(begin, max_age_ms=10_000)
    assert start.truncated
    assert [e.data for e in log.after(start.position, "a", {})[0]] == ["new"]
    assert not log.start(begin, max_age_ms=120_000).truncated


def test_matching_by_filter_values_or_a_predicate():
    log = EventLog(10)
    log.append("a", 1, {"env": "prod"})
    log.append("a", 2, {"env": "dev"})
    log.append("a", 3, lambda arguments: arguments.get("team") == "x")
    log.append("b", 4)
    data = lambda arguments: [e.data for e in log.after(0, "a", arguments)[0]]  # noqa: E731
    assert data({"env": "prod"}) == [1]
    assert data({"env": "prod", "team": "x"}) == [1, 3]
    assert data({}) == [1, 2]
    entries, position, more = log.after(0, "a", {}, limit=1)
    assert [e.data for e in entries] == [1] and more and position == 1


def test_publishing_needs_a_declared_event():
    with ToolServer("local") as tools:
        with pytest.raises(InvalidArgument, match="not declared"):
            tools.publish("nope", {})
        with pytest.raises(InvalidArgument, match="delivery"):
            tools.event("x", delivery=("email",))
        with pytest.raises(InvalidArgument, match="input_schema"):
            tools.event("x", input_schema={"type": "string"})
        with pytest.raises(InvalidArgument, match="heartbeat"):
            tools.served_events.configure(heartbeat=0)


# -- the wire over HTTP --------------------------------------------------------------------

@pytest.fixture
def tools():
    server = ToolServer("local")
    server.event("deploy.done", description="A deploy finished",
                 input_schema={"type": "object", "properties": {"env": {"type": "string"}},
                               "additionalProperties": False},
                 payload_schema={"type": "object", "properties": {"ok": {"type": "boolean"}}},
                 delivery=("poll", "push"))
    server.event("hooked", delivery=("webhook",))
    server.served_events.configure(heartbeat=0.2, next_poll=2)
    yield server
    server.close()


@pytest.fixture
def url(tools):
    app = wsgi_app(tools)
    serving = Serving(app).start()
    yield f"{serving.url}/mcp"
    app.close(2)
    serving.stop(10)


def post(url: str, method: str, params: dict | None = None, request_id: int = 1, **kw):
    return requests.post(url, json={"jsonrpc": "2.0", "id": request_id, "method": method,
                                    "params": {**(params or {}), "_meta": META}},
                         headers={**HEADERS, "Mcp-Method": method}, timeout=WAIT, **kw)


def test_discover_advertises_the_extension_and_list_names_the_types(url):
    capabilities = post(url, "server/discover").json()["result"]["capabilities"]
    assert capabilities["extensions"][EXTENSION] == {"listChanged": False}
    result = post(url, "events/list").json()["result"]
    assert result["resultType"] == "complete"
    first = result["events"][0]
    assert first == {"name": "deploy.done", "description": "A deploy finished",
                     "delivery": ["poll", "push"],
                     "inputSchema": first["inputSchema"], "payloadSchema": first["payloadSchema"]}
    assert [e["name"] for e in result["events"]] == ["deploy.done", "hooked"]


def test_no_extension_and_no_methods_without_an_event():
    with ToolServer("plain") as plain:
        app = wsgi_app(plain)
        serving = Serving(app).start()
        try:
            url = f"{serving.url}/mcp"
            capabilities = post(url, "server/discover").json()["result"]["capabilities"]
            assert EXTENSION not in (capabilities.get("extensions") or {})
            answer = post(url, "events/list")
            assert answer.status_code == 404 and answer.json()["error"]["code"] == -32601
        finally:
            app.close(2)
            serving.stop(10)


def test_a_poll_from_now_then_from_its_cursor(url, tools):
    first = post(url, "events/poll", {"name": "deploy.done", "cursor": None}).json()["result"]
    assert first["events"] == [] and first["truncated"] is False and first["hasMore"] is False
    assert first["nextPollMs"] == 2000 and first["resultType"] == "complete"
    event_id = tools.publish("deploy.done", {"ok": True}, event_id="upstream-7")
    second = post(url, "events/poll", {"name": "deploy.done", "arguments": {"env": "x"},
                                       "cursor": first["cursor"]}).json()["result"]
    assert [(e["eventId"], e["data"]) for e in second["events"]] == [(event_id, {"ok": True})]
    assert second["events"][0]["timestamp"].endswith("Z") and "cursor" not in second["events"][0]
    tools.publish("deploy.done", {"ok": False})
    tools.publish("deploy.done", {"ok": True})
    paged = post(url, "events/poll", {"name": "deploy.done", "cursor": second["cursor"],
                                      "maxEvents": 1}).json()["result"]
    assert len(paged["events"]) == 1 and paged["hasMore"] is True


@pytest.mark.parametrize("params,code,status", [
    ({"name": "nope"}, -32023, 200),
    ({"name": "hooked"}, -32026, 200),
    ({"name": "deploy.done", "arguments": {"env": 3}}, -32602, 400),
    ({"name": "deploy.done", "arguments": {"other": "x"}}, -32602, 400),
    ({"name": "deploy.done", "cursor": 5}, -32602, 400),
    ({"name": "deploy.done", "maxAgeMs": -1}, -32602, 400),
])
def test_a_refused_poll_names_why(url, params, code, status):
    answer = post(url, "events/poll", params)
    assert answer.json()["error"]["code"] == code
    assert answer.status_code == status


def test_a_stream_is_active_then_carries_events_and_heartbeats(url, tools):
    with post(url, "events/stream", {"name": "deploy.done", "cursor": None}, request_id=41,
              stream=True) as answer:
        assert answer.headers["Content-Type"].startswith("text/event-stream")
        lines = answer.iter_lines()
        messages = (json.loads(line[5:]) for line in lines if line.startswith(b"data:"))
        active = next(messages)
        assert active["method"] == "notifications/events/active"
        assert active["params"]["truncated"] is False
        assert active["params"]["_meta"] == {"io.modelcontextprotocol/subscriptionId": 41}
        tools.publish("deploy.done", {"ok": True})
        event = next(messages)
        assert event["method"] == "notifications/events/event"
        assert event["params"]["data"] == {"ok": True} and event["params"]["cursor"]
        assert event["params"]["_meta"] == {"io.modelcontextprotocol/subscriptionId": 41}
        heartbeat = next(messages)
        assert heartbeat["method"] == "notifications/events/heartbeat"
        assert heartbeat["params"]["cursor"] == event["params"]["cursor"]


def test_a_refused_stream_is_an_answer_not_a_stream(url):
    answer = post(url, "events/stream", {"name": "hooked"})
    assert answer.headers["Content-Type"] == "application/json"
    assert answer.json()["error"]["code"] == -32026
