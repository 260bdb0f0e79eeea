"""The pieces of a server's life (raider_sync.client.lifecycle) that need no server."""
from raider_sync.client.lifecycle import failure_reason
from raider_sync.errors import ConnectionClosed, McpError, UnsupportedProtocol


def test_a_failed_start_is_said_with_the_last_stderr_line_and_the_transports_diagnosis():
    reason = failure_reason(ConnectionClosed("MCP server 'x' exited with code 1"),
                            ["starting", "Error: no API key"], "the server wrote 1 line ...")
    assert reason == ("MCP server 'x' exited with code 1 (last stderr line: Error: no API key)"
                      ": the server wrote 1 line ...")


def test_the_last_stderr_line_is_not_said_twice():
    reason = failure_reason(ConnectionClosed("MCP server 'x' exited with code 1: boom"),
                            ["boom"], None)
    assert reason == "MCP server 'x' exited with code 1: boom"


def test_an_error_answer_and_a_refused_revision_are_told_apart():
    assert failure_reason(McpError(-32603, "no"), [], None) == (
        "the server answered with an error: no (code -32603)")
    refused = UnsupportedProtocol(-32022, "use protocol='legacy'")
    assert failure_reason(refused, [], None) == "use protocol='legacy'"


def test_an_exception_without_a_message_is_named():
    assert failure_reason(TimeoutError(), [], None) == "TimeoutError"
