"""What a tool call returns: :class:`ToolResult`, the result dict with readers on top.

    result = server.call_tool("mcp__weather__forecast", {"city": "Oslo"})
    result["content"]              # the dict the server sent, unchanged
    result.text, result.is_error   # shortcuts
    result.structured              # structuredContent, checked against the tool's outputSchema
    result.data(Forecast)          # ... as a pydantic model (or any type pydantic validates)

Checking against ``outputSchema`` uses the ``jsonschema`` package, an optional dependency
(``pip install 'raider_sync[schema]'``): it is imported the first time a result of a tool with
an output schema is read through :attr:`ToolResult.structured`, never on the call path. An
error result is never checked: servers rightly report errors without structure.
"""
from __future__ import annotations

from typing import Any, TypeVar

from ..errors import StructuredContentError, ToolError

T = TypeVar("T")

_MISSING_JSONSCHEMA = (
    "checking structuredContent against the tool's outputSchema needs the jsonschema package: "
    "pip install 'raider_sync[schema]'")
_UNCHECKED = object()


class ToolResult(dict):
    """A tool result: the plain dict the server sent (so ``result["content"]`` works as ever),
    plus ``text``, ``is_error``, ``images``, ``structured`` and ``data(Model)`` for reading,
    and HTML in a notebook.

    ``tool`` is the name the tool was called by and ``output_schema`` the ``outputSchema``
    the tool declared when it was listed (None when it declared none); ``attempts`` how
    many times the call was sent; none is a key of the dict.
    """

    tool: str | None = None
    output_schema: dict | None = None
    #: how many times the call was sent (more than 1 after a broken connection, see
    #: :mod:`raider_sync.client.retries`); not a key of the dict
    attempts: int = 1
    _structured: Any = _UNCHECKED

    def __init__(self, result: Any = (), *, tool: str | None = None,
                 output_schema: dict | None = None):
        dict.__init__(self, result)
        if tool is not None:  # the class attributes stand for None: one less write per call
            self.tool = tool
        if isinstance(output_schema, dict):
            self.output_schema = output_schema

    @property
    def is_error(self) -> bool:
        return bool(self.get("isError"))

    @property
    def text(self) -> str:
        """The text of every text block, joined by newlines."""
        return "\n".join(b.get("text", "") for b in self.blocks("text"))

    @property
    def images(self) -> list[dict]:
        return self.blocks("image")

    def blocks(self, kind: str) -> list[dict]:
        """The content blocks of type ``kind`` ("text", "image", "audio", "resource",
        "resource_link"), in order."""
        return [b for b in self.get("content") or [] if isinstance(b, dict) and b.get("type") == kind]

    @property
    def structured(self) -> Any:
        """``structuredContent``, checked against the tool's ``outputSchema`` on first read.

        None when the result has none and the tool declared no output schema. For an error
        result it is whatever the server sent, unchecked. Raises StructuredContentError when a
        tool with an output schema sent no structuredContent or content that does not match
        it, and ImportError when the jsonschema package (the ``schema`` extra) is missing.
        """
        value = self.get("structuredContent")
        if self.is_error or self.output_schema is None:
            return value
        if self._structured is _UNCHECKED:
            if value is None:
                raise StructuredContentError(
                    f"{self._who()} declares an outputSchema but its result has no "
                    f"structuredContent")
            check_against_schema(value, self.output_schema, self._who())
            self._structured = value
        return self._structured

    def data(self, model: type[T]) -> T:
        """:attr:`structured` as ``model``: a pydantic model class, or any type pydantic can
        validate (a dataclass, a TypedDict, ``list[int]``...).

        Raises ToolError for an error result, StructuredContentError when there is no
        structuredContent or it does not fit ``model`` (the message names the fields).
        """
        if self.is_error:
            raise ToolError(self)
        value = self.structured
        if value is None:
            raise StructuredContentError(f"{self._who()} returned no structuredContent")
        from pydantic import TypeAdapter, ValidationError
        try:
            return TypeAdapter(model).validate_python(value)
        except ValidationError as exc:
            raise StructuredContentError(
                f"the structuredContent of {self._who()} is not a "
                f"{getattr(model, '__name__', model)}: {exc}") from exc

    def raise_for_error(self) -> "ToolResult":
        """Raise ToolError (carrying this result) if the tool reported an error; else return
        this result."""
        if self.is_error:
            raise ToolError(self)
        return self

    def _who(self) -> str:
        return f"tool {self.tool!r}" if self.tool else "the tool"

    def _repr_html_(self) -> str:
        from .notebook import result_html
        return result_html(self)


def text_result(text: str, is_error: bool = False) -> dict:
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if is_error:
        result["isError"] = True
    return result


def check_against_schema(value: Any, schema: dict, who: str = "the tool") -> None:
    """Raise StructuredContentError unless ``value`` is valid against the JSON Schema
    ``schema`` (the draft its ``$schema`` names, else 2020-12). Raises ImportError when the
    jsonschema package is not installed."""
    try:
        import jsonschema
        from jsonschema.exceptions import SchemaError
    except ImportError:
        raise ImportError(_MISSING_JSONSCHEMA) from None
    try:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        cls.check_schema(schema)
        error = jsonschema.exceptions.best_match(cls(schema).iter_errors(value))
    except SchemaError as exc:
        raise StructuredContentError(
            f"{who} declares an outputSchema that is not a valid JSON Schema: "
            f"{exc.message}") from None
    except Exception as exc:  # noqa: BLE001 - an unresolvable $ref and the like
        raise StructuredContentError(
            f"{who} declares an outputSchema that cannot be used: {exc}") from None
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        raise StructuredContentError(
            f"the structuredContent of {who} does not match its outputSchema at {where}: "
            f"{error.message}")

