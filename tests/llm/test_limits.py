"""OpenAI's documented limits for strict schemas: a tool past one is sent non-strict with a
warning naming the tool and the limit, and one at the limit stays strict."""
import logging

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raider_sync.llm import strict_schema, to_openai
from raider_sync.llm.limits import (
    OPENAI_LARGE_ENUM_VALUES,
    OPENAI_MAX_ENUM_VALUES,
    OPENAI_MAX_LARGE_ENUM_CHARS,
    OPENAI_MAX_OBJECT_DEPTH,
    OPENAI_MAX_PROPERTIES,
    OPENAI_MAX_STRING_CHARS,
)

from llm.provider_rules import check_openai_tool, strict_problems


def obj(properties, required=None):
    return {"type": "object", "properties": properties,
            "required": list(properties) if required is None else list(required)}


def words(count, total, tag=""):
    """``count`` distinct strings whose lengths add up to ``total``."""
    base, extra = divmod(total, count)
    out = [f"{tag}{i}-" for i in range(count)]
    return [w + "w" * (base + (i < extra) - len(w)) for i, w in enumerate(out)]


def enum_property(count, total, tag=""):
    return {"type": "string", "enum": words(count, total, tag)}


def nested(levels):
    """An object ``levels`` objects deep (the root is the first)."""
    schema = {"type": "string"}
    for _ in range(levels - 1):
        schema = obj({"x": schema})
    return obj({"x": schema})


# (schema at the limit: strict, schema one past it: not strict, what the warning names)
LIMITS = {
    "large enum": (obj({"e": enum_property(OPENAI_LARGE_ENUM_VALUES + 1, OPENAI_MAX_LARGE_ENUM_CHARS)}),
                   obj({"e": enum_property(OPENAI_LARGE_ENUM_VALUES + 1, OPENAI_MAX_LARGE_ENUM_CHARS + 1)}),
                   "15000 characters for one enum of more than 250 values"),
    "enum values": (obj({f"e{i}": enum_property(OPENAI_MAX_ENUM_VALUES // 4, 2000, f"{i}.")
                         for i in range(4)}),
                    obj({f"e{i}": enum_property(OPENAI_MAX_ENUM_VALUES // 4 + (i == 0), 2000, f"{i}.")
                         for i in range(4)}),
                    "1000 enum values"),
    "properties": (obj({f"p{i}": {"type": "string"} for i in range(OPENAI_MAX_PROPERTIES)}),
                   obj({f"p{i}": {"type": "string"} for i in range(OPENAI_MAX_PROPERTIES + 1)}),
                   "5000 properties"),
    "depth": (nested(OPENAI_MAX_OBJECT_DEPTH), nested(OPENAI_MAX_OBJECT_DEPTH + 1), "10 levels"),
    "characters": (obj({name: {"type": "string"} for name in words(1000, OPENAI_MAX_STRING_CHARS)}),
                   obj({name: {"type": "string"} for name in words(1000, OPENAI_MAX_STRING_CHARS + 1)}),
                   "limit of 120000"),
}


@pytest.mark.parametrize("limit", sorted(LIMITS))
def test_a_tool_past_a_limit_is_sent_non_strict_with_a_warning_and_one_at_it_stays_strict(
        limit, caplog):
    at, past, named = LIMITS[limit]
    within = strict_schema(at)
    assert within.strict and not within.limits, within.notes
    tools = [{"name": f"at-{limit}", "inputSchema": at}, {"name": f"past-{limit}", "inputSchema": past}]
    with caplog.at_level(logging.INFO, "raider_sync.llm"):
        definitions = to_openai(tools)
    for definition in definitions:
        check_openai_tool(definition)  # the strict one by the published rules too
    assert [d["function"]["strict"] for d in definitions] == [True, False]
    assert definitions[1]["function"]["parameters"] == {**past, "properties": past["properties"]}
    warned = [r.getMessage() for r in caplog.records
              if r.levelno == logging.WARNING and r.name == "raider_sync.llm"]
    assert any(f"past-{limit}" in m and named in m for m in warned), warned
    assert not any(f"at-{limit}" in m for m in warned)
    assert any(named in limit_said for limit_said in strict_schema(past).limits)


def test_the_reported_enum_of_country_names_is_not_sent_strict(caplog):
    # 300 values of 60 characters: within 1000 enum values and 120000 characters, but one
    # enum of more than 250 values may hold only 15000 characters
    countries = {"type": "string", "enum": words(300, 300 * 60)}
    tool = {"name": "ship", "inputSchema": obj({"country": countries})}
    with caplog.at_level(logging.WARNING, "raider_sync.llm"):
        [definition] = to_openai([tool])
    assert definition["function"]["strict"] is False
    assert definition["function"]["parameters"]["properties"]["country"] == countries
    [warning] = [r.getMessage() for r in caplog.records if "ship" in r.getMessage()]
    assert "/properties/country" in warning and "15000 characters" in warning, warning


def test_the_null_strict_mode_adds_to_an_optional_enum_counts():
    values = OPENAI_LARGE_ENUM_VALUES, OPENAI_MAX_LARGE_ENUM_CHARS + 1
    assert strict_schema(obj({"e": enum_property(*values)})).strict  # 250 values: no such limit
    optional = strict_schema(obj({"e": enum_property(*values)}, required=[]))
    assert not optional.strict and "251 values" in optional.limits[0]


def test_other_reasons_for_non_strict_stay_at_info_level(caplog):
    tool = {"name": "free-form-info", "inputSchema": obj({"meta": {"type": "object"}})}
    with caplog.at_level(logging.INFO, "raider_sync.llm"):
        [definition] = to_openai([tool])
    assert definition["function"]["strict"] is False
    said = [r for r in caplog.records if "free-form-info" in r.getMessage()]
    assert said and all(r.levelno == logging.INFO for r in said)
    assert strict_schema(tool["inputSchema"]).limits == []


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(1, 400), st.integers(6, 70), st.booleans()),
                min_size=1, max_size=5))
def test_any_set_of_enums_is_strict_exactly_when_the_documented_limits_allow(enums):
    properties, required = {}, []
    for i, (count, length, is_required) in enumerate(enums):
        properties[f"e{i}"] = enum_property(count, count * length, f"{i}.")
        if is_required:
            required.append(f"e{i}")
    converted = strict_schema(obj(properties, required))
    sizes = [count + (not is_required) for count, _, is_required in enums]  # optional: + null
    chars = [count * length for count, length, _ in enums]
    names = sum(len(name) for name in properties)
    nulls = sum(4 for _, _, is_required in enums if not is_required)  # "null" in the enum
    allowed = (sum(sizes) <= OPENAI_MAX_ENUM_VALUES
               and all(n <= OPENAI_LARGE_ENUM_VALUES or c <= OPENAI_MAX_LARGE_ENUM_CHARS
                       for n, c in zip(sizes, chars, strict=True))
               and names + sum(chars) + nulls <= OPENAI_MAX_STRING_CHARS)
    assert converted.strict == allowed, (sizes, chars, converted.notes)
    if converted.strict:
        assert strict_problems(converted.schema) == []
    else:
        assert converted.limits and all(n.startswith("not strict: ") for n in converted.notes)
