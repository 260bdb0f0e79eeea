"""Completions (``completion/complete``): suggested values for a prompt's argument or a
resource template's variable, as the user types.

    @tools.completion("greet", "language")        # a prompt's name, or a template's URI
    def languages(value: str, arguments: dict) -> list[str]:
        return [name for name in ("python", "perl") if name.startswith(value)]

A completer is a function ``(value, arguments) -> values`` (``arguments``: what the client
already filled in, its ``context.arguments``), or a fixed list of values, of which those
starting with what was typed are offered. At most :data:`MAX_VALUES` values are sent, with
``total`` and ``hasMore`` saying how many there were.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Union

from ..errors import McpError
from ..protocol.codes import INVALID_PARAMS

#: the protocol's limit on the values of one completion answer
MAX_VALUES = 100

Completer = Union[Callable[[str, dict], Iterable[str]], Iterable[str]]


def reference_key(ref: Any) -> str:
    """The name a completion request's ``ref`` refers to (a prompt's name, a template's URI).
    Raises McpError -32602 for a ``ref`` that is neither."""
    if isinstance(ref, dict):
        if ref.get("type") == "ref/prompt" and isinstance(ref.get("name"), str):
            return ref["name"]
        if ref.get("type") == "ref/resource" and isinstance(ref.get("uri"), str):
            return ref["uri"]
    raise McpError(INVALID_PARAMS, "ref must be {type: ref/prompt, name} or "
                   "{type: ref/resource, uri}")


def complete(completer: Completer | None, argument: Any, context: Any) -> dict:
    """The answer to ``completion/complete`` for one argument. Raises McpError -32602 for an
    ``argument`` that is not ``{name, value}``."""
    if not (isinstance(argument, dict) and isinstance(argument.get("name"), str)
            and isinstance(argument.get("value", ""), str)):
        raise McpError(INVALID_PARAMS, "argument must be {name: string, value: string}")
    value = argument.get("value", "")
    filled = context.get("arguments") if isinstance(context, dict) else None
    if completer is None:
        values: list[str] = []
    elif callable(completer):
        values = [str(v) for v in completer(value, dict(filled or {}))]
    else:
        values = [str(v) for v in completer if str(v).startswith(value)]
    answer: dict[str, Any] = {"values": values[:MAX_VALUES]}
    if len(values) > MAX_VALUES:
        answer.update(total=len(values), hasMore=True)
    return {"completion": answer}
