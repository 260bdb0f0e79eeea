"""What a tool server offers (raider_sync.serve.registry), on its own: tools and who is told
of them, a resource's contents, a prompt rendered, a resource read by its URI."""
from __future__ import annotations

import pytest
from pydantic import BaseModel

from raider_sync.errors import McpError
from raider_sync.protocol.codes import INVALID_PARAMS, RESOURCE_NOT_FOUND
from raider_sync.serve.registry import LocalResource, Registry, local_prompt, local_tool


class Point(BaseModel):
    x: int


def test_the_owner_is_told_when_a_tool_is_added_or_removed_and_not_otherwise():
    told: list[list[str]] = []
    registry = Registry(lambda: told.append(sorted(registry.tools)))
    registry.add_tool(local_tool("where", lambda point: "ok", input_model=Point))
    registry.add_tool(local_tool("echo", lambda text, progress=None: text))
    registry.remove_tool("nope")
    registry.remove_tool("where")
    assert told == [["where"], ["echo", "where"], ["echo"]]
    echo = registry.tools["echo"]
    assert echo.wants_progress and "progress" not in echo.input_schema["properties"]
    assert echo.definition()["inputSchema"]["required"] == ["text"]


def test_a_resource_is_read_as_text_or_as_a_blob():
    assert LocalResource("a://t", "t", lambda: 5, "text/plain").contents() == [
        {"uri": "a://t", "mimeType": "text/plain", "text": "5"}]
    assert LocalResource("a://b", "b", lambda: b"\x00\x01").contents() == [
        {"uri": "a://b", "blob": "AAE="}]


def test_a_prompt_is_rendered_and_arguments_it_does_not_take_are_invalid_params():
    def greet(name: str, punctuation: str = "!") -> str:
        "Greets someone."
        return f"Hello {name}{punctuation}"
    prompt = local_prompt("greet", greet, None)
    assert prompt.definition() == {"name": "greet", "description": "Greets someone.",
                                   "arguments": [{"name": "name", "required": True},
                                                 {"name": "punctuation", "required": False}]}
    assert prompt.get({"name": "Ada"})["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "Hello Ada!"}}]
    with pytest.raises(McpError) as caught:
        prompt.get({"nobody": 1})
    assert caught.value.code == INVALID_PARAMS and "prompt greet" in caught.value.message


def test_a_resource_is_read_by_uri_and_an_unknown_one_is_resource_not_found():
    registry = Registry(lambda: None)
    registry.add_resource(LocalResource("a://t", "t", lambda: "text", "text/plain"))
    assert registry.read_resource("a://t") == [
        {"uri": "a://t", "mimeType": "text/plain", "text": "text"}]
    assert registry.resource_list() == [registry.resources["a://t"].definition()]
    with pytest.raises(McpError) as raised:
        registry.read_resource("a://nope")
    assert raised.value.code == RESOURCE_NOT_FOUND and raised.value.data == {"uri": "a://nope"}


def test_an_unknown_prompt_is_invalid_params_and_who_takes_a_context_is_known():
    registry = Registry(lambda: None)
    registry.add_prompt(local_prompt("plain", lambda: "hi", None))
    assert registry.get_prompt("plain", None, None)["messages"][0]["content"]["text"] == "hi"
    with pytest.raises(McpError) as raised:
        registry.get_prompt("nope", None, None)
    assert raised.value.code == INVALID_PARAMS
    registry.add_tool(local_tool("ask", lambda ctx: "ok"))
    assert registry.takes_context("tools/call", "ask")
    assert not registry.takes_context("prompts/get", "plain")
    assert not registry.takes_context("tools/call", 5)
