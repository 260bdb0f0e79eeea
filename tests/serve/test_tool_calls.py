"""Calling a tool server's tools (raider_sync.serve.tool_calls), on its own: the JSON schema
check, a call's outcome, and the pool after close."""
from __future__ import annotations

import threading

import pytest

from raider_sync.errors import NotConnected, ToolTimeout, UnknownTool
from raider_sync.serve.registry import local_tool
from raider_sync.serve.tool_calls import ToolCalls, check_schema

WAIT = 5.0


@pytest.fixture
def calls():
    part = ToolCalls("local", "local", 2)
    yield part
    part.close()


def test_check_schema_accepts_what_it_cannot_judge():
    assert check_schema({"properties": {"x": {}}}, {"x": object(), "y": 1}) == []


def test_a_call_is_validated_run_on_the_pool_and_shaped_into_a_result(calls):
    def add(a: int, b: int = 0) -> int:
        ran_on.append(threading.current_thread().name)
        return a + b
    ran_on: list[str] = []
    tool = local_tool("add", add)
    assert calls.call_f(tool, "add", {"a": 1, "b": 2}, WAIT, None).result(WAIT) == {
        "content": [{"type": "text", "text": "3"}]}
    assert ran_on and ran_on[0].startswith("raider-local-tool_")
    invalid = calls.call_f(tool, "add", {"a": "x"}, WAIT, None).result(WAIT)
    assert invalid["isError"] and "a: " in invalid["content"][0]["text"]
    assert len(ran_on) == 1  # the handler never ran with bad arguments
    with pytest.raises(UnknownTool, match="has no tool 'nope'"):
        calls.call_f(None, "nope", {}, WAIT, None).result(WAIT)


def test_a_call_past_its_bound_fails_with_tool_timeout(calls):
    release = threading.Event()
    tool = local_tool("wait", lambda: release.wait(WAIT))
    try:
        with pytest.raises(ToolTimeout, match="tool wait timed out after 0.05 s"):
            calls.call_f(tool, "wait", {}, 0.05, None).result(WAIT)
    finally:
        release.set()


def test_close_is_told_once_and_later_calls_fail_without_a_pool():
    part = ToolCalls("local", "local", 2)
    tool = local_tool("echo", lambda text: text)
    assert part.call_f(tool, "echo", {"text": "hi"}, WAIT, None).result(WAIT)["content"]
    assert part.close() is True and part.close() is False and part.closed
    with pytest.raises(NotConnected, match="'local' is closed"):
        part.call_f(tool, "echo", {"text": "hi"}, WAIT, None).result(WAIT)
    assert not [t for t in threading.enumerate() if t.name.startswith("raider-local-tool")]
