"""OpenAI's documented size limits for a strict schema, and the check of one schema against them.

OpenAI refuses a request whose strict tool schema passes one of these limits: the whole
request, not the one tool. :func:`~raider_sync.llm.strict_schema` therefore checks each tool's
converted schema and sends a tool past a limit non-strict.

The figures are those of OpenAI's Structured Outputs guide, section "Supported schemas"
(https://platform.openai.com/docs/guides/structured-outputs#supported-schemas), paragraphs
"Objects have limitations on nesting depth and size", "Limitations on total string size" and
"Limitations on enum size". Earlier versions of that page gave smaller figures (100
properties, 5 levels, 15,000 characters in total, 500 enum values, 7,500 characters for a
large enum); these are the current ones.
"""
from __future__ import annotations

import json
from typing import Any

#: "A schema may have up to 5000 object properties total, ..."
OPENAI_MAX_PROPERTIES = 5000
#: "... with up to 10 levels of nesting." (levels of objects: arrays and anyOf add none)
OPENAI_MAX_OBJECT_DEPTH = 10
#: "total string length of all property names, definition names, enum values, and const
#: values cannot exceed 120,000 characters" (definitions are inlined, so none are sent)
OPENAI_MAX_STRING_CHARS = 120000
#: "A schema may have up to 1000 enum values across all enum properties."
OPENAI_MAX_ENUM_VALUES = 1000
#: "For a single enum property with string values, the total string length of all enum
#: values cannot exceed 15,000 characters when there are more than 250 enum values."
OPENAI_LARGE_ENUM_VALUES = 250
OPENAI_MAX_LARGE_ENUM_CHARS = 15000


def openai_limits_passed(schema: dict) -> list[str]:
    """The OpenAI limits ``schema`` (a converted strict schema) passes, each said in a
    sentence naming the limit (empty when it passes none). Counts as the provider counts,
    leaning to the safe side where the guide is silent: a ``null`` strict mode added to an
    optional property's enum counts as a value, and values that are not strings count the
    length of their JSON. Walks without recursion."""
    properties = enum_values = chars = 0
    deepest = 0
    large_enums: list[str] = []
    stack: list[tuple[Any, int, str]] = [(schema, 1, "")]
    while stack:
        node, depth, where = stack.pop()
        if isinstance(node, list):
            stack.extend((item, depth, f"{where}/{i}") for i, item in enumerate(node))
            continue
        if not isinstance(node, dict):
            continue
        if isinstance(node.get("properties"), dict):
            deepest = max(deepest, depth)
            properties += len(node["properties"])
            chars += sum(len(name) for name in node["properties"])
            stack.extend((sub, depth + 1, f"{where}/properties/{name}")
                         for name, sub in node["properties"].items())
        if isinstance(node.get("enum"), list):
            values = node["enum"]
            enum_values += len(values)
            chars += sum(_length(v) for v in values)
            text = sum(len(v) for v in values if isinstance(v, str))
            if len(values) > OPENAI_LARGE_ENUM_VALUES and text > OPENAI_MAX_LARGE_ENUM_CHARS:
                large_enums.append(f"{where or '(root)'}: {len(values)} values, {text} characters")
        if "const" in node:
            chars += _length(node["const"])
        for key in ("items", "anyOf"):
            if key in node:
                stack.append((node[key], depth, f"{where}/{key}"))
    passed = []
    if deepest > OPENAI_MAX_OBJECT_DEPTH:
        passed.append(f"objects nested {deepest} levels deep, past OpenAI's limit of "
                      f"{OPENAI_MAX_OBJECT_DEPTH} levels")
    if properties > OPENAI_MAX_PROPERTIES:
        passed.append(f"{properties} properties, past OpenAI's limit of {OPENAI_MAX_PROPERTIES} "
                      f"properties in a schema")
    if enum_values > OPENAI_MAX_ENUM_VALUES:
        passed.append(f"{enum_values} enum values, past OpenAI's limit of "
                      f"{OPENAI_MAX_ENUM_VALUES} enum values in a schema")
    for enum in large_enums:
        passed.append(f"an enum past OpenAI's limit of {OPENAI_MAX_LARGE_ENUM_CHARS} characters "
                      f"for one enum of more than {OPENAI_LARGE_ENUM_VALUES} values ({enum})")
    if chars > OPENAI_MAX_STRING_CHARS:
        passed.append(f"{chars} characters of property names and enum and const values, past "
                      f"OpenAI's limit of {OPENAI_MAX_STRING_CHARS}")
    return passed


def _length(value: Any) -> int:
    return len(value) if isinstance(value, str) else len(json.dumps(value))
