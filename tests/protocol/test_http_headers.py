"""The stateless revision's header values and x-mcp-header annotations, as properties."""
from __future__ import annotations

import base64

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from raider_sync.protocol.http_headers import (
    InvalidAnnotation,
    argument_headers,
    decode_value,
    encode_value,
    header_params,
    headers_problem,
    message_headers,
    param_headers_problem,
    param_value,
)

TOKEN_CHARS = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
tokens = st.text(alphabet=TOKEN_CHARS, min_size=1, max_size=20)


@given(st.text())
@example("\n").via("a trailing newline once slipped past a $-anchored pattern")
@example("abc\n").via("the same, after printable text")
def test_every_value_round_trips_and_is_a_safe_header(value):
    encoded = encode_value(value)
    assert decode_value(encoded) == value
    assert all(0x20 <= ord(c) <= 0x7E for c in encoded)
    assert encoded == encoded.strip(" ")


@given(st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E)))
def test_plain_printable_ascii_travels_as_it_is(value):
    if not (value.lower().startswith("=?base64?") and value.endswith("?=")):
        assert encode_value(value) == value


@given(st.text(min_size=1).filter(lambda v: any(not 0x20 <= ord(c) <= 0x7E for c in v)
                                  or v != v.strip(" ")))
@example("\n").via("a trailing newline once slipped past a $-anchored pattern")
def test_anything_else_is_base64(value):
    encoded = encode_value(value)
    assert encoded.startswith("=?base64?") and encoded.endswith("?=")
    assert base64.b64decode(encoded[9:-2]).decode() == value


def test_the_spec_examples():
    assert encode_value("us-west1") == "us-west1"
    assert encode_value("a b") == "a b"
    assert encode_value(" lead") == "=?base64?IGxlYWQ=?="
    assert encode_value("tab\there").startswith("=?base64?")
    assert encode_value("=?base64?abc?=").startswith("=?base64?") and \
        decode_value(encode_value("=?base64?abc?=")) == "=?base64?abc?="
    assert encode_value("") == ""
    assert (param_value(True), param_value(False), param_value(42), param_value(None),
            param_value(1.5)) == ("true", "false", "42", None, None)


@given(st.dictionaries(tokens, st.sampled_from(["string", "integer", "boolean"]), max_size=6))
def test_valid_annotations_are_found_by_path(names):
    unique = {}
    for name, kind in names.items():
        unique.setdefault(name.lower(), (name, kind))
    schema = {"type": "object", "properties": {
        f"p{i}": {"type": kind, "x-mcp-header": name}
        for i, (name, kind) in enumerate(unique.values())}}
    found = header_params(schema)
    assert {name: path for name, path in found.items()} == {
        name: (f"p{i}",) for i, (name, _) in enumerate(unique.values())}


@pytest.mark.parametrize("annotation,kind", [
    ("", "string"), ("has space", "string"), ("co:lon", "string"), ("naïve", "string"),
    ("tab\t", "string"), ("newline\n", "string"), (None, "string"), (3, "string"), ({"a": 1}, "string"),
    (["x"], "string"), ("Ok", "number"), ("Ok", "object"), ("Ok", "array"),
    ("Ok", ["string", "null"])])
def test_invalid_annotations_are_refused_with_the_property_named(annotation, kind):
    schema = {"type": "object", "properties": {"field": {"type": kind,
                                                         "x-mcp-header": annotation}}}
    with pytest.raises(InvalidAnnotation, match="'field'"):
        header_params(schema)


@given(tokens)
def test_duplicate_annotations_differing_in_case_are_refused(name):
    schema = {"type": "object", "properties": {
        "a": {"type": "string", "x-mcp-header": name},
        "b": {"type": "string", "x-mcp-header": name.swapcase()}}}
    with pytest.raises(InvalidAnnotation, match="repeats"):
        header_params(schema)


def test_only_properties_paths_count():
    schema = {"type": "object", "properties": {
        "opts": {"type": "object", "properties": {"limit": {"type": "integer",
                                                            "x-mcp-header": "Limit"}}},
        "list": {"type": "array", "items": {"type": "string", "x-mcp-header": "Item"}},
        "alt": {"anyOf": [{"type": "string", "x-mcp-header": "Alt"}]}}}
    assert header_params(schema) == {"Limit": ("opts", "limit")}


@given(st.one_of(st.none(), st.booleans(), st.integers(), st.text(), st.floats()))
def test_argument_headers_follow_the_value_rules(value):
    headers = argument_headers({"X": ("x",)}, {"x": value})
    if value is None or isinstance(value, float):
        assert headers == {}
    elif isinstance(value, bool):
        assert headers == {"Mcp-Param-X": "true" if value else "false"}
    elif isinstance(value, int):
        assert headers == ({"Mcp-Param-X": str(value)} if abs(value) <= 2 ** 53 - 1 else {})
    else:
        assert decode_value(headers["Mcp-Param-X"]) == value


def test_message_headers():
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "run", "arguments": {"region": "eu"}}}
    assert message_headers(call, lambda name: {"Region": ("region",)}) == {
        "Mcp-Method": "tools/call", "Mcp-Name": "run", "Mcp-Param-Region": "eu"}
    read = {"jsonrpc": "2.0", "id": 2, "method": "resources/read",
            "params": {"uri": "file:///a b.txt"}}
    assert message_headers(read) == {"Mcp-Method": "resources/read",
                                     "Mcp-Name": "file:///a b.txt"}
    assert message_headers({"jsonrpc": "2.0", "id": 3, "result": {}}) == {}


@given(st.one_of(st.booleans(), st.integers(), st.text()))
def test_the_headers_a_client_sends_are_what_a_server_accepts(value):
    annotated = {"X": ("opts", "x")}
    arguments = {"opts": {"x": value}}
    sent = argument_headers(annotated, arguments)
    assert param_headers_problem(annotated, arguments,
                                 lambda name: sent.get(f"Mcp-Param-{name}")) is None


@pytest.mark.parametrize("arguments,header,problem", [
    ({"region": "Hello"}, "=?base64?SGVsbG8=?=", None),
    ({"region": "SGVsbG8="}, "SGVsbG8=", None),                     # no sentinel: literal
    ({"region": "=?base64?SGVsbG8="}, "=?base64?SGVsbG8=", None),   # no ?= suffix: literal
    ({"region": "Hello"}, "=?base64?SGVsbG8?=", "not valid base64"),        # padding
    ({"region": "Hello"}, "=?base64?SGVs!!!bG8=?=", "not valid base64"),    # characters
    ({"region": "Hello"}, "=?base64?//8=?=", "not valid base64"),           # not UTF-8
    ({"region": "eu"}, None, "is missing"),
    ({"region": "eu"}, "us", "does not match"),
    ({"region": "eu"}, "EU", "does not match"),
    ({}, "eu", "hold no value"),
    ({"region": None}, "eu", "hold no value"),
    ({"region": {"a": 1}}, "eu", "does not match"),
    ({}, None, None),
    ({"region": {"a": 1}}, None, None),                             # no header can carry it
])
def test_a_server_refuses_headers_that_disagree_with_the_arguments(arguments, header, problem):
    found = param_headers_problem({"Region": ("region",)}, arguments,
                                  lambda name: header if name == "Region" else None)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found and "Mcp-Param-Region" in found


def test_integers_and_booleans_compare_as_sent():
    annotated = {"N": ("n",), "B": ("b",)}
    headers = {"N": "42", "B": "true"}
    assert param_headers_problem(annotated, {"n": 42, "b": True}, headers.get) is None
    assert "Mcp-Param-B" in param_headers_problem(annotated, {"n": 42, "b": False}, headers.get)
    assert "Mcp-Param-N" in param_headers_problem(annotated, {"n": 43, "b": True}, headers.get)
    big = 2 ** 60
    assert param_headers_problem({"N": ("n",)}, {"n": big}, lambda name: None) is None, \
        "a client leaves out what JSON numbers cannot carry"
    assert param_headers_problem({"N": ("n",)}, {"n": big}, lambda name: str(big)) is None


@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
def test_the_tasks_methods_are_named_by_their_task_id(method):
    message = {"jsonrpc": "2.0", "id": 4, "method": method, "params": {"taskId": "t-1"}}
    assert message_headers(message) == {"Mcp-Method": method, "Mcp-Name": "t-1"}
    assert headers_problem(method, "t-1", method, {"taskId": "t-1"}) is None
    assert "Mcp-Name" in headers_problem(method, "t-2", method, {"taskId": "t-1"})
    assert "Mcp-Name" in headers_problem(method, None, method, {"taskId": "t-1"})
