"""ToolCaller on a ToolServer: dotted and long names, $ref'd pydantic schemas, strict nulls."""
import json

from jsonschema import Draft202012Validator
from pydantic import BaseModel

from raider_sync import ToolServer
from raider_sync.llm import ToolCaller, is_model_name


class Range(BaseModel):
    start: int
    end: int | None = None


class Query(BaseModel):
    path: str
    lines: Range | None = None
    pattern: str = "*"


def test_a_model_s_strict_call_reaches_a_pydantic_tool_under_its_own_name():
    seen = []
    server = ToolServer("local")

    def read(query: Query) -> str:
        seen.append(query)
        return f"read {query.path}"

    long_name = "files.read/" + "x" * 80
    server.add_tool(long_name, read, input_model=Query, description="Read part of a file.")
    try:
        caller = ToolCaller(server)
        [definition] = caller.to_openai()
        function = definition["function"]
        assert is_model_name(function["name"]) and caller.names.original(function["name"]) == long_name
        assert function["strict"] is True, "pydantic's $defs are inlined"
        # what a strict model sends: every property, null where it has nothing to say
        model_args = {"path": "a.txt", "lines": {"start": 2, "end": None}, "pattern": None}
        assert not list(Draft202012Validator(function["parameters"]).iter_errors(model_args))
        result = caller.call(function["name"], json.dumps(model_args))
        assert result.text == "read a.txt", result.text
        assert seen == [Query(path="a.txt", lines=Range(start=2))]  # defaults, not nulls
        [claude] = caller.to_anthropic()
        assert claude["name"] == function["name"]
    finally:
        server.close()
