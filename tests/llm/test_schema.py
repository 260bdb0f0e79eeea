"""Strict mode, rule by rule, and the bounds that keep a hostile schema from running away."""
import logging

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from raider_sync.errors import SchemaRefused
from raider_sync.llm import check_bounds, drop_added_nulls, strict_schema, to_anthropic, to_openai

from llm.provider_rules import check_anthropic_tool, check_openai_tool, strict_problems


def obj(properties, required=(), **extra):
    return {"type": "object", "properties": properties, "required": list(required), **extra}


def strict_of(schema):
    converted = strict_schema(schema)
    assert converted.strict, converted.notes
    assert strict_problems(converted.schema) == []
    return converted


def not_strict(schema, why):
    converted = strict_schema(schema)
    assert not converted.strict
    assert any(why in note for note in converted.notes), converted.notes
    return converted


# -- objects and optional properties --------------------------------------------------------

def test_every_object_is_closed_and_lists_every_property_as_required():
    schema = obj({"a": {"type": "string"},
                  "inner": obj({"x": {"type": "integer"}, "y": {"type": "boolean"}}, ["x"])},
                 ["a", "inner"])
    out = strict_of(schema).schema
    assert out["additionalProperties"] is False and out["required"] == ["a", "inner"]
    inner = out["properties"]["inner"]
    assert inner["additionalProperties"] is False and inner["required"] == ["x", "y"]


def test_optional_properties_become_nullable_and_required_ones_do_not():
    schema = obj({"req": {"type": "string"}, "opt": {"type": "string"},
                  "many": {"type": ["string", "number"]}, "choice": {"type": "string", "enum": ["a", "b"]},
                  "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                  "fixed": {"const": "x", "description": "only x"},
                  "already": {"type": ["string", "null"]},
                  "box": obj({"x": {"type": "integer"}}, ["x"]),
                  "list": {"type": "array", "items": {"type": "string"}}}, ["req"])
    props = strict_of(schema).schema["properties"]
    assert props["req"] == {"type": "string"}
    assert props["opt"] == {"type": ["string", "null"]}
    assert props["many"] == {"type": ["string", "number", "null"]}
    assert props["choice"] == {"type": ["string", "null"], "enum": ["a", "b", None]}
    assert props["either"]["anyOf"][-1] == {"type": "null"}
    assert props["fixed"] == {"anyOf": [{"const": "x"}, {"type": "null"}], "description": "only x"}
    assert props["already"] == {"type": ["string", "null"]}
    assert props["box"]["anyOf"][1] == {"type": "null"} and props["box"]["anyOf"][0]["type"] == "object"
    assert props["list"] == {"anyOf": [{"type": "array", "items": {"type": "string"}},
                                       {"type": "null"}]}
    validator = Draft202012Validator(strict_of(schema).schema)
    model_args = {"req": "r", "opt": None, "many": None, "choice": None, "either": None,
                  "fixed": None, "already": None, "box": None, "list": None}
    assert not list(validator.iter_errors(model_args))


def test_nulls_strict_mode_added_are_dropped_before_the_call_and_others_kept():
    schema = obj({"req": {"type": ["string", "null"]}, "opt": {"type": "string"},
                  "nullable": {"type": ["string", "null"]},
                  "inner": {"$ref": "#/$defs/Inner"},
                  "list": {"type": "array", "items": {"$ref": "#/$defs/Inner"}}},
                 ["req"], **{"$defs": {"Inner": obj({"x": {"type": "integer"}})}})
    model_args = {"req": None, "opt": None, "nullable": None, "inner": {"x": None},
                  "list": [{"x": None}, {"x": 2}]}
    assert drop_added_nulls(model_args, schema) == {
        "req": None, "nullable": None, "inner": {}, "list": [{}, {"x": 2}]}
    assert model_args["opt"] is None  # the arguments given are not changed


def test_a_root_without_properties_takes_no_arguments_but_a_free_form_object_is_not_strict():
    assert strict_of({"type": "object"}).schema == {
        "type": "object", "properties": {}, "required": [], "additionalProperties": False}
    not_strict(obj({"meta": {"type": "object"}}), "free-form")
    not_strict(obj({"meta": {"type": "object", "additionalProperties": {"type": "string"}}}),
               "a map")
    not_strict({"type": "object", "additionalProperties": True}, "free-form")


# -- $ref, unions -------------------------------------------------------------------------

def test_refs_are_inlined_and_defs_removed():
    schema = obj({"a": {"$ref": "#/$defs/A", "description": "the a"},
                  "b": {"$ref": "#/definitions/B"}}, ["a", "b"],
                 **{"$defs": {"A": obj({"n": {"type": "number"}}, ["n"])},
                    "definitions": {"B": {"type": "string"}}})
    out = strict_of(schema).schema
    assert "$defs" not in out and "definitions" not in out
    assert out["properties"]["a"]["properties"] == {"n": {"type": "number"}}
    assert out["properties"]["a"]["description"] == "the a"
    assert out["properties"]["b"] == {"type": "string"}


def test_recursive_and_outside_refs_make_the_tool_non_strict_and_keep_the_schema():
    tree = obj({"children": {"type": "array", "items": {"$ref": "#"}}})
    converted = not_strict(tree, "recursive")
    assert converted.schema["properties"]["children"]["items"] == {"$ref": "#"}
    not_strict(obj({"a": {"$ref": "https://example.com/a.json"}}), "outside")
    not_strict(obj({"a": {"$ref": "#/$defs/missing"}}), "points at nothing")


def test_inlining_that_explodes_is_not_strict():
    defs = {"L0": {"type": "string"}}
    for i in range(1, 30):  # each level refers to the one below twice: 2**29 nodes inlined
        defs[f"L{i}"] = obj({"a": {"$ref": f"#/$defs/L{i - 1}"}, "b": {"$ref": f"#/$defs/L{i - 1}"}})
    not_strict(obj({"top": {"$ref": "#/$defs/L29"}}, **{"$defs": defs}), "larger than")


def test_one_of_becomes_any_of_and_a_single_all_of_is_merged():
    out = strict_of(obj({"v": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
                         "w": {"allOf": [{"type": "string"}], "description": "w"}},
                        ["v", "w"])).schema
    assert out["properties"]["v"] == {"anyOf": [{"type": "string"}, {"type": "integer"}]}
    assert out["properties"]["w"] == {"type": "string", "description": "w"}
    not_strict(obj({"v": {"allOf": [{"type": "string"}, {"minLength": 2}]}}), "allOf")
    not_strict({"anyOf": [obj({"a": {"type": "string"}}), obj({"b": {"type": "string"}})]},
               "union")


# -- keywords ------------------------------------------------------------------------------

def test_unsupported_constraints_are_removed_with_a_note_and_annotations_silently():
    converted = strict_of(obj({
        "s": {"type": "string", "minLength": 1, "maxLength": 9, "format": "uri",
              "default": "x", "examples": ["y"]},
        "d": {"type": "string", "format": "date-time", "pattern": "^2"},
        "a": {"type": "array", "items": {"type": "string"}, "uniqueItems": True, "minItems": 1},
        "n": {"type": "integer", "minimum": 0, "maximum": 9}}, ["s", "d", "a", "n"],
        **{"$schema": "http://json-schema.org/draft-07/schema#"}))
    props = converted.schema["properties"]
    assert props["s"] == {"type": "string"}
    assert props["d"] == {"type": "string", "format": "date-time", "pattern": "^2"}
    assert props["a"] == {"type": "array", "items": {"type": "string"}, "minItems": 1}
    assert props["n"] == {"type": "integer", "minimum": 0, "maximum": 9}
    notes = " ".join(converted.notes)
    assert "format, maxLength, minLength" in notes and "uniqueItems" in notes
    assert "default" not in notes and "$schema" not in notes


@pytest.mark.parametrize("keyword, value", [
    ("not", {"type": "string"}), ("if", {"type": "string"}), ("patternProperties", {"^x": {}}),
    ("dependentRequired", {"a": ["b"]}), ("prefixItems", [{"type": "string"}])])
def test_keywords_strict_mode_cannot_express_make_the_tool_non_strict(keyword, value):
    not_strict(obj({"a": {"type": "string"}}, **{keyword: value}), keyword)


def test_values_of_any_type_and_tuples_are_not_strict():
    not_strict(obj({"a": {}}), "any value")
    not_strict(obj({"a": {"type": "array"}}), "items")
    not_strict(obj({"a": {"type": "array", "items": [{"type": "string"}]}}), "items")
    not_strict(obj({"a": {"type": "strange"}}), "unknown type")


def test_openai_limits_make_the_tool_non_strict():
    many = obj({f"p{i}": {"type": "string"} for i in range(5001)})
    not_strict(many, "5000 properties")
    deep = {"type": "string"}
    for _ in range(11):
        deep = obj({"x": deep}, ["x"])
    not_strict(deep, "10 levels")
    not_strict(obj({"e": {"type": "string", "enum": [str(i) for i in range(1001)]}}), "enum")


# -- bounds --------------------------------------------------------------------------------

def test_hostile_schemas_are_refused_without_recursion():
    deep: dict = {"type": "string"}
    for _ in range(10000):
        deep = {"type": "object", "properties": {"x": deep}}
    with pytest.raises(SchemaRefused, match="deeper"):
        check_bounds(deep)
    loop: dict = {"type": "object", "properties": {}}
    loop["properties"]["self"] = loop
    with pytest.raises(SchemaRefused):
        check_bounds(loop)
    with pytest.raises(SchemaRefused, match="more than"):
        check_bounds(obj({f"p{i}": {"type": "string"} for i in range(30000)}))
    with pytest.raises(SchemaRefused, match="characters"):
        check_bounds(obj({"a": {"type": "string", "description": "x" * 2_000_000}}))
    with pytest.raises(SchemaRefused, match="not JSON"):
        check_bounds(obj({"a": {"type": "string", "default": object()}}))


def test_a_refused_tool_is_left_out_and_the_others_converted(caplog):
    deep: dict = {"type": "string"}
    for _ in range(200):
        deep = {"type": "object", "properties": {"x": deep}}
    tools = [{"name": "ok", "inputSchema": obj({"a": {"type": "string"}})},
             {"name": "hostile", "inputSchema": deep}]
    with caplog.at_level(logging.WARNING, "raider_sync.llm"):
        chat = to_openai(tools)
        anthropic = to_anthropic(tools)
    assert [d["function"]["name"] for d in chat] == ["ok"]
    assert [d["name"] for d in anthropic] == ["ok"]
    assert any("hostile" in r.getMessage() and "deeper" in r.getMessage() for r in caplog.records)


# -- the definitions -------------------------------------------------------------------------

def test_chat_responses_and_anthropic_shapes_follow_the_published_rules(caplog):
    tools = [{"name": "mcp__files__read.file/v2", "description": "Read a file",
              "inputSchema": obj({"path": {"type": "string"}, "lines": {"type": "integer"}},
                                 ["path"])},
             {"name": "mcp__x__" + "long" * 20, "inputSchema": {"type": "object"}},
             {"name": "union", "inputSchema": {"type": "object", "oneOf": [
                 obj({"a": {"type": "string"}}, ["a"]), obj({"b": {"type": "string"}}, ["b"])]}},
             {"name": "free", "inputSchema": obj({"meta": {"type": "object"}})}]
    with caplog.at_level(logging.INFO, "raider_sync.llm"):
        chat, responses = to_openai(tools), to_openai(tools, api="responses")
        loose, anthropic = to_openai(tools, strict=False), to_anthropic(tools)
    for definition in chat + loose:
        check_openai_tool(definition)
    for definition in responses:
        check_openai_tool(definition, "responses")
    for definition in anthropic:
        check_anthropic_tool(definition)
    assert [d["function"]["strict"] for d in chat] == [True, True, False, False]
    assert not any(d["function"]["strict"] for d in loose)
    assert responses[0] == {"type": "function", **chat[0]["function"]}
    assert chat[0]["function"]["description"] == "Read a file"
    assert "description" not in anthropic[1]
    assert set(anthropic[2]["input_schema"]["properties"]) == {"a", "b"}
    assert any("not strict" in r.getMessage() and "free" in r.getMessage() for r in caplog.records)
    with pytest.raises(ValueError, match="api"):
        to_openai(tools, api="completions")
    with pytest.raises(TypeError, match="tools"):
        to_openai({"name": "x"})
    with pytest.raises(TypeError, match=r"tools\[0\]"):
        to_anthropic([{"title": "no name"}])


# -- any schema ---------------------------------------------------------------------------

_leaf = st.fixed_dictionaries({"type": st.sampled_from(["string", "number", "integer", "boolean"])},
                              optional={"minLength": st.integers(0, 3), "format": st.sampled_from(
                                  ["uri", "email", "date"]), "default": st.none(),
                                  "enum": st.just(["a", "b"]), "description": st.text(max_size=5)})
_schemas = st.recursive(
    _leaf, lambda children: st.one_of(
        st.builds(lambda props, req: obj(props, [k for k in props if req]),
                  st.dictionaries(st.text("abc", min_size=1, max_size=3), children, max_size=4),
                  st.booleans()),
        st.builds(lambda items: {"type": "array", "items": items}, children),
        st.builds(lambda branches: {"oneOf": branches}, st.lists(children, min_size=1, max_size=3)),
        st.builds(lambda inner: {"not": inner}, children)),
    max_leaves=8)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.builds(lambda props: obj(props), st.dictionaries(st.text("xyz", min_size=1, max_size=2),
                                                            _schemas, max_size=4)))
def test_any_schema_is_strict_by_the_rules_or_sent_non_strict_with_a_reason(schema):
    converted = strict_schema(schema)
    if converted.strict:
        assert strict_problems(converted.schema) == []
    else:
        assert converted.notes and converted.notes[0].startswith("not strict: ")
        assert converted.schema["type"] == "object"
