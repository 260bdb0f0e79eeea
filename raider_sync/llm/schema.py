"""Tool input schemas for model APIs: bounds, ``$ref`` inlining, and OpenAI's strict mode.

:func:`check_bounds` refuses a schema past a size or depth bound (a hostile or broken server
must not make a converter run away); it walks without recursion. :func:`strict_schema` turns
an MCP tool's ``inputSchema`` into the subset OpenAI's strict mode (Structured Outputs)
accepts, or says why it cannot:

- every object gets ``additionalProperties: false`` and lists every property in ``required``;
  a property that was optional becomes nullable (``null`` is dropped again before the call,
  see :func:`~raider_sync.llm.drop_added_nulls`), so optional arguments stay optional;
- local ``$ref``/``$defs`` are inlined; a recursive ``$ref`` or one to another document makes
  the tool non-strict;
- ``oneOf`` becomes ``anyOf``, a one-branch ``allOf`` is merged, and an object with both its
  own properties and ``anyOf``/``oneOf`` branches becomes a union of whole objects (its own
  keywords merged into each branch);
- constraints strict mode does not take (``minLength``, ``uniqueItems``, an unsupported
  ``format``...) are removed, which only loosens the schema; annotations (``default``,
  ``examples``, ``$schema``...) are removed silently;
- what it cannot express (``not``, ``if``/``then``/``else``, ``patternProperties``, free-form
  objects, tuples, a multi-branch ``allOf``, a value of any type) makes the tool non-strict,
  as does passing one of OpenAI's documented limits (see :mod:`raider_sync.llm.limits`).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from ..errors import SchemaRefused
from .limits import (  # noqa: F401 - kept here too
    OPENAI_LARGE_ENUM_VALUES,
    OPENAI_MAX_ENUM_VALUES,
    OPENAI_MAX_LARGE_ENUM_CHARS,
    OPENAI_MAX_OBJECT_DEPTH,
    OPENAI_MAX_PROPERTIES,
    OPENAI_MAX_STRING_CHARS,
    openai_limits_passed,
)

#: bounds past which a tool is refused for every model format
MAX_SCHEMA_DEPTH = 64          # nesting of objects and arrays in the JSON of the schema
MAX_SCHEMA_NODES = 20000       # objects and arrays in the JSON of the schema
MAX_SCHEMA_CHARS = 1000000     # characters of keys and strings

OPENAI_FORMATS = frozenset({"date-time", "time", "date", "duration", "email", "hostname",
                            "ipv4", "ipv6", "uuid"})
# what strict mode takes (besides "format" from the list above)
_STRICT_KEYWORDS = frozenset({
    "type", "properties", "required", "additionalProperties", "items", "anyOf", "enum", "const",
    "pattern", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
    "minItems", "maxItems", "title", "description"})
# what only describes: removed without a note
_ANNOTATIONS = frozenset({
    "$schema", "$id", "$comment", "$anchor", "$dynamicAnchor", "$vocabulary", "default",
    "examples", "deprecated", "readOnly", "writeOnly", "contentEncoding", "contentMediaType",
    "contentSchema", "$defs", "definitions", "nullable"})
# what changes the shape of the accepted values: the tool becomes non-strict
_UNEXPRESSIBLE = ("not", "if", "then", "else", "dependentRequired", "dependentSchemas",
                  "dependencies", "patternProperties", "prefixItems", "$dynamicRef",
                  "$recursiveRef")
_TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})
# the keywords of a schema beside anyOf/oneOf that hold in every branch: merged into them
_SHARED = (_STRICT_KEYWORDS | {"format"}) - {"anyOf", "title", "description"}


class NotStrict(Exception):
    """Why a schema cannot be strict (internal: the converter falls back to non-strict)."""


@dataclass
class StrictSchema:
    """The outcome of :func:`strict_schema`: the schema to send, whether it is strict, and
    notes saying what was changed or why it is not strict. ``limits`` names the OpenAI limits
    the converted schema passes when that is why it is not strict (empty otherwise): OpenAI
    would refuse the whole request with such a schema sent strict."""
    schema: dict
    strict: bool
    notes: list[str] = field(default_factory=list)
    limits: list[str] = field(default_factory=list)


# -- bounds ---------------------------------------------------------------------------------

def check_bounds(schema: Any, *, max_depth: int = MAX_SCHEMA_DEPTH,
                 max_nodes: int = MAX_SCHEMA_NODES, max_chars: int = MAX_SCHEMA_CHARS) -> None:
    """Raise SchemaRefused when ``schema`` is not JSON (dicts with string keys, lists,
    strings, numbers, booleans, None) or is past one of the bounds. Never recurses, so a
    schema nested ten thousand levels deep (or a dict that contains itself) is refused
    rather than crashing the caller."""
    stack: list[tuple[Any, int]] = [(schema, 1)]
    nodes = chars = 0
    while stack:
        value, depth = stack.pop()
        if isinstance(value, str):
            chars += len(value)
        elif isinstance(value, (dict, list, tuple)):
            nodes += 1
            if depth > max_depth:
                raise SchemaRefused(f"the schema is nested deeper than {max_depth} levels")
            if nodes > max_nodes:
                raise SchemaRefused(f"the schema has more than {max_nodes} objects and arrays")
            if isinstance(value, dict):
                for key, item in value.items():
                    if not isinstance(key, str):
                        raise SchemaRefused(f"the schema has a key that is not a string: {key!r}")
                    chars += len(key)
                    stack.append((item, depth + 1))
            else:
                stack.extend((item, depth + 1) for item in value)
        elif not (value is None or isinstance(value, (bool, int, float))):
            raise SchemaRefused(f"the schema holds a {type(value).__name__}, which is not JSON")
        if chars > max_chars:
            raise SchemaRefused(f"the schema has more than {max_chars} characters")


# -- $ref ---------------------------------------------------------------------------------

def resolve_pointer(root: dict, ref: str) -> Any:
    """The part of ``root`` the local reference ``ref`` (``#/$defs/X``) points at. Raises
    NotStrict for a reference to another document or to nothing."""
    if not isinstance(ref, str) or not ref.startswith("#"):
        raise NotStrict(f"$ref {ref!r} points outside the schema")
    node: Any = root
    for token in [t for t in unquote(ref[1:]).split("/") if t][:MAX_SCHEMA_DEPTH]:
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            raise NotStrict(f"$ref {ref!r} points at nothing")
    return node


def inline_refs(schema: dict, *, max_nodes: int = MAX_SCHEMA_NODES,
                max_depth: int = MAX_SCHEMA_DEPTH) -> dict:
    """``schema`` with every local ``$ref`` replaced by what it points at (its sibling
    keywords kept) and ``$defs``/``definitions`` removed. Raises NotStrict for a recursive
    reference, one outside the schema, or an inlined schema past ``max_nodes`` or
    ``max_depth``."""
    budget = [max_nodes]

    def expand(node: Any, active: tuple[str, ...], depth: int) -> Any:
        if depth > max_depth:
            raise NotStrict(f"inlining the $refs nests the schema deeper than {max_depth} levels")
        if isinstance(node, list):
            return [expand(item, active, depth + 1) for item in node]
        if not isinstance(node, dict):
            return node
        budget[0] -= 1
        if budget[0] < 0:
            raise NotStrict(f"inlining the $refs makes the schema larger than {max_nodes} nodes")
        if "$ref" in node:
            ref = node["$ref"]
            if ref in active:
                raise NotStrict(f"$ref {ref!r} is recursive")
            target = resolve_pointer(schema, ref)
            if not isinstance(target, dict):
                raise NotStrict(f"$ref {ref!r} does not point at a schema")
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            merged = {**expand(target, active + (ref,), depth + 1),
                      **{k: expand(v, active, depth + 1) for k, v in siblings.items()}}
            return merged
        out = {}
        for key, value in node.items():
            if key in ("$defs", "definitions"):
                continue
            if key in ("enum", "const", "required", "examples", "default"):
                out[key] = value  # values, not schemas
            elif key in ("properties", "patternProperties") and isinstance(value, dict):
                out[key] = {name: expand(sub, active, depth + 1) for name, sub in value.items()}
            else:
                out[key] = expand(value, active, depth + 1)
        return out

    return expand(schema, (), 1)


# -- strict mode --------------------------------------------------------------------------

def strict_schema(schema: Any) -> StrictSchema:
    """``schema`` (a tool's ``inputSchema``, within :func:`check_bounds`) for OpenAI's strict
    mode, or, when it cannot be strict, the schema for a non-strict tool with the reason in
    ``notes`` (see the module doc). Never raises for a schema within the bounds."""
    notes: list[str] = []
    try:
        if not isinstance(schema, dict):
            raise NotStrict("the input schema is not an object")
        root = inline_refs(schema)
        if "anyOf" in root or "oneOf" in root:
            raise NotStrict("the root of the schema is a union (anyOf/oneOf)")
        converted = _strict_node(root, "", notes, is_root=True)
        if converted.get("type") not in ("object", ["object"]):
            raise NotStrict("the root of the schema is not an object")
        converted["type"] = "object"
    except NotStrict as exc:
        notes = [f"not strict: {exc}"]
        return StrictSchema(loose_schema(schema, notes), False, notes)
    except RecursionError:  # a schema within the bounds cannot get here; be safe all the same
        notes = ["not strict: the schema is too deep"]
        return StrictSchema(loose_schema(schema, notes), False, notes)
    limits = openai_limits_passed(converted)
    if limits:
        notes = [f"not strict: {limit}" for limit in limits]
        return StrictSchema(loose_schema(schema, notes), False, notes, limits)
    return StrictSchema(converted, True, notes)


def loose_schema(schema: Any, notes: list[str] | None = None) -> dict:
    """A non-strict schema: ``schema`` as it is, with an object root and a ``properties``
    member (OpenAI refuses an object schema without one). A union at the root (anyOf,
    oneOf, allOf: the Anthropic API refuses it) is flattened into one object with the
    properties of every branch; the required ones are the root's and those of allOf
    branches. What was flattened is added to ``notes``."""
    loose = copy.deepcopy(schema) if isinstance(schema, dict) else {}
    if loose.get("type") != "object":
        loose["type"] = "object"
    if not isinstance(loose.get("properties"), dict):
        loose["properties"] = {}
    unions = [key for key in ("anyOf", "oneOf", "allOf") if key in loose]
    if unions and notes is not None:
        notes.append(f"(root): {'/'.join(unions)} flattened into one object")
    required = list(loose.get("required") or []) if isinstance(loose.get("required"), list) else []
    for key in unions:
        branches = loose.pop(key)
        for branch in branches if isinstance(branches, list) else []:
            branch = resolve_local(loose, branch)
            if not isinstance(branch, dict):
                continue
            if isinstance(branch.get("properties"), dict):
                for name, sub in branch["properties"].items():
                    loose["properties"].setdefault(name, sub)
            if key == "allOf" and isinstance(branch.get("required"), list):
                required += [r for r in branch["required"] if r not in required]
    if unions:
        loose["required"] = required
        if not required:
            del loose["required"]
    return loose


def resolve_local(root: dict, schema: Any) -> Any:
    """``schema``, or what its local ``$ref`` points at in ``root`` ({} when it points at
    nothing there)."""
    for _ in range(MAX_SCHEMA_DEPTH):
        if not (isinstance(schema, dict) and isinstance(schema.get("$ref"), str)):
            return schema
        try:
            schema = resolve_pointer(root, schema["$ref"])
        except NotStrict:
            return {}
    return {}


def _strict_node(node: Any, where: str, notes: list[str], is_root: bool = False) -> dict:
    here = where or "(root)"
    if not isinstance(node, dict):
        raise NotStrict(f"{here}: a {'true' if node is True else node!r} schema accepts "
                        f"{'any value' if node is True else 'nothing'}")
    for keyword in _UNEXPRESSIBLE:
        if keyword in node:
            raise NotStrict(f"{here}: {keyword!r} cannot be expressed in strict mode")
    node = dict(node)
    if "oneOf" in node:
        if "anyOf" in node:
            raise NotStrict(f"{here}: both anyOf and oneOf")
        node["anyOf"] = node.pop("oneOf")
        notes.append(f"{here}: oneOf became anyOf")
    if "allOf" in node:
        branches = node.pop("allOf")
        if not isinstance(branches, list) or len(branches) != 1 or not isinstance(branches[0], dict):
            raise NotStrict(f"{here}: allOf with more than one schema")
        merged = _merged(node, branches[0], here)
        if merged is None:
            raise NotStrict(f"{here}: allOf with a type its parent does not allow")
        return _strict_node(merged, where, notes, is_root)
    if "anyOf" in node and any(key in _SHARED for key in node):
        node = _distributed(node, here, notes)
    out: dict[str, Any] = {}
    removed: list[str] = []
    for key, value in node.items():
        if key in _STRICT_KEYWORDS:
            out[key] = value
        elif key == "format" and value in OPENAI_FORMATS:
            out[key] = value
        elif key not in _ANNOTATIONS and key != "anyOf":
            removed.append(key)
    if removed:
        notes.append(f"{here}: removed {', '.join(sorted(removed))}")
    if "anyOf" in node:
        branches = node["anyOf"]
        if not isinstance(branches, list) or not branches:
            raise NotStrict(f"{here}: anyOf is not a list of schemas")
        out["anyOf"] = [_strict_node(b, f"{where}/anyOf/{i}", notes) for i, b in enumerate(branches)]
    types = _types_of(out, here)
    if not types and "anyOf" not in out and "enum" not in out and "const" not in out:
        if is_root or isinstance(node.get("properties"), dict):
            types = ["object"]
            out["type"] = "object"
        else:
            raise NotStrict(f"{here}: a schema without a type accepts any value")
    if "object" in types:
        _strict_object(node, out, where, notes, is_root)
    if "array" in types:
        items = node.get("items")
        if items is None or isinstance(items, (list, bool)):
            raise NotStrict(f"{here}: an array without one schema for its items")
        out["items"] = _strict_node(items, f"{where}/items", notes)
    elif "items" in out:
        del out["items"]
    return out


def _distributed(node: dict, here: str, notes: list[str]) -> dict:
    """``node``, which has ``anyOf`` beside keywords of its own, as an ``anyOf`` of whole
    schemas: its own keywords merged into each branch. An object whose branches add
    properties to its own can be expressed so (strict mode closes every object, so the
    parent and the branches could not each list only their part)."""
    branches = node["anyOf"]
    if not isinstance(branches, list) or not branches:
        raise NotStrict(f"{here}: anyOf is not a list of schemas")
    own = {key: value for key, value in node.items() if key in _SHARED}
    merged = []
    for i, branch in enumerate(branches):
        if not isinstance(branch, dict):
            raise NotStrict(f"{here}/anyOf/{i}: a {branch!r} schema in a union")
        both = _merged(own, branch, f"{here}/anyOf/{i}")
        if both is not None:  # None: a branch its parent's type rules out
            merged.append(both)
    if not merged:
        raise NotStrict(f"{here}: no branch of anyOf has a type its parent allows")
    notes.append(f"{here}: {', '.join(sorted(own))} merged into each branch of anyOf")
    return {**{key: value for key, value in node.items() if key not in _SHARED},
            "anyOf": merged}


def _merged(parent: dict, child: dict, here: str) -> dict | None:
    """One schema that holds where both ``parent`` and ``child`` hold: the types they have
    in common, the properties of both, the required names of both, the other keywords of
    either (the parent's annotations win). None when they have no type in common. Raises
    NotStrict when both constrain the same keyword (or property) differently."""
    out = dict(child)
    parent_types, child_types = _type_list(parent.get("type")), _type_list(child.get("type"))
    if any(not isinstance(kind, str) for kind in [*(parent_types or []), *(child_types or [])]):
        raise NotStrict(f"{here}: a type that is not a name")
    if parent_types is not None and child_types is not None:
        common: list = []
        for kind in child_types:
            if kind not in parent_types and {kind, *parent_types} >= {"integer", "number"}:
                kind = "integer"  # an integer is a number: what both allow
            elif kind not in parent_types:
                continue
            if kind not in common:
                common.append(kind)
        if not common:
            return None
        out["type"] = common[0] if len(common) == 1 else common
    elif parent_types is not None:
        out["type"] = parent["type"]
    objects = "type" not in out or "object" in (_type_list(out["type"]) or [])
    for key, value in parent.items():
        if key == "type":
            continue
        if key in ("properties", "required", "additionalProperties") and not objects:
            continue  # object keywords say nothing about a branch that is not an object
        if key in ("title", "description") or key not in out:
            out[key] = value
        elif key == "properties" and isinstance(value, dict) and isinstance(out[key], dict):
            clash = [name for name in value if name in out[key] and out[key][name] != value[name]]
            if clash:
                raise NotStrict(f"{here}: property {clash[0]!r} has two different schemas")
            out[key] = {**value, **out[key]}
        elif key == "required" and isinstance(value, list) and isinstance(out[key], list):
            out[key] = list(dict.fromkeys([*value, *out[key]]))
        elif key not in _ANNOTATIONS and out[key] != value:
            raise NotStrict(f"{here}: {key!r} differs between a schema and its parent")
    return out


def _type_list(value: Any) -> list | None:
    if value is None:
        return None
    return list(value) if isinstance(value, list) else [value]


def _types_of(out: dict, here: str) -> list[str]:
    value = out.get("type")
    if value is None:
        return []
    types = value if isinstance(value, list) else [value]
    if not types or any(not isinstance(t, str) or t not in _TYPES for t in types):
        raise NotStrict(f"{here}: unknown type {value!r}")
    return list(types)


def _strict_object(node: dict, out: dict, where: str, notes: list[str], is_root: bool) -> None:
    here = where or "(root)"
    properties = node.get("properties")
    if properties is not None and not isinstance(properties, dict):
        raise NotStrict(f"{here}: properties is not an object")
    extra = node.get("additionalProperties", True)
    if isinstance(extra, dict) and extra:
        raise NotStrict(f"{here}: additional properties of a schema (a map)")
    if not properties and extra is not False:
        if not is_root or "additionalProperties" in node:
            raise NotStrict(f"{here}: an object with free-form properties")
        notes.append("(root): no properties declared: the tool takes no arguments")
    required = node.get("required") or []
    if not isinstance(required, list):
        raise NotStrict(f"{here}: required is not a list")
    names = {name for name in required if isinstance(name, str)}  # a set: 5000 properties are allowed
    converted: dict[str, Any] = {}
    for name, sub in (properties or {}).items():
        strict_sub = _strict_node(sub, f"{where}/properties/{name}", notes)
        converted[name] = strict_sub if name in names else nullable(strict_sub)
    out["properties"] = converted
    out["required"] = list(converted)
    out["additionalProperties"] = False


def nullable(schema: dict) -> dict:
    """``schema`` that also accepts null (unchanged when it does already): ``null`` added to
    a scalar ``type`` (and ``enum``) or to ``anyOf``; an object, an array or a ``const`` is
    wrapped as ``anyOf: [schema, {"type": "null"}]``, the form OpenAI's own SDK uses."""
    if accepts_null(schema):
        return schema
    if "anyOf" in schema:
        return {**schema, "anyOf": [*schema["anyOf"], {"type": "null"}]}
    types = schema.get("type")
    if not isinstance(types, list):
        types = [types]
    if "type" in schema and "const" not in schema and not {"object", "array"} & set(types):
        out = dict(schema)
        out["type"] = [*types, "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
        return out
    described = {k: schema[k] for k in ("description", "title") if k in schema}
    inner = {k: v for k, v in schema.items() if k not in described}
    return {"anyOf": [inner, {"type": "null"}], **described}


def accepts_null(schema: Any) -> bool:
    """Whether ``schema`` says in so many words that null is allowed: type null, a null in
    ``enum``, ``const: null``, or a branch of ``anyOf``/``oneOf`` that does."""
    if not isinstance(schema, dict):
        return schema is True
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return "enum" not in schema or None in (schema.get("enum") or [])
    if "const" in schema:
        return schema["const"] is None
    if isinstance(schema.get("enum"), list) and "type" not in schema:
        return None in schema["enum"]
    return any(accepts_null(b) for key in ("anyOf", "oneOf")
               if isinstance(schema.get(key), list) for b in schema[key])
