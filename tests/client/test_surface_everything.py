"""Server logs, completion, subscriptions, raw requests, tool filters and the token budget,
against the reference server-everything."""
from __future__ import annotations

import threading

import pytest

from raider_sync import ConfigError, McpError, McpHub, McpServer, RequestTimeout, UnknownTool

from conftest import config_of, poll

WAIT = 15.0
DOC = "demo://resource/static/document/architecture.md"


def flush_notifications(server: McpServer) -> None:
    """Wait until every notification received so far has been handled (they run in order)."""
    done = threading.Event()
    server._session.run_in_order(done.set)
    assert done.wait(WAIT)


@pytest.fixture
def recorded(everything_spec):
    logs: list[tuple] = []
    updates: list[str] = []
    server = McpServer(everything_spec, kill_grace=0.3,
                       on_log=lambda srv, *entry: logs.append((srv, *entry)),
                       on_resource_updated=lambda srv, uri: updates.append((srv, uri)))
    server.initialize(WAIT)
    assert server.status == "connected", server.reason
    server.logs, server.updates = logs, updates
    yield server
    server.stop()


def test_server_logs_reach_on_log_and_set_log_level_filters_them(recorded):
    recorded.set_log_level("debug")
    recorded.subscribe(DOC)  # server-everything logs each subscribe at level info
    entry = poll(lambda: [e for e in recorded.logs if "Subscribe" in str(e[3])], WAIT,
                 "the subscribe log message")[0]
    assert entry[0] is recorded and entry[1] == "info" and entry[2] is None
    recorded.set_log_level("error")
    recorded.unsubscribe(DOC)  # its info message is now below the level
    flush_notifications(recorded)
    assert not [e for e in recorded.logs if "Unsubscribe" in str(e[3])]
    with pytest.raises(ConfigError, match="level: 'loud' is not an MCP log level"):
        recorded.set_log_level("loud")


def test_simulated_logging_arrives_with_its_level(recorded):
    recorded.call_tool("mcp__everything__toggle-simulated-logging", {})
    try:
        entry = poll(lambda: [e for e in recorded.logs if "message" in str(e[3]).lower()], WAIT,
                     "a simulated log message")[0]
    finally:
        recorded.call_tool("mcp__everything__toggle-simulated-logging", {})
    assert entry[1] in ("debug", "info", "notice", "warning", "error", "critical", "alert",
                        "emergency")


def test_completion_of_a_completable_prompt_with_context(recorded):
    assert recorded.complete("completable-prompt", ("department", "E"))["values"] == \
        ["Engineering"]
    named = recorded.complete({"type": "ref/prompt", "name": "completable-prompt"},
                              {"name": "name", "value": ""}, {"department": "Sales"})
    assert named["values"] == ["David", "Eve", "Frank"] and named["hasMore"] is False
    assert recorded.complete("completable-prompt", ("name", "Z"),
                             {"department": "Support"})["values"] == []
    with pytest.raises(ConfigError, match="argument:"):
        recorded.complete("completable-prompt", "department")
    with pytest.raises(ConfigError, match="ref:"):
        recorded.complete({"type": "ref/tool"}, ("a", "b"))


def test_subscribed_resources_report_updates(recorded):
    recorded.subscribe(DOC)
    assert recorded.subscriptions == [DOC]
    recorded.call_tool("mcp__everything__toggle-subscriber-updates", {})
    try:
        poll(lambda: recorded.updates, WAIT, "notifications/resources/updated")
    finally:
        recorded.call_tool("mcp__everything__toggle-subscriber-updates", {})
    assert recorded.updates[0] == (recorded, DOC)
    recorded.unsubscribe(DOC)
    assert recorded.subscriptions == []


def test_what_a_server_does_not_declare_fails_without_asking(recorded):
    recorded.capabilities = {k: v for k, v in recorded.capabilities.items()
                             if k not in ("completions", "logging")}
    with pytest.raises(McpError, match="does not offer completion") as error:
        recorded.complete("completable-prompt", ("department", ""))
    assert error.value.code == -32601
    with pytest.raises(McpError, match="capability logging"):
        recorded.set_log_level("info")


def test_raw_requests_are_bounded_and_cancellable(recorded):
    templates = recorded.request("resources/templates/list")
    assert {t["uriTemplate"] for t in templates["resourceTemplates"]} == \
        {t["uriTemplate"] for t in recorded.list_resource_templates()}
    steps = []
    long = {"name": "trigger-long-running-operation", "arguments": {"duration": 30, "steps": 30}}
    future = recorded.request_f("tools/call", long, on_progress=lambda *a: steps.append(a))
    poll(lambda: steps, WAIT, "a progress step")
    assert future.cancel()
    with pytest.raises(RequestTimeout, match="timed out after 0.3 s"):
        recorded.request("tools/call", long, timeout=0.3)
    with pytest.raises(McpError) as error:
        recorded.request("no/such/method", {})
    assert error.value.code == -32601
    with pytest.raises(ConfigError, match="params: expected a dict"):
        recorded.request("ping", ["not", "a", "dict"])
    assert recorded.request("ping") == {}


def test_filters_from_the_config_and_the_options_narrow_listing_and_calls(everything_js):
    config = config_of({"everything": {"command": "node", "args": [everything_js, "stdio"],
                                       "allowedTools": ["get-*", "echo"],
                                       "disabledTools": ["mcp__everything__get-env"]}})
    with McpServer(config.server("everything"), kill_grace=0.3,
                   disabled_tools=["get-tiny-*"]) as server:
        names = server.tool_names
        assert "mcp__everything__echo" in names and "mcp__everything__get-sum" in names
        assert not [n for n in names if "env" in n or "tiny" in n or "toggle" in n]
        assert {"get-env", "get-tiny-image", "toggle-simulated-logging"} <= \
            set(server.filtered_tools)
        for name in ("mcp__everything__get-env", "get-env", "mcp__everything__toggle-simulated-logging"):
            with pytest.raises(UnknownTool):
                server.call_tool(name, {})
        assert "Echo: ok" in server.call_tool("mcp__everything__echo", {"message": "ok"}).text


def test_a_hub_filters_every_server_and_reports_their_budget(everything_spec, everything_js):
    config = {"mcpServers": {"everything": {"command": "node", "args": [everything_js, "stdio"]}}}
    with McpHub(config, kill_grace=0.3) as hub:
        full = hub.tool_budget()
        templates = hub.resource_templates()
    with McpHub(config, kill_grace=0.3, allowed_tools=["echo", "get-sum"]) as hub:
        names = [t["name"] for t in hub.tools()]
        budget = hub.tool_budget()
        with pytest.raises(UnknownTool):
            hub.call_tool("mcp__everything__get-env", {})
    assert names == ["mcp__everything__echo", "mcp__everything__get-sum"]
    assert set(budget.tools) == set(names) and budget.servers == {"everything": budget.total}
    assert 0 < budget.total < full.total and full.servers["everything"] == full.total
    assert {t["server"] for t in templates} == {"everything"} and len(templates) == 2


def test_subscriptions_survive_a_new_http_session(everything_js):
    from fakes.http_peers import HttpPeer
    peer = HttpPeer.everything().start()
    updates: list[str] = []
    server = McpServer(peer.spec("peer"), on_resource_updated=lambda srv, uri: updates.append(uri))
    try:
        server.initialize(WAIT)
        assert server.status == "connected", server.reason
        server.subscribe(DOC)
        peer.restart()  # the new process knows neither the session nor the subscription
        server.call_tool("mcp__peer__toggle-subscriber-updates", {}, timeout=WAIT)
        poll(lambda: DOC in updates, WAIT, "an update after the session was renewed")
        server.call_tool("mcp__peer__toggle-subscriber-updates", {}, timeout=WAIT)
    finally:
        server.stop()
        peer.close()
