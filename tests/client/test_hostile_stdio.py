"""A stdio server that writes what breaks readers: nesting too deep for the JSON parser, a line
bigger than the message size limit, text that is not JSON-RPC."""
from __future__ import annotations

import os
import sys
import tracemalloc

import pytest

from raider_sync import ConfigError, ConnectionClosed, McpServer

from conftest import FAKES, config_of, poll

HOSTILE = os.path.join(FAKES, "hostile_server.py")
MiB = 1 << 20


def hostile(*modes: str, **extra):
    entry = {"command": sys.executable, "args": [HOSTILE, ",".join(modes)], **extra}
    return config_of({"hostile": entry}).server("hostile")


@pytest.fixture
def started():
    servers: list[McpServer] = []

    def start(spec, **options) -> McpServer:
        server = McpServer(spec, **options)
        servers.append(server)
        server.initialize(timeout=60)
        return server

    yield start
    for server in servers:
        server.stop()


def test_a_line_nested_too_deeply_is_skipped_and_the_reader_lives_on(started):
    server = started(hostile())
    assert server.status == "connected", server.reason
    result = server.call_tool("mcp__hostile__deep", {}, timeout=20)
    assert result["content"][0]["text"] == "after the deep lines"
    # the reader thread still reads: later calls are answered, status is truthful
    assert server.call_tool("mcp__hostile__echo", {"message": "still here"},
                            timeout=20)["content"][0]["text"] == "still here"
    assert server.status == "connected"


@pytest.mark.parametrize("where", ["option", "config"])
def test_a_line_over_the_size_limit_fails_the_connection_naming_the_limit(started, where):
    limit = 2 * MiB
    if where == "option":
        server = started(hostile(), max_message_size=limit)
    else:
        server = started(hostile(maxMessageSize=limit))
    assert server.status == "connected", server.reason
    tracemalloc.start()
    try:
        with pytest.raises(ConnectionClosed) as caught:
            server.call_tool("mcp__hostile__huge", {"size": 40 * MiB}, timeout=60)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "maximum message size of 2 MiB" in str(caught.value)
    assert "maxMessageSize" in str(caught.value)
    # what was held stays near the limit, far from the 40 MiB line
    assert peak < 4 * limit, f"peak {peak / MiB:.1f} MiB"
    poll(lambda: server.status == "failed", what="status failed")
    assert "maximum message size" in server.reason


def test_a_line_under_the_limit_is_read_whole(started):
    server = started(hostile(), max_message_size=4 * MiB)
    result = server.call_tool("mcp__hostile__huge", {"size": 3 * MiB}, timeout=60)
    assert result["content"][0]["text"] == "after the huge line"
    assert server.status == "connected"


def test_a_server_writing_text_to_stdout_says_so_when_it_never_answers(started):
    server = started(hostile("noise"), startup_timeout_ms=1500)
    assert server.status == "failed"
    assert "startup timed out" in server.reason
    assert ("the server wrote 2 lines that are not JSON-RPC to stdout" in server.reason
            and "first: 'Starting the server v1.2 ...'" in server.reason), server.reason


def test_a_silent_server_gets_no_stdout_hint(started):
    server = started(hostile("silent"), startup_timeout_ms=1000)
    assert server.status == "failed"
    assert "JSON-RPC to stdout" not in server.reason


@pytest.mark.parametrize("size", [0, -1, 1.5, "64", True])
def test_a_bad_max_message_size_is_refused_naming_the_option(size):
    with pytest.raises(ConfigError, match="max_message_size must be a positive number"):
        McpServer(hostile(), max_message_size=size)
    with pytest.raises(ConfigError, match="maxMessageSize"):
        hostile(maxMessageSize=size)
