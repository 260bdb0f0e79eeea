"""The providers' published rules for tool definitions, as checks the tests apply.

OpenAI, Structured Outputs, "Supported schemas" (platform.openai.com/docs/guides/
structured-outputs#supported-schemas), for ``"strict": true``: the root is an object and not
``anyOf``; every object has ``additionalProperties: false`` and lists every property in
``required``; the keywords are the supported ones (types string, number, boolean, integer,
object, array, enum, anyOf; string ``pattern`` and ``format`` from a fixed list; number
``multipleOf``/``maximum``/``exclusiveMaximum``/``minimum``/``exclusiveMinimum``; array
``minItems``/``maxItems``); at most 5000 properties, 10 levels of objects, 1000 enum values,
120,000 characters of property names, enum values and const values, and, in one enum of more
than 250 values, 15,000 characters of string values.
Function names (API reference, ``function.name``): a-z, A-Z, 0-9, underscores and dashes, at
most 64 characters.

Anthropic, Messages API, tool definitions: ``name`` matches ``^[a-zA-Z0-9_-]{1,64}$``;
``input_schema`` is a JSON Schema object whose root is ``type: object`` and which has no
``oneOf``, ``allOf`` or ``anyOf`` at the top level (the API's own error message says so).
"""
from __future__ import annotations

import json
import re

from jsonschema import Draft202012Validator

NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
STRICT_KEYWORDS = {"type", "properties", "required", "additionalProperties", "items", "anyOf",
                   "enum", "const", "pattern", "format", "multipleOf", "maximum",
                   "exclusiveMaximum", "minimum", "exclusiveMinimum", "minItems", "maxItems",
                   "title", "description"}
FORMATS = {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}


def strict_problems(schema: dict) -> list[str]:
    """What in ``schema`` breaks OpenAI's strict-mode rules (empty when nothing does)."""
    problems: list[str] = []
    if schema.get("type") != "object" or "anyOf" in schema:
        problems.append("(root): not a plain object")
    counts = {"properties": 0, "enum": 0, "chars": 0}

    def visit(node, where: str, depth: int) -> None:
        if not isinstance(node, dict):
            problems.append(f"{where}: not a schema object")
            return
        for key in node:
            if key not in STRICT_KEYWORDS:
                problems.append(f"{where}: keyword {key!r}")
        if "format" in node and node["format"] not in FORMATS:
            problems.append(f"{where}: format {node['format']!r}")
        if not any(k in node for k in ("type", "anyOf", "enum", "const")):
            problems.append(f"{where}: no type")
        types = node.get("type") if isinstance(node.get("type"), list) else [node.get("type")]
        if "object" in types:
            if depth > 10:
                problems.append(f"{where}: objects nested deeper than 10")
            properties = node.get("properties")
            if not isinstance(properties, dict):
                problems.append(f"{where}: object without properties")
                properties = {}
            if node.get("additionalProperties") is not False:
                problems.append(f"{where}: additionalProperties is not false")
            if sorted(node.get("required") or []) != sorted(properties):
                problems.append(f"{where}: required is not every property")
            counts["properties"] += len(properties)
            counts["chars"] += sum(len(name) for name in properties)
            for name, sub in properties.items():
                visit(sub, f"{where}/properties/{name}", depth + 1)
        if "array" in types:
            visit(node.get("items"), f"{where}/items", depth)
        for i, branch in enumerate(node.get("anyOf") or []):
            visit(branch, f"{where}/anyOf/{i}", depth)
        enum = node.get("enum") or []
        counts["enum"] += len(enum)
        strings = sum(len(v) for v in enum if isinstance(v, str))
        counts["chars"] += strings + sum(len(json.dumps(v)) for v in enum if not isinstance(v, str))
        if len(enum) > 250 and strings > 15000:
            problems.append(f"{where}: an enum of {len(enum)} values with {strings} characters")
        if "const" in node:
            const = node["const"]
            counts["chars"] += len(const) if isinstance(const, str) else len(json.dumps(const))

    visit(schema, "", 1)
    if counts["properties"] > 5000:
        problems.append("more than 5000 properties")
    if counts["enum"] > 1000:
        problems.append("more than 1000 enum values")
    if counts["chars"] > 120000:
        problems.append("more than 120000 characters of names and values")
    Draft202012Validator.check_schema(schema)
    return problems


def check_openai_tool(definition: dict, api: str = "chat") -> None:
    function = definition["function"] if api == "chat" else definition
    assert definition["type"] == "function"
    assert NAME.match(function["name"]), function["name"]
    assert isinstance(function["strict"], bool)
    parameters = function["parameters"]
    assert parameters.get("type") == "object" and isinstance(parameters.get("properties"), dict)
    if function["strict"]:
        assert strict_problems(parameters) == [], (function["name"], strict_problems(parameters))


def check_anthropic_tool(definition: dict) -> None:
    assert set(definition) <= {"name", "description", "input_schema"}
    assert NAME.match(definition["name"]), definition["name"]
    schema = definition["input_schema"]
    assert schema.get("type") == "object"
    assert not {"oneOf", "allOf", "anyOf"} & set(schema), "a union at the top level"
    Draft202012Validator.check_schema(schema)
