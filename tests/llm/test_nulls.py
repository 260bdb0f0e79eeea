"""Strict mode's nulls dropped again before the call: in every branch of a union, through
$ref, allOf, items and nested objects, checked against the tool's own schema and end to end
against the official SDK's server."""
import copy
import json
import os
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from raider_sync import McpServer
from raider_sync.llm import ToolCaller, drop_added_nulls, strict_schema

from conftest import PEERS, config_of
from llm.provider_rules import strict_problems

PAYMENTS_SERVER = os.path.join(PEERS, "sdk_payments_server.py")


def obj(properties, required=(), **extra):
    return {"type": "object", "properties": properties, "required": list(required), **extra}


CARD = obj({"number": {"type": "string"}, "cvc": {"type": "string"}}, ["number"])
IBAN = obj({"iban": {"type": "string"}, "bic": {"type": "string"}}, ["iban"])
MODEL_IBAN = {"iban": "DE89370400440532013000", "bic": None}   # as a strict model sends it
IBAN_ONLY = {"iban": "DE89370400440532013000"}


def errors(schema, value):
    return [e.message for e in Draft202012Validator(schema).iter_errors(value)]


def strict_parameters(schema):
    converted = strict_schema(schema)
    assert converted.strict, converted.notes
    assert strict_problems(converted.schema) == []
    return converted.schema


# Where a union of objects can sit in a tool's schema: the model's arguments for each, and
# what the tool must receive.
PLACES = {
    "oneOf": ({"method": {"oneOf": [CARD, IBAN]}},
              {"method": MODEL_IBAN}, {"method": IBAN_ONLY}),
    "anyOf": ({"method": {"anyOf": [CARD, IBAN]}},
              {"method": MODEL_IBAN}, {"method": IBAN_ONLY}),
    "$ref": ({"method": {"$ref": "#/$defs/Method"}},
             {"method": MODEL_IBAN}, {"method": IBAN_ONLY}),
    "allOf": ({"method": {"allOf": [{"oneOf": [{"$ref": "#/$defs/Card"}, {"$ref": "#/$defs/Iban"}]}],
                          "description": "how to pay"}},
              {"method": MODEL_IBAN}, {"method": IBAN_ONLY}),
    "items": ({"methods": {"type": "array", "items": {"oneOf": [CARD, IBAN]}}},
              {"methods": [MODEL_IBAN, {"number": "4111", "cvc": None}]},
              {"methods": [IBAN_ONLY, {"number": "4111"}]}),
    "deep": ({"order": obj({"lines": {"type": "array", "items": obj({
                 "payment": obj({"method": {"oneOf": [{"$ref": "#/$defs/Card"}, obj({
                     "iban": {"type": "string"}, "bank": obj({"bic": {"type": "string"},
                                                              "name": {"type": "string"}})},
                     ["iban"])]}}, ["method"])}, ["payment"])}}, ["lines"])},
             {"order": {"lines": [{"payment": {"method": {
                 "iban": "DE89", "bank": {"bic": None, "name": "Bank"}}}}]}},
             {"order": {"lines": [{"payment": {"method": {"iban": "DE89", "bank": {"name": "Bank"}}}}]}}),
}
DEFS = {"Card": CARD, "Iban": IBAN, "Method": {"oneOf": [{"$ref": "#/$defs/Card"},
                                                         {"$ref": "#/$defs/Iban"}]}}


@pytest.mark.parametrize("place", sorted(PLACES))
def test_an_optional_property_of_one_branch_of_a_union_is_dropped_wherever_the_union_sits(place):
    properties, model_args, expected = PLACES[place]
    schema = obj({"amount": {"type": "integer"}, **properties}, ["amount", *properties],
                 **{"$defs": DEFS})
    model_args, expected = {"amount": 5, **model_args}, {"amount": 5, **expected}
    assert not errors(strict_parameters(schema), model_args), "what a strict model may send"
    assert errors(schema, model_args), "the tool refuses strict mode's null"
    assert drop_added_nulls(model_args, schema) == expected
    assert not errors(schema, expected)


def test_a_null_the_tool_allows_is_kept_and_the_branch_is_found_by_the_tag():
    tagged = {"oneOf": [obj({"kind": {"const": "a"}, "note": {"type": "string"}}, ["kind"]),
                        obj({"kind": {"const": "b"}, "note": {"type": ["string", "null"]}}, ["kind"])]}
    schema = obj({"x": tagged}, ["x"])
    assert drop_added_nulls({"x": {"kind": "a", "note": None}}, schema) == {"x": {"kind": "a"}}
    assert drop_added_nulls({"x": {"kind": "b", "note": None}}, schema) == {
        "x": {"kind": "b", "note": None}}


SAME_KEYS = obj({"x": {"oneOf": [obj({"id": {"type": "string"}, "note": {"type": "string"}}, ["id"]),
                                 obj({"id": {"type": "string"}, "note": {"type": ["string", "null"]}},
                                     ["id"])]}}, ["x"])


def test_when_branches_disagree_the_outcome_the_tool_s_schema_accepts_is_taken():
    # dropping "note" fits both branches, which oneOf refuses; keeping its null fits one
    model_args = {"x": {"id": "7", "note": None}}
    assert drop_added_nulls(model_args, SAME_KEYS) == model_args
    assert not errors(SAME_KEYS, model_args)
    any_of = copy.deepcopy(SAME_KEYS)
    any_of["properties"]["x"] = {"anyOf": any_of["properties"]["x"]["oneOf"]}
    assert drop_added_nulls(model_args, any_of) == {"x": {"id": "7"}}  # both valid: the first


def test_without_jsonschema_the_first_branch_decides_and_nothing_raises(monkeypatch):
    monkeypatch.setitem(sys.modules, "jsonschema", None)  # import jsonschema raises ImportError
    assert drop_added_nulls({"x": {"id": "7", "note": None}}, SAME_KEYS) == {"x": {"id": "7"}}
    assert drop_added_nulls({"amount": 1, "method": MODEL_IBAN},
                            obj({"method": {"oneOf": [CARD, IBAN]}})) == {
        "amount": 1, "method": IBAN_ONLY}


def test_an_object_with_its_own_properties_and_a_union_becomes_a_union_of_whole_objects():
    pay = obj({"amount": {"type": "integer"}, "card": {"type": "string"}, "iban": {"type": "string"},
               "bic": {"type": "string"}}, ["amount"],
              oneOf=[{"required": ["card"]}, {"required": ["iban"]}])
    extra = obj({"amount": {"type": "integer"}}, ["amount"],
                oneOf=[{"properties": {"card": {"type": "string"}}, "required": ["card"]},
                       {"properties": {"iban": {"type": "string"}, "bic": {"type": "string"}},
                        "required": ["iban"]}])
    for union, model_pay in ((pay, {"amount": 3, "card": None, "iban": "DE89", "bic": None}),
                             (extra, {"amount": 3, "iban": "DE89", "bic": None})):
        schema = obj({"pay": union}, ["pay"])
        strict = strict_parameters(schema)
        assert "anyOf" in strict["properties"]["pay"] and "properties" not in strict["properties"]["pay"]
        assert not errors(strict, {"pay": model_pay})
        assert drop_added_nulls({"pay": model_pay}, schema) == {"pay": {"amount": 3, "iban": "DE89"}}
        assert not errors(schema, {"pay": {"amount": 3, "iban": "DE89"}})
    clash = obj({"a": {"type": "string"}}, oneOf=[{"properties": {"a": {"type": "integer"}}}])
    converted = strict_schema(obj({"x": clash}, ["x"]))
    assert not converted.strict and "two different schemas" in converted.notes[0]


# -- any union of objects ------------------------------------------------------------------

_names = st.sampled_from(["a", "b", "c", "d"])
_leaf = st.sampled_from([{"type": "string"}, {"type": "integer"}, {"type": "boolean"},
                         {"type": ["string", "null"]}, {"type": "string", "enum": ["p", "q"]},
                         {"anyOf": [{"type": "string"}, {"type": "null"}]}])


def _object(children, tag=None):
    return st.builds(
        lambda props, req: obj({**({"kind": {"const": tag}} if tag else {}), **props},
                               (["kind"] if tag else []) + [k for k in props if k in req]),
        st.dictionaries(_names, children, min_size=1, max_size=3), st.sets(_names))


def _tagged_union(children):
    return st.integers(2, 3).flatmap(lambda n: st.tuples(*[_object(children, f"k{i}") for i in range(n)])
                                     ).map(lambda branches: {"oneOf": list(branches)})


def _untagged_union(children):
    return st.lists(_object(children), min_size=1, max_size=3).map(lambda bs: {"anyOf": bs})


_schemas = st.recursive(_leaf, lambda children: st.one_of(
    _object(children),
    st.builds(lambda items: {"type": "array", "items": items}, children),
    _tagged_union(children),
    _untagged_union(children),
    children.map(lambda s: {"allOf": [s]}),
    children.map(lambda s: {"$ref-me": s})), max_leaves=10)
_unions = st.one_of(_tagged_union(_schemas), _untagged_union(_schemas))


def _with_defs(schema):
    """``schema`` with each {"$ref-me": s} moved to $defs and referred to."""
    defs = {}

    def move(node):
        if isinstance(node, list):
            return [move(n) for n in node]
        if not isinstance(node, dict):
            return node
        if "$ref-me" in node:
            name = f"D{len(defs)}"
            defs[name] = None  # the name is taken before the $ref-me's inside it take theirs
            defs[name] = move(node["$ref-me"])
            return {"$ref": f"#/$defs/{name}"}
        return {k: (v if k in ("enum", "const", "required") else move(v)) for k, v in node.items()}

    moved = move(schema)
    return {**moved, "$defs": defs} if defs else moved


def strict_values(schema):
    """Values a strict model may send for the strict ``schema``."""
    if "anyOf" in schema:
        return st.one_of([strict_values(b) for b in schema["anyOf"]])
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    options = []
    for kind in kinds:
        if kind == "object":
            options.append(st.fixed_dictionaries(
                {k: strict_values(v) for k, v in schema["properties"].items()}))
        elif kind == "array":
            options.append(st.lists(strict_values(schema["items"]), max_size=2))
        else:
            options.append({"string": st.text("xy", max_size=2), "integer": st.integers(-3, 3),
                            "boolean": st.booleans(), "null": st.none()}[kind])
    return st.one_of(options)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(_names, st.one_of(_unions, _schemas), min_size=1, max_size=3), st.data())
def test_what_a_strict_model_sends_becomes_what_the_tool_accepts(properties, data):
    schema = _with_defs(obj(properties))
    converted = strict_schema(schema)
    if not converted.strict:
        return
    model_args = data.draw(strict_values(converted.schema))
    assert not errors(converted.schema, model_args)
    arguments = drop_added_nulls(model_args, schema)
    assert not errors(schema, arguments), (model_args, arguments)


_json = st.recursive(st.none() | st.booleans() | st.integers(-2, 2) | st.text("ab", max_size=2),
                     lambda children: st.lists(children, max_size=3)
                     | st.dictionaries(st.text("ab", max_size=2), children, max_size=3), max_leaves=8)
_keywords = st.sampled_from(["type", "properties", "required", "anyOf", "oneOf", "allOf", "$ref",
                             "items", "enum", "const", "additionalProperties", "$defs", "a"])
_any_schema = st.recursive(
    st.booleans() | st.sampled_from(["object", "null", "string", ["object", "null"]]) | _json,
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(_keywords | st.text("ab", max_size=2), children, max_size=4)
    | st.sampled_from(["#", "#/$defs/a", "#/properties/a", "#/nowhere", "other.json"]),
    max_leaves=12)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_any_schema, _json)
def test_any_schema_and_any_arguments_never_raise(schema, arguments):
    converted = strict_schema(schema)
    assert converted.schema["type"] == "object"
    dropped = drop_added_nulls(arguments, schema)
    assert type(dropped) is type(arguments)
    if isinstance(arguments, dict):
        assert set(dropped) <= set(arguments)


def test_unions_of_unions_do_not_run_away():
    # each level a union of the level below twice and an object that holds itself: without
    # bounds the branches to weigh double at every level, for every value
    defs = {"D0": obj({"x": {"type": "string"}, "n": {"$ref": "#/$defs/D0"}}, [])}
    for i in range(1, 30):
        defs[f"D{i}"] = {"anyOf": [{"$ref": f"#/$defs/D{i - 1}"}, {"$ref": f"#/$defs/D{i - 1}"},
                                   obj({"x": {"type": "integer"}, "n": {"$ref": f"#/$defs/D{i}"}}, [])]}
    schema = obj({"a": {"$ref": "#/$defs/D29"}}, ["a"], **{"$defs": defs})
    value = {"x": None}
    for _ in range(40):
        value = {"x": None, "n": value}
    dropped = drop_added_nulls({"a": value}, schema)["a"]
    for _ in range(40):
        assert set(dropped) == {"n"}
        dropped = dropped["n"]
    assert dropped == {}


# -- end to end ----------------------------------------------------------------------------

def test_a_strict_call_with_a_union_reaches_the_sdk_s_server_without_the_added_nulls():
    spec = config_of({"payments": {"command": sys.executable, "args": [PAYMENTS_SERVER, "stdio"]}}
                     ).server("payments")
    with McpServer(spec, kill_grace=0.5) as server:
        caller = ToolCaller(server)
        [definition] = caller.to_openai()
        function = definition["function"]
        assert function["strict"] is True, "the $defs and the oneOf are expressible"
        model_args = {"amount": 12, "method": {"kind": "iban", "iban": "DE89", "bic": None},
                      "splits": [{"kind": "card", "number": "4111", "cvc": None},
                                 {"kind": "iban", "iban": "FR76", "bic": "BNPAFRPP"}]}
        assert not errors(function["parameters"], model_args)
        refused = server.call_tool(caller.names.original(function["name"]), model_args,
                                   timeout=30)
        assert refused.is_error, "the server refuses strict mode's nulls as they are"
        result = caller.call(function["name"], json.dumps(model_args), timeout=30)
        assert not result.is_error, result.text
        assert json.loads(result.text) == {"amount": 12, "method": ["iban", "kind"],
                                           "splits": [["kind", "number"], ["bic", "iban", "kind"]]}
