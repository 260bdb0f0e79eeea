"""From a strict model's arguments back to what the tool's own schema allows.

In strict mode every property is required, so an optional one becomes nullable and the model
sends ``null`` for an argument it leaves out (see :mod:`raider_sync.llm.schema`).
:func:`drop_added_nulls` removes those nulls wherever the tool's schema places the property:
nested objects, array items, local ``$ref``s, and every branch of ``anyOf``, ``oneOf`` and
``allOf``, at any depth.

Where a value meets a union, the branch it was made for decides which nulls go (``bic`` may be
optional in one branch and nullable or required in another). The branches are narrowed by the
value's type, ``const`` and ``enum``, the same of its properties, and, for an object, its keys
(a strict model sends exactly the properties of the branch it fills). When the branches left
still disagree, each outcome is validated against the tool's schema with the ``jsonschema``
package (the ``schema`` extra, imported only then) and the first valid one in the schema's
order is taken; without jsonschema, or when none is valid, the first one is.
"""
from __future__ import annotations

from typing import Any

from .schema import MAX_SCHEMA_DEPTH, NotStrict, accepts_null, resolve_pointer

_COMBINATORS = ("$ref", "allOf", "anyOf", "oneOf")
# bounds that keep a hostile schema (unions of unions of unions...) from running away; a
# real tool's arguments come nowhere near them
_MAX_WAYS = 64         # combinations of union branches weighed for one schema
_MAX_STEPS = 100000    # branches weighed in one call before only the first one is followed
_ANY = object()        # no const


def drop_added_nulls(arguments: Any, schema: Any) -> Any:
    """``arguments`` without the nulls strict mode made the model send: a null for a property
    the tool's own ``schema`` neither requires nor declares nullable is removed, at any depth
    and in whichever branch of a union the value belongs to (see the module doc for how the
    branch is found). Returns a new value; the given one is not changed. Never raises for
    JSON arguments and a schema within :func:`~raider_sync.llm.check_bounds`."""
    if not isinstance(schema, dict):
        return arguments
    return _Dropper(schema).drop(arguments, schema, 0)


class _Way:
    """One way a schema can hold: the schemas that all hold (its own keywords, what its
    ``$ref`` points at, its ``allOf`` members, one branch of each union), read once."""

    __slots__ = ("parts", "checks", "is_object", "required", "properties", "extra", "items",
                 "names")

    def __init__(self, parts: list[dict]):
        self.parts = parts
        self.checks = [check for check in map(_check_of, parts) if check is not None]
        self.is_object = any(isinstance(part.get("properties"), dict) or "object" in _types(part)
                             for part in parts)
        self.required = {name for part in parts for name in _list(part.get("required"))
                         if isinstance(name, str)}
        self.properties: dict[str, list] = {}
        for part in parts:
            if isinstance(part.get("properties"), dict):
                for name, sub in part["properties"].items():
                    self.properties.setdefault(name, []).append(sub)
        self.names = set(self.properties)
        self.extra = [part["additionalProperties"] for part in parts
                      if isinstance(part.get("additionalProperties"), dict)]
        self.items = [part["items"] for part in parts if isinstance(part.get("items"), dict)]

    def admits(self, value: Any) -> bool:
        """Whether ``value`` has a type every part names and is in their const/enum."""
        for kinds, const, enum in self.checks:
            if kinds is not None and not any(_is_kind(value, kind) for kind in kinds):
                return False
            if const is not _ANY and not _same(const, value):
                return False
            if enum is not None and not any(_same(option, value) for option in enum):
                return False
        return True


class _Dropper:
    """One pass over one call's arguments: the root schema (for ``$ref``), the ways each
    schema can hold, and a validator built the first time a choice needs one."""

    def __init__(self, root: dict):
        self.root = root
        self._ways: dict[int, list[_Way]] = {}  # by id(): every schema looked at lives in root
        self._nullable: dict[int, bool] = {}
        self._expanding: set[int] = set()
        self._steps = _MAX_STEPS
        # each (value, schema) pair is worked out once, however many branches lead to it; the
        # value is kept with its outcome so that its id() cannot be reused meanwhile
        self._done: dict[tuple[int, int], tuple[Any, Any]] = {}
        self._validator: Any = None  # None: not built yet; False: jsonschema is not there

    def drop(self, value: Any, schema: Any, depth: int) -> Any:
        if depth > MAX_SCHEMA_DEPTH or not isinstance(value, (dict, list)):
            return value
        key = (id(value), id(schema))
        if key not in self._done:
            self._done[key] = (value, self._drop(value, schema, depth))
        return self._done[key][1]

    def _drop(self, value: Any, schema: Any, depth: int) -> Any:
        ways = self.ways(schema)
        if len(ways) > 1:
            ways = self._narrowed(value, ways)
        self._steps -= len(ways)
        if self._steps < 0:
            ways = ways[:1]
        outcomes: list[Any] = []
        for way in ways:
            outcome = self._drop_with(value, way, depth)
            if outcome not in outcomes:
                outcomes.append(outcome)
        return outcomes[0] if len(outcomes) == 1 else self._choose(outcomes, schema)

    def ways(self, schema: Any) -> list[_Way]:
        """The ways ``schema`` can hold (at most ``_MAX_WAYS``)."""
        if not isinstance(schema, dict):
            return [_Way([])]
        key = id(schema)
        if key not in self._ways:
            self._ways[key] = [_Way(parts) for parts in self._parts(schema)]
        return self._ways[key]

    def _parts(self, schema: dict) -> list[list[dict]]:
        own = {k: v for k, v in schema.items() if k not in _COMBINATORS}
        ways: list[list[dict]] = [[own] if own else []]  # {} says nothing: left out
        key = id(schema)
        if key in self._expanding or len(self._expanding) > MAX_SCHEMA_DEPTH:
            return ways  # a schema inside itself (a recursive $ref) adds nothing more here
        self._expanding.add(key)
        try:
            ref = schema.get("$ref")
            if isinstance(ref, str):
                try:
                    target = resolve_pointer(self.root, ref)
                except NotStrict:  # a reference to another document or to nothing
                    target = None
                if isinstance(target, dict):
                    ways = _product(ways, [w.parts for w in self.ways(target)])
            for member in _list(schema.get("allOf")):
                if isinstance(member, dict):
                    ways = _product(ways, [w.parts for w in self.ways(member)])
            for union in ("anyOf", "oneOf"):
                options = [way.parts for branch in _list(schema.get(union))
                           if isinstance(branch, dict) for way in self.ways(branch)]
                if options:
                    ways = _product(ways, options)
        finally:
            self._expanding.discard(key)
        return ways

    def _narrowed(self, value: Any, ways: list[_Way]) -> list[_Way]:
        """The ways ``value`` fits, those with exactly its keys first (a strict model sends
        exactly the properties of the branch it fills); all of them when it fits none."""
        exact = [way for way in ways if way.names == set(value)] if isinstance(value, dict) else []
        fitting = [way for way in exact if self._fits(value, way)]
        if not fitting and len(exact) < len(ways):
            fitting = [way for way in ways if self._fits(value, way)]
        return fitting or exact or ways

    def _fits(self, value: Any, way: _Way) -> bool:
        """Whether ``value`` has a type, const or enum ``way`` allows, and so do its
        non-null properties (one level down: enough to tell tagged branches apart)."""
        if not way.admits(value):
            return False
        if isinstance(value, dict):
            for key, item in value.items():
                if item is not None:
                    for sub in way.properties.get(key, ()):
                        if not any(w.admits(item) for w in self.ways(sub)):
                            return False
        return True

    def _drop_with(self, value: Any, way: _Way, depth: int) -> Any:
        if isinstance(value, dict):
            if not way.is_object:
                return value
            out = {}
            for key, item in value.items():
                subs = way.properties.get(key) or way.extra
                if item is None and key not in way.required and not (
                        subs and all(self._accepts_null(sub) for sub in subs)):
                    continue  # strict mode's null for an argument left out
                for sub in subs:
                    item = self.drop(item, sub, depth + 1)
                out[key] = item
            return out
        if isinstance(value, list) and way.items:
            out_list = []
            for element in value:
                for sub in way.items:
                    element = self.drop(element, sub, depth + 1)
                out_list.append(element)
            return out_list
        return value

    def _accepts_null(self, schema: Any) -> bool:
        """Whether ``schema`` says in so many words that null is allowed, through its
        ``$ref``, ``allOf`` and union branches."""
        if schema is True:
            return True
        key = id(schema)
        if key not in self._nullable:
            self._nullable[key] = any(
                any(accepts_null(p) for p in way.parts) and not any(_refuses_null(p) for p in way.parts)
                for way in self.ways(schema))
        return self._nullable[key]

    def _choose(self, outcomes: list[Any], schema: dict) -> Any:
        """The first of ``outcomes`` that ``schema`` (within the root) accepts, checked with
        jsonschema; the first one when jsonschema is missing or accepts none."""
        if self._validator is None:
            self._validator = _root_validator(self.root)
        if self._validator is False:
            return outcomes[0]
        try:
            validator = self._validator.evolve(schema=schema)
            return next((o for o in outcomes if validator.is_valid(o)), outcomes[0])
        except Exception:  # noqa: BLE001 - a schema jsonschema cannot use: decide without it
            return outcomes[0]


def _product(ways: list[list[dict]], options: list[list[dict]]) -> list[list[dict]]:
    """Each of ``ways`` with each of ``options``; the same parts twice count once."""
    out: dict[tuple[int, ...], list[dict]] = {}
    for way in ways:
        for option in options:
            parts = list({id(part): part for part in way + option}.values())
            out.setdefault(tuple(id(part) for part in parts), parts)
            if len(out) >= _MAX_WAYS:
                return list(out.values())
    return list(out.values())


def _root_validator(root: dict) -> Any:
    """A jsonschema validator of ``root`` (the draft its ``$schema`` names, else 2020-12),
    or False when the package is missing or cannot use the schema."""
    try:
        import jsonschema
    except ImportError:
        return False
    try:
        cls = jsonschema.validators.validator_for(root, default=jsonschema.Draft202012Validator)
        return cls(root)
    except Exception:  # noqa: BLE001 - an unusable schema: the choice is made without it
        return False


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _types(schema: dict) -> list:
    kind = schema.get("type")
    return kind if isinstance(kind, list) else [] if kind is None else [kind]


def _check_of(schema: dict) -> tuple | None:
    """What ``schema`` asks of a value's type, const and enum: (kinds or None, const or
    _ANY, enum or None); None when it asks nothing of them."""
    kinds = _types(schema) or None
    const = schema.get("const", _ANY)
    enum = schema.get("enum") if isinstance(schema.get("enum"), list) else None
    return None if kinds is None and const is _ANY and enum is None else (kinds, const, enum)


def _refuses_null(schema: dict) -> bool:
    return ((bool(_types(schema)) and "null" not in _types(schema))
            or (isinstance(schema.get("enum"), list) and None not in schema["enum"])
            or ("const" in schema and schema["const"] is not None))


def _is_kind(value: Any, kind: Any) -> bool:
    if kind == "null":
        return value is None
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer())
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "string":
        return isinstance(value, str)
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, dict)
    return True  # a type JSON Schema does not know: no reason to rule the branch out


def _same(a: Any, b: Any) -> bool:
    """JSON equality: ``true`` is not ``1``."""
    return a == b and isinstance(a, bool) == isinstance(b, bool)
