"""What a tool server offers (raider_sync.serve.registry), on its own: tools and who is told
of them, a resource's contents, a prompt rendered."""
from __future__ import annotations

import pytest
from pydantic import BaseModel

from raider_sync.errors import McpError
from raider_sync.protocol.codes import INVALID_PARAMS
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
