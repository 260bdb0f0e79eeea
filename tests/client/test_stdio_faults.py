"""McpServer over stdio against tests/fakes/fake_server.py: the faults real servers do not produce,
and the protocol corners (versions, pagination, collisions, batches, server requests)."""
from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
import time
from concurrent.futures import CancelledError

import psutil
import pytest

from raider_sync import ConnectionClosed, McpError, McpServer, NotConnected, ToolTimeout, UnknownTool
from raider_sync.client.content import visible_resources as _visible_resources
from raider_sync.errors import STDERR_QUOTE_CHARS

from conftest import FAKE_SERVER, answers_from_threads, config_of, fake_spec
from conftest import poll as _poll

WAIT = 10.0


def poll(predicate, timeout: float = WAIT, what: str = "condition"):
    return _poll(predicate, timeout, what)


def text_of(result: dict) -> str:
    return result["content"][0]["text"]


def seen(server: McpServer) -> list[dict]:
    return json.loads(text_of(server.call_tool("seen", {})))


def fake_processes(mode: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if FAKE_SERVER in proc.cmdline() and mode in proc.cmdline():
                found.append(proc)
        except psutil.Error:
            pass
    return found


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


# -- start ---------------------------------------------------------------------------------------

def test_status_goes_configured_starting_connected_and_on_status_sees_each(started):
    statuses = []
    server = McpServer(fake_spec("plain"), kill_grace=0.2,
                       on_status=lambda s: statuses.append(s.status))
    assert server.status == "configured" and server.reason is None
    try:
        future = server.start_f()
        assert server.start_f() is future
        assert future.result(WAIT) is server
        assert server.initialize() is server and server.start_f() is future
        assert server.status == "connected" and server.reason is None
        assert statuses == ["starting", "connected"]
    finally:
        server.stop()
    assert server.status == "stopped"
    assert statuses == ["starting", "connected", "stopped"]


def test_handshake_facts(started):
    server = started(spec_extra={"protocol": "legacy"})
    assert server.protocol_version == "2025-11-25" == server.client_protocol_version
    assert server.known_protocol_versions == ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
    assert server.server_info == {"name": "fake", "version": "1"}
    assert server.instructions == "Use the fake with care."
    assert (server.name, server.key, server.transport) == ("fake", "fake", "stdio")
    methods = [m["method"] for m in seen(server)]
    assert methods[:3] == ["initialize", "notifications/initialized", "tools/list"]
    init = seen(server)[0]["params"]
    assert init["protocolVersion"] == "2025-11-25"
    assert init["clientInfo"]["name"] == "raider_sync"


def test_a_command_that_does_not_exist_fails_the_start_without_raising():
    spec = config_of({"nope": {"command": "/nonexistent/raider-no-such-binary"}}).server("nope")
    statuses = []
    server = McpServer(spec, on_status=lambda s: statuses.append(s.status))
    try:
        assert server.start_f().result(WAIT) is server
        assert server.status == "failed"
        assert "not found" in server.reason
        assert statuses == ["starting", "failed"]
        with pytest.raises(NotConnected, match="failed"):
            server.call_tool("x", {})
    finally:
        server.stop()
    assert server.status == "stopped" and "not found" in server.reason


def test_startup_timeout_fails_with_a_reason_and_stops_the_process():
    # Long enough for the fake's interpreter to start and write its stderr line on a loaded
    # machine; far below the default 30 s, which is what "did not wait" is measured against.
    server = McpServer(fake_spec("silent"), startup_timeout_ms=2500, kill_grace=0.2)
    try:
        started = time.monotonic()
        server.start_f().result(WAIT)
        assert time.monotonic() - started < 15
        assert server.status == "failed"
        assert "timed out after 2.5 s" in server.reason
        assert "fake server ready" in server.reason, "the last stderr line is in the reason"
        assert server.pid is None
        assert fake_processes("silent") == []
    finally:
        server.stop()


def test_startup_timeout_defaults_to_mcp_timeout(monkeypatch):
    monkeypatch.setenv("MCP_TIMEOUT", "1234")
    assert McpServer(fake_spec("plain")).startup_timeout_ms == 1234
    monkeypatch.delenv("MCP_TIMEOUT")
    assert McpServer(fake_spec("plain")).startup_timeout_ms == 30000


def test_a_stateless_only_server_fails_with_a_reason_that_says_so(started):
    server = started("stateless")
    assert server.status == "failed"
    assert "2026-07-28" in server.reason and "stateless" in server.reason
    assert fake_processes("stateless") == []


def test_an_unknown_protocol_version_fails_naming_it(started):
    server = started("future")
    assert server.status == "failed"
    assert "2099-01-01" in server.reason and "2025-11-25" in server.reason


def test_every_page_of_the_tool_list_is_read(started):
    server = started("paginate")
    assert server.status == "connected"
    assert [server.original_name(n) for n in server.tool_names] == [
        "echo", "crash", "big", "sleep", "error", "answers", "seen", "stall", "log"]
    cursors = [(m.get("params") or {}).get("cursor") for m in seen(server) if m["method"] == "tools/list"]
    assert cursors == [None, "1", "2", "3", "4", "5", "6", "7", "8"]


def test_colliding_tool_names_keep_the_first_and_warn(started):
    server = started("collide")
    assert server.tool_names.count("mcp__fake__a_b") == 1
    assert server.original_name("mcp__fake__a_b") == "a.b"
    assert any("a_b" in w and "collides" in w for w in server.warnings)
    assert text_of(server.call_tool("mcp__fake__echo", {"message": "still fine"})) == "still fine"


def test_a_batch_answer_is_accepted(started, caplog):
    caplog.set_level(logging.INFO, logger="raider_sync.server.fake")
    server = started("batch")
    assert server.status == "connected"
    assert "mcp__fake__echo" in server.tool_names
    poll(lambda: any("batched" in r.getMessage() for r in caplog.records), what="batched log")


def test_garbage_lines_on_stdout_are_skipped(started, caplog):
    caplog.set_level(logging.WARNING, logger="raider_sync.server.fake")
    server = started("garbage")
    assert server.status == "connected"
    for i in range(5):
        assert text_of(server.call_tool("echo", {"message": f"m{i}"})) == f"m{i}"
    assert any("not JSON" in r.getMessage() for r in caplog.records)


# -- tools ---------------------------------------------------------------------------------------

def test_tool_names_original_names_and_list_tools_copies(started):
    server = started()
    assert server.tool_names[:3] == ["mcp__fake__echo", "mcp__fake__crash", "mcp__fake__big"]
    assert server.original_name("mcp__fake__echo") == "echo"
    assert server.original_name("mcp__fake__nope") is None
    tools = server.list_tools()
    assert [t["name"] for t in tools] == server.tool_names
    assert tools[0]["description"] == "the echo tool"
    tools[0]["name"] = "changed"
    tools[0]["inputSchema"]["properties"]["injected"] = {"type": "string"}
    fresh = server.list_tools()
    assert fresh[0]["name"] == "mcp__fake__echo"
    assert fresh[0]["inputSchema"] == {"type": "object", "properties": {}}


def test_call_tool_by_prefixed_name_sends_the_original_name(started):
    server = started()
    assert server.call_tool("mcp__fake__echo", {"message": "hi"}) == \
        {"content": [{"type": "text", "text": "hi"}]}
    calls = [m["params"] for m in seen(server) if m["method"] == "tools/call"]
    assert calls[0] == {"name": "echo", "arguments": {"message": "hi"}}


def test_an_unknown_tool_raises_unknown_tool(started):
    server = started()
    with pytest.raises(UnknownTool, match="mcp__fake__nope"):
        server.call_tool("mcp__fake__nope", {})
    assert isinstance(server.call_tool_f("mcp__other__echo").exception(0), LookupError)


def test_a_json_rpc_error_keeps_code_message_and_data(started):
    server = started()
    with pytest.raises(McpError) as info:
        server.call_tool("mcp__fake__error", {})
    assert (info.value.code, info.value.message, info.value.data) == \
        (-32000, "it went wrong", {"why": "test"})


def test_calls_before_start_and_after_stop_raise_not_connected():
    server = McpServer(fake_spec("plain"), kill_grace=0.2)
    with pytest.raises(NotConnected, match="configured"):
        server.call_tool("mcp__fake__echo", {})
    assert server.list_tools() == [] and server.tool_names == []
    server.start_f().result(WAIT)
    server.stop()
    with pytest.raises(NotConnected, match="stopped"):
        server.call_tool("mcp__fake__echo", {})
    assert isinstance(server.get_prompt_f("p").exception(0), NotConnected)
    assert server.list_tools() == []
    assert server.start_f().result(0) is server  # the same, settled future


def test_private_meta_keys_are_stripped_from_results(started):
    server = started("meta")
    result = server.call_tool("mcp__fake__echo", {"message": "x"})
    assert result["_meta"] == {"other": 1}


def test_results_are_held_to_max_output_tokens(started):
    server = started(max_output_tokens=10)
    result = server.call_tool("mcp__fake__echo", {"message": "y" * 100})
    assert result["content"][0]["text"] == "y" * 40
    assert "MAX_MCP_OUTPUT_TOKENS" in result["content"][-1]["text"]
    assert server.limit_content([{"type": "text", "text": "z" * 41}])[0]["text"] == "z" * 40


def test_option_defaults_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("MAX_MCP_OUTPUT_TOKENS", "77")
    monkeypatch.setenv("MCP_TOOL_TIMEOUT", "2500")
    server = McpServer(fake_spec("plain"))
    assert server.max_output_tokens == 77
    assert server.call_timeout == 2.5
    assert server.kill_grace == 2.0
    assert McpServer(fake_spec("plain", timeout=1500)).call_timeout == 1.5
    monkeypatch.delenv("MCP_TOOL_TIMEOUT")
    monkeypatch.delenv("MAX_MCP_OUTPUT_TOKENS")
    default = McpServer(fake_spec("plain"))
    assert default.call_timeout == 600 and default.max_output_tokens == 25000


def test_a_call_past_its_timeout_is_cancelled_and_the_next_call_works(started):
    server = started()
    started_at = time.monotonic()
    with pytest.raises(ToolTimeout, match="MCP tool call timed out after 0.3 s") as info:
        server.call_tool("mcp__fake__sleep", {}, timeout=0.3)
    assert isinstance(info.value, TimeoutError)
    assert time.monotonic() - started_at < 2
    call_id = next(m for m in seen(server) if m["method"] == "tools/call")
    assert call_id["params"]["name"] == "sleep"
    cancels = poll(lambda: [m for m in seen(server) if m["method"] == "notifications/cancelled"],
                   what="notifications/cancelled")
    assert cancels[0]["params"]["reason"] == "timed out"
    assert text_of(server.call_tool("mcp__fake__echo", {"message": "after"})) == "after"


def test_the_specs_timeout_bounds_a_call(started):
    server = started(spec_extra={"timeout": 300})
    with pytest.raises(ToolTimeout, match="after 0.3 s"):
        server.call_tool("mcp__fake__sleep", {})


def test_cancelling_a_call_future_sends_notifications_cancelled(started):
    server = started()
    future = server.call_tool_f("mcp__fake__sleep", {})
    poll(lambda: any(m["method"] == "tools/call" for m in seen(server)), what="the call")
    assert future.cancel()
    with pytest.raises(CancelledError):
        future.result(0)
    cancels = poll(lambda: [m for m in seen(server) if m["method"] == "notifications/cancelled"],
                   what="notifications/cancelled")
    assert cancels[0]["params"]["reason"] == "cancelled by the client"
    assert isinstance(cancels[0]["params"]["requestId"], int)


# -- what the server asks and says ---------------------------------------------------------------

def test_ping_is_answered_and_what_the_client_does_not_support_gets_method_not_found(started):
    server = started("ask")
    answers = poll(lambda: (a := json.loads(text_of(server.call_tool("answers", {}))))
                   and len(a) == 5 and a, what="every answer")
    assert answers["s2"] == {}
    for request in ("s1", "s3", "s4", "s5"):   # sampling, roots, elicitation, unknown
        assert answers[request]["code"] == -32601, answers[request]


@pytest.mark.parametrize("level, expected", [("debug", logging.DEBUG), ("info", logging.INFO),
                                             ("warning", logging.WARNING),
                                             ("error", logging.ERROR),
                                             ("emergency", logging.CRITICAL)])
def test_log_messages_go_to_the_servers_logger(started, caplog, level, expected):
    caplog.set_level(logging.DEBUG, logger="raider_sync.server.fake")
    server = started()
    server.call_tool("log", {"level": level, "data": f"hello at {level}"})
    record = poll(lambda: next((r for r in caplog.records
                                if f"hello at {level}" in r.getMessage()), None), what="the record")
    assert record.name == "raider_sync.server.fake"
    assert record.levelno == expected
    assert "fakelog" in record.getMessage()


# -- prompts and resources -----------------------------------------------------------------------

def test_prompts_and_resources_are_listed_cached_and_refreshed(started):
    server = started("lists")
    assert server.has_prompts and server.has_resources
    assert [p["name"] for p in server.list_prompts()] == ["first"]
    assert [r["uri"] for r in server.list_resources()] == ["file:///a.txt"]
    server.list_prompts()
    server.list_resources()
    methods = [m["method"] for m in seen(server)]
    assert methods.count("prompts/list") == 1 and methods.count("resources/list") == 1

    server.call_tool("add-prompt", {})
    poll(lambda: len(server.list_prompts()) == 2, what="the new prompt")
    server.call_tool("add-resource", {})
    poll(lambda: "file:///r3.txt" in [r["uri"] for r in server.list_resources()],
         what="the new resource")

    prompt = server.get_prompt("first", {"who": "Ann"})
    assert prompt["messages"][0]["content"]["text"] == "Hello Ann"
    assert server.read_resource("file:///a.txt") == [
        {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "contents of file:///a.txt"}]
    with pytest.raises(McpError) as info:
        server.read_resource("file:///missing")
    assert info.value.code == -32002


def test_a_server_without_prompts_or_resources_lists_none(started):
    server = started()
    assert not server.has_prompts and not server.has_resources
    assert server.list_prompts() == [] and server.list_resources() == []


def test_ui_and_mcp_app_resources_are_left_out():
    resources = [{"uri": "file:///a", "mimeType": "text/plain"},
                 {"uri": "ui://x", "mimeType": "text/plain"},
                 {"uri": "file:///b", "mimeType": "text/html;profile=mcp-app"},
                 {"uri": "file:///c", "mimeType": "text/html; profile=mcp-app"},
                 {"uri": "file:///d", "mimeType": "text/html"},
                 {"uri": "file:///e"}, "not a dict"]
    assert [r["uri"] for r in _visible_resources(resources)] == ["file:///a", "file:///d", "file:///e"]


# -- environment, identity -----------------------------------------------------------------------

def test_child_env_drops_inherited_plugin_vars_and_adds_the_specs(tmp_path):
    base = {"PATH": "/bin", "CLAUDE_PLUGIN_ROOT": "/inherited", "CLAUDE_PLUGIN_DATA": "/inh",
            "KEEP": "1", "OVERRIDE": "base"}
    plain = McpServer(config_of({"s": {"command": "x", "env": {"OVERRIDE": "spec", "NEW": "n"}}},
                                project_dir=str(tmp_path)).server("s"), base_env=base)
    env = plain.child_env
    assert "CLAUDE_PLUGIN_ROOT" not in env and "CLAUDE_PLUGIN_DATA" not in env
    assert (env["KEEP"], env["OVERRIDE"], env["NEW"]) == ("1", "spec", "n")
    assert env["CLAUDE_PROJECT_DIR"] == str(tmp_path)
    plugin = McpServer(config_of({"plugin:p:s": {"command": "x", "pluginRoot": "/plug",
                                                 "pluginData": "/pdata"}}).server("plugin:p:s"),
                       base_env=base)
    env = plugin.child_env
    assert (env["CLAUDE_PLUGIN_ROOT"], env["CLAUDE_PLUGIN_DATA"]) == ("/plug", "/pdata")
    assert env["CLAUDE_PROJECT_DIR"] == os.getcwd()
    assert base["CLAUDE_PLUGIN_ROOT"] == "/inherited", "base_env is not changed"


def test_base_env_defaults_to_a_copy_of_os_environ(monkeypatch):
    monkeypatch.setenv("RAIDER_BASE_ENV_TEST", "yes")
    server = McpServer(fake_spec("plain"))
    monkeypatch.setenv("RAIDER_BASE_ENV_TEST", "changed later")
    assert server.child_env["RAIDER_BASE_ENV_TEST"] == "yes"


def test_fingerprint_is_equal_for_equal_specs_and_hides_secrets():
    def fp(entry, base=None):
        spec = config_of({"s": entry}).server("s")
        return McpServer(spec, base_env=base if base is not None else {"PATH": "/bin"}).fingerprint

    entry = {"command": "srv", "args": ["--a"], "env": {"TOKEN": "s3cr3t-value"}}
    assert fp(entry) == fp(dict(entry))
    assert "s3cr3t" not in fp(entry)
    assert fp(entry) != fp({**entry, "env": {"TOKEN": "other"}})
    assert fp(entry) != fp({**entry, "args": ["--b"]})
    assert fp(entry) != fp({**entry, "timeout": 5000})
    assert fp(entry) != fp(entry, base={"PATH": "/usr/bin"})
    http = {"type": "http", "url": "https://h/mcp", "headers": {"Authorization": "Bearer s3cr3t"}}
    assert "s3cr3t" not in fp(http) and fp(http) != fp({**http, "headers": {}})


def test_pid_and_stderr_tail(started):
    server = started()
    proc = psutil.Process(server.pid)
    assert FAKE_SERVER in proc.cmdline()
    assert poll(lambda: server.stderr_tail) == ["fake server ready"]
    server.stop()
    assert server.pid is None
    assert gone(proc.pid)
    assert server.stderr_tail == ["fake server ready"]


# -- faults ------------------------------------------------------------------------------------

def test_a_server_that_exits_during_a_call_fails_it_at_once_with_its_last_words(started):
    server = started()
    started_at = time.monotonic()
    with pytest.raises(ConnectionClosed) as info:
        server.call_tool("mcp__fake__crash", {}, timeout=30)
    assert time.monotonic() - started_at < 1.0
    assert str(info.value) == "MCP server 'fake' exited with code 3: fatal: the fake server exploded"
    assert info.value.stderr_tail[-1] == "fatal: the fake server exploded"
    poll(lambda: server.status == "failed", what="status failed")
    assert server.reason == str(info.value)
    with pytest.raises(NotConnected):
        server.call_tool("mcp__fake__echo", {})


def test_a_server_killed_by_a_signal_is_said_to_be_killed_by_it(started):
    server = started()
    with pytest.raises(ConnectionClosed) as info:
        server.call_tool("mcp__fake__crash", {"signal": int(signal.SIGKILL)}, timeout=30)
    expected = "MCP server 'fake' was killed by SIGKILL: fatal: the fake server exploded"
    assert str(info.value) == expected
    poll(lambda: server.status == "failed", what="status failed")
    assert server.reason == expected


def test_a_server_that_closes_stdout_and_keeps_running_fails_at_once_and_is_ended(started):
    """Regression: the reader waited for the stderr of a server still running to end (2 s),
    then for its exit (0.2 s), before it said anything; and the sentence did not read."""
    server = started("closers,grandchild")
    sleeper = poll(lambda: [p for p in psutil.Process(server.pid).children()
                            if p.name() == "sleep"], what="the grandchild")[0]
    pid = server.pid
    started_at = time.monotonic()
    with pytest.raises(ConnectionClosed) as info:
        server.call_tool("mcp__fake__close-stdout", {}, timeout=30)
    assert time.monotonic() - started_at < 1.0
    expected = ("MCP server 'fake' closed its stdout while still running: "
                "closing stdout, staying up")
    assert str(info.value) == expected
    assert server.status == "failed" and server.reason == expected
    # failed first, then the process group is ended, grandchild and all
    assert poll(lambda: gone(pid) and gone(sleeper.pid), what="the process group ended")


def test_a_server_that_closes_stdin_and_keeps_running_fails_the_next_call_at_once(started):
    """Regression: a write that found stdin closed waited for the reader to end (2.2 s),
    which it does not while the server runs on, and the sentence did not read."""
    server = started("closers")
    assert text_of(server.call_tool("mcp__fake__close-stdin", {})) == "closing stdin"
    poll(lambda: server.stderr_tail[-1:] == ["closing stdin, staying up"],
         what="stdin closed")  # the fake says so once it is
    started_at = time.monotonic()
    with pytest.raises(ConnectionClosed) as info:
        server.call_tool("mcp__fake__echo", {"message": "anyone?"}, timeout=30)
    assert time.monotonic() - started_at < 1.0
    expected = ("MCP server 'fake' closed its stdin while still running: "
                "closing stdin, staying up")
    assert str(info.value) == expected
    assert server.status == "failed" and server.reason == expected


LONG_LINE = "x" * 65000  # what the fake's "long-words" mode puts before each stderr line


def test_a_long_stderr_line_is_quoted_by_its_end_in_a_pending_calls_error_and_the_reason(
        started):
    """Regression: 65,000 characters of stderr without a newline made an error (and the
    reason) of 65,000 characters."""
    server = started("long-words")
    with pytest.raises(ConnectionClosed) as info:
        server.call_tool("mcp__fake__crash", {}, timeout=30)
    line = LONG_LINE + "fatal: the fake server exploded"
    assert info.value.stderr_tail[-1] == line  # the log itself is kept whole
    expected = ("MCP server 'fake' exited with code 3: …"
                + line[-STDERR_QUOTE_CHARS:])
    assert str(info.value) == expected
    poll(lambda: server.status == "failed", what="status failed")
    assert server.reason == expected


def test_a_long_stderr_line_is_quoted_by_its_end_in_a_failed_start_and_a_stop():
    line = "…" + (LONG_LINE + "boom: cannot start")[-STDERR_QUOTE_CHARS:]
    failed = McpServer(fake_spec("exit-at-start,long-words"), kill_grace=0.2)
    try:
        failed.start_f().result(WAIT)
        assert failed.reason == f"MCP server 'fake' exited with code 1: {line}"
    finally:
        failed.stop()
    server = McpServer(fake_spec("long-words"), kill_grace=0.2)
    server.start_f().result(WAIT)
    assert server.status == "connected", server.reason
    server.stop()
    line = "…" + (LONG_LINE + "fake server ready")[-STDERR_QUOTE_CHARS:]
    assert server.reason == f"stopped by the client (last stderr line: {line})"


def test_a_server_that_ignores_sigterm_is_killed_after_the_grace(started):
    grace = 0.3
    server = started("ignore-term", kill_grace=grace)
    pid = server.pid
    started_at = time.monotonic()
    server.stop()
    elapsed = time.monotonic() - started_at
    assert 2 * grace - 0.05 <= elapsed < 2 * grace + 1.0
    assert gone(pid)


def test_kill_now_does_not_wait_for_the_grace(started):
    server = started("ignore-term", kill_grace=5)
    pid = server.pid
    started_at = time.monotonic()
    server.kill_now()
    assert time.monotonic() - started_at < 1.5
    assert server.status == "stopped" and gone(pid)


def test_a_grandchild_is_gone_after_stop(started):
    server = started("grandchild")
    sleeper = poll(lambda: [p for p in psutil.Process(server.pid).children()
                            if p.name() == "sleep"], what="the grandchild")[0]
    server.stop()
    assert poll(lambda: gone(sleeper.pid), timeout=3, what="the grandchild gone")


def test_a_20_mb_response_arrives_intact(started):
    server = started(max_output_tokens=10 ** 7)
    result = server.call_tool("mcp__fake__big", {}, timeout=60)
    text = result["content"][0]["text"]
    assert len(text) == 20 * 1024 * 1024 and text == "x" * len(text)
    assert text_of(server.call_tool("mcp__fake__echo", {"message": "next"})) == "next"


def test_stop_fails_pending_calls_at_once(started):
    server = started("ignore-term", kill_grace=0.5)
    future = server.call_tool_f("mcp__fake__sleep", {})
    stopping = server.stop_f()
    started_at = time.monotonic()
    with pytest.raises(ConnectionClosed, match="stopped"):
        future.result(WAIT)
    assert time.monotonic() - started_at < 0.5
    assert not stopping.done(), "the process is still in its grace period"
    stopping.result(WAIT)
    assert server.status == "stopped"


def test_stop_twice_and_stop_before_start_are_safe():
    never = McpServer(fake_spec("plain"))
    never.stop()
    never.stop()
    assert never.status == "stopped"
    assert never.start_f().result(0) is never and never.status == "stopped"
    server = McpServer(fake_spec("plain"), kill_grace=0.2)
    server.start_f().result(WAIT)
    server.stop()
    server.stop()
    server.kill_now()
    # the reason carries the server's last stderr line
    assert server.status == "stopped"
    assert server.reason == "stopped by the client (last stderr line: fake server ready)"


def test_stop_while_starting_ends_the_start():
    server = McpServer(fake_spec("silent"), startup_timeout_ms=20000, kill_grace=0.2)
    future = server.start_f()
    poll(lambda: server.pid, what="the process")
    started_at = time.monotonic()
    server.stop()
    assert time.monotonic() - started_at < 3
    assert future.result(WAIT) is server and server.status == "stopped"


def test_the_context_manager_starts_and_stops(started):
    with McpServer(fake_spec("plain"), kill_grace=0.2) as server:
        assert server.status == "connected"
        pid = server.pid
        assert text_of(server.call_tool("mcp__fake__echo", {"message": "in"})) == "in"
    assert server.status == "stopped" and gone(pid)


def stalled(server) -> None:
    """Have the fake stop reading its stdin, and wait (bounded) until it has: a request
    written before would still be read and answered."""
    server.call_tool_f("mcp__fake__stall", {})
    poll(lambda: server.stderr_tail[-1:] == ["fake server stalls: it reads no more"],
         what="the fake stalled")


def test_a_server_that_stops_reading_stdin_cannot_hang_calls_or_stop(started):
    server = started()
    stalled(server)
    outcome: dict[str, BaseException] = {}

    def call(label, arguments, timeout):
        try:
            server.call_tool("mcp__fake__echo", arguments, timeout=timeout)
        except Exception as exc:  # noqa: BLE001
            outcome[label] = exc

    big = threading.Thread(target=call, name="test-big-caller",
                           args=("big", {"message": "s" * (4 * 1024 * 1024)}, 4.0))
    started_at = time.monotonic()
    big.start()   # far more than a pipe holds: it blocks in the middle of the line
    # (its 4 s leave a loaded machine room to see the write under way before the deadline)
    poll(lambda: server._transport._write_lock.locked() or "big" in outcome,
         what="the big write under way")
    assert "big" not in outcome, f"the big call ended before its write was seen: {outcome}"
    small = threading.Thread(target=call, name="test-small-caller",
                             args=("small", {"message": "hi"}, 0.3))
    small.start()
    small.join(10)
    big.join(10)
    assert not big.is_alive() and not small.is_alive()
    assert time.monotonic() - started_at < 10   # each ended by its own deadline, none hung
    # the small call never got its turn to write: its own timeout, nothing sent
    assert isinstance(outcome["small"], ToolTimeout)
    assert "MCP tool call timed out after 0.3 s" in str(outcome["small"])
    # the big one was half written when its time ran out: the stream is broken, the server
    # killed (the call's own deadline and the kill come together: either error may win)
    assert isinstance(outcome["big"], (ToolTimeout, ConnectionClosed))
    poll(lambda: server.status == "failed", what="status failed")
    # the same sentence whichever saw it first, the writer or the reader
    assert server.reason == ("MCP server 'fake' stopped reading its stdin and was killed: "
                             "fake server stalls: it reads no more")
    started_at = time.monotonic()
    server.stop()
    assert time.monotonic() - started_at < 2


def test_stop_is_not_blocked_by_a_write_to_a_server_that_stopped_reading(started):
    server = started("ignore-term", kill_grace=0.3)
    stalled(server)
    writer = threading.Thread(target=lambda: server.call_tool_f(
        "mcp__fake__echo", {"message": "w" * (4 * 1024 * 1024)}, timeout=60),
        name="test-blocked-writer")
    writer.start()
    poll(lambda: server._transport._write_lock.locked(), what="the write under way")
    started_at = time.monotonic()
    server.stop()
    assert time.monotonic() - started_at < 2 * 0.3 + 1.0
    writer.join(5)
    assert not writer.is_alive()


def test_32_threads_get_their_own_answers(started):
    server = started()
    answers = answers_from_threads(32, 10, lambda message: text_of(server.call_tool(
        "mcp__fake__echo", {"message": message})), timeout=WAIT * 3)
    assert len(answers) == 320 and all(k == v for k, v in answers.items())


def test_a_spec_is_required():
    with pytest.raises(TypeError, match="ServerSpec"):
        McpServer({"command": sys.executable})  # type: ignore[arg-type]


def test_a_server_that_exits_at_once_fails_with_its_last_words_and_one_status_change():
    statuses = []
    server = McpServer(fake_spec("exit-at-start"), kill_grace=0.2,
                       on_status=lambda s: statuses.append((s.status, s.reason)))
    try:
        server.start_f().result(WAIT)
        assert server.status == "failed"
        assert "boom: cannot start" in server.reason and "code 1" in server.reason
        assert [s for s, _ in statuses] == ["starting", "failed"]
        assert server.stderr_tail == ["boom: cannot start"]
    finally:
        server.stop()


def test_a_server_without_tools_connects_with_none(started):
    server = started("notools")
    assert server.status == "connected", server.reason
    assert server.tool_names == [] and server.list_tools() == []
    assert "tools/list" not in [m["method"] for m in seen_raw(server)]


def test_a_failed_prompt_list_is_empty_once_and_asked_again(started):
    server = started("lists,flaky-lists")
    assert server.list_prompts() == []
    assert [p["name"] for p in server.list_prompts()] == ["first"]


def seen_raw(server: McpServer) -> list[dict]:
    """``seen`` through the session, for a server whose tool list is empty."""
    result = server._session.request("tools/call", {"name": "seen", "arguments": {}}, timeout=WAIT)
    return json.loads(result["content"][0]["text"])


def test_arguments_json_cannot_carry_fail_the_call_and_not_the_connection(started):
    server = started()
    with pytest.raises(ValueError):
        server.call_tool("mcp__fake__echo", {"message": float("nan")})
    with pytest.raises(TypeError):
        server.call_tool("mcp__fake__echo", {"message": object()})
    # a lone surrogate is sent escaped, which is still JSON
    assert text_of(server.call_tool("mcp__fake__echo", {"message": "a\ud800b"})) == "a\ud800b"
    assert text_of(server.call_tool("mcp__fake__echo", {"message": "ünï\u2028cödé"})) == \
        "ünï\u2028cödé"
    assert server.status == "connected"


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"])
def test_every_known_revision_is_accepted(started, version):
    server = started(f"version={version}")
    assert server.status == "connected" and server.protocol_version == version
    assert text_of(server.call_tool("mcp__fake__echo", {"message": version})) == version


def test_a_collision_is_warned_about_once_across_re_lists(started):
    changed = threading.Event()
    server = started("collide", on_tools_changed=lambda s: changed.set())
    server.call_tool("mcp__fake__announce", {})
    assert changed.wait(WAIT)
    assert "mcp__fake__a_b" in [t["name"] for t in server.list_tools()]
    assert len([w for w in server.warnings if "collides" in w]) == 1


def test_a_change_announced_while_starting_is_no_failed_re_list(started):
    """Regression: server-everything announces tools/list_changed as soon as it is
    initialized. A re-list begun before the client knew the era failed with "not connected
    (starting)" and left a warning, though the start's own tools/list came after the notice."""
    changed = threading.Event()
    server = started("early-changes", on_tools_changed=lambda s: changed.set())
    assert changed.wait(WAIT)
    assert server.status == "connected" and server.warnings == []
    assert "mcp__fake__echo" in [t["name"] for t in server.list_tools()]
    assert server.warnings == []


def test_an_older_tool_list_never_replaces_a_newer_one(started, monkeypatch):
    """Regression: the start's tools/list and a re-list after an early list_changed overlap;
    whichever thread set its answer last won, even with the older list."""
    server = started()
    first_asked, release_first = threading.Event(), threading.Event()
    answers = iter([[{"name": "old"}], [{"name": "new"}]])

    def fetch_all(method, field, timeout, timeout_message=None, cache="use"):
        items = next(answers)
        if items[0]["name"] == "old":
            first_asked.set()
            release_first.wait(WAIT)   # the older answer is set last
        return items

    monkeypatch.setattr(server._catalog, "_fetch_all", fetch_all)
    older = threading.Thread(target=server._fetch_tools, args=(WAIT,), name="test-older-list")
    older.start()
    assert first_asked.wait(WAIT)
    server._fetch_tools(WAIT)
    release_first.set()
    older.join(WAIT)
    assert server.tool_names == ["mcp__fake__new"]


def test_a_tool_list_of_an_older_connection_is_never_set(started, monkeypatch):
    """A re-list answered while a restart forgets the old connection's tools must not bring
    them back."""
    server = started()
    asked, release = threading.Event(), threading.Event()

    def fetch_all(method, field, timeout, timeout_message=None, cache="use"):
        asked.set()
        release.wait(WAIT)
        return [{"name": "old"}]

    monkeypatch.setattr(server._catalog, "_fetch_all", fetch_all)
    older = threading.Thread(target=server._fetch_tools, args=(WAIT,), name="test-older-list")
    older.start()
    assert asked.wait(WAIT)
    server._catalog.forget()  # what a restart does before its new connection lists
    release.set()
    older.join(WAIT)
    assert server.tool_names == []


def test_stop_closes_stdin_first_and_a_server_that_exits_on_it_is_not_signalled(started):
    server = started(kill_grace=5)
    proc = server._transport._proc
    started_at = time.monotonic()
    server.stop()
    assert time.monotonic() - started_at < 1.5, "the fake exits when its stdin closes"
    assert proc.returncode == 0, "it exited on its own, not by a signal"


def test_a_server_that_ignores_eof_gets_sigterm_after_one_grace(started):
    grace = 0.3
    server = started("ignore-eof", kill_grace=grace)
    proc = server._transport._proc
    started_at = time.monotonic()
    server.stop()
    elapsed = time.monotonic() - started_at
    assert grace - 0.05 <= elapsed < 2 * grace
    assert proc.returncode == -15, "SIGTERM ended it"


def test_the_stderr_tail_keeps_the_last_50_lines(started):
    server = started("chatty")
    tail = poll(lambda: (t := server.stderr_tail) and t[-1] == "fake server ready" and t)
    assert len(tail) == 50
    assert tail[0] == "chatter 71" and tail[-2] == "chatter 119"


def test_a_missing_working_directory_is_named_in_the_reason():
    spec = fake_spec("plain", cwd="/nonexistent/raider-dir")
    server = McpServer(spec)
    try:
        server.start_f().result(WAIT)
        assert server.status == "failed" and "/nonexistent/raider-dir" in server.reason
    finally:
        server.stop()


def test_a_command_that_cannot_be_executed_is_named_in_the_reason(tmp_path):
    script = tmp_path / "not-executable"
    script.write_text("#!/bin/sh\n")
    server = McpServer(config_of({"s": {"command": str(script)}}).server("s"))
    try:
        server.start_f().result(WAIT)
        assert server.status == "failed"
        assert str(script) in server.reason and "ermission denied" in server.reason
    finally:
        server.stop()


def test_stop_from_callbacks_does_not_deadlock():
    stopped_from = []

    def on_status(server):
        if server.status == "connected":
            server.stop()
            stopped_from.append(threading.current_thread().name)

    server = McpServer(fake_spec("plain"), kill_grace=0.2, on_status=on_status)
    assert server.start_f().result(WAIT) is server
    assert server.status == "stopped" and stopped_from

    def on_tools_changed(server):
        server.stop()
        stopped_from.append(threading.current_thread().name)

    other = McpServer(fake_spec("collide"), kill_grace=0.2, on_tools_changed=on_tools_changed)
    other.start_f().result(WAIT)
    other.call_tool_f("mcp__fake__announce", {})
    poll(lambda: len(stopped_from) == 2, what="stop from on_tools_changed")
    assert other.status == "stopped"
    other.stop()


def test_stop_before_the_process_is_spawned_leaves_no_process(monkeypatch):
    """stop() that closes the transport before start() spawned it: the start must not spawn
    a process nobody stops any more."""
    from raider_sync import jsonrpc
    opening, go = threading.Event(), threading.Event()
    real_open = jsonrpc.Session.open

    def gated_open(self, timeout=None):
        opening.set()
        assert go.wait(WAIT)
        return real_open(self, timeout)

    monkeypatch.setattr(jsonrpc.Session, "open", gated_open)
    server = McpServer(fake_spec("plain"), kill_grace=0.2)
    future = server.start_f()
    assert opening.wait(WAIT)
    stopper = threading.Thread(target=server.stop, name="test-stopper")
    stopper.start()
    poll(lambda: server.status == "stopped", what="stopped")
    go.set()
    stopper.join(WAIT)
    assert not stopper.is_alive()
    assert future.result(WAIT) is server and server.status == "stopped"
    assert server.pid is None
    assert fake_processes("plain") == []


def test_a_list_fetched_before_its_callback_is_added_does_not_deadlock(started, monkeypatch):
    """A prompt list whose fetch is done before the catalog watches it (a fast answer, read
    on the calling thread) runs the watcher at once, on the thread that holds the catalog's
    lock: that must not wait for the lock itself."""
    from raider_sync.client.catalog import Catalog

    fetch = Catalog._background_f

    def done_at_once(self, fn, *, what):
        future = fetch(self, fn, what=what)
        future.exception(WAIT)  # the fetch is over before the catalog watches it
        return future

    server = started("lists,flaky-lists")
    monkeypatch.setattr(Catalog, "_background_f", done_at_once)
    listed: list = []
    worker = threading.Thread(target=lambda: listed.append(server.list_prompts()), daemon=True)
    worker.start()
    worker.join(WAIT)
    assert not worker.is_alive(), "list_prompts deadlocked on the catalog's lock"
    assert listed == [[]]  # the failed list, not kept
    assert [p["name"] for p in server.list_prompts()] == ["first"]
