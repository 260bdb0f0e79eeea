"""Calling the tools of a :class:`~raider_sync.serve.toolserver.ToolServer`.

:class:`ToolCalls` validates a call's arguments (pydantic, for a tool with a model; the
required fields and top-level types of a JSON schema otherwise: :func:`check_schema`), runs
the handler on a small pool of its own (threads end after half a second without work; a
handler may return a ``Future``, which is then awaited without a pool thread), and shapes what
it returns into a tool result. Invalid arguments and a handler's exception are ``isError``
results, never exceptions in the caller; a call fails with NotConnected once closed and
ToolTimeout at its bound (the handler itself cannot be interrupted and finishes unseen).
Nothing here blocks the caller.
"""
from __future__ import annotations

import functools
import json
import logging
import threading
from concurrent.futures import Future
from typing import Any, Callable

from pydantic import ValidationError

from ..client.results import ToolResult, text_result
from ..errors import McpError, NotConnected, ToolTimeout, UnknownTool
from ..protocol.codes import MISSING_CAPABILITY
from ..threads.futures import Deadlines, failed, resolved, then
from ..threads.workers import Workers
from .context import CONTEXT_PARAM, Context, InputRequired
from .registry import PROGRESS_PARAM, LocalTool

log = logging.getLogger("raider_sync.toolserver")


class ToolCalls:
    """The calls of the tool server ``name`` (``key``: its normalized name, which names the
    pool's threads ``raider-<key>-tool_<n>``), up to ``max_workers`` handlers at once."""

    def __init__(self, name: str, key: str, max_workers: int):
        self.name = name
        self.key = key
        self._max_workers = max_workers
        self._lock = threading.Lock()
        self._pool: Workers | None = None
        self._deadlines = Deadlines(key)
        self.closed = False

    def call_f(self, tool: LocalTool | None, name: str, arguments: dict | None, bound: float,
               on_progress: Callable | None, context: Context | None = None) -> Future:
        """A future of the result of calling ``tool`` (None: the server has no tool
        ``name``) with ``arguments``, failed with ToolTimeout after ``bound`` s (the
        handler's ``context`` is then marked cancelled). A handler that ends a round of the
        stateless era fails the future with InputRequired; one that asks the client for
        what it did not declare, with McpError -32021."""
        if self.closed:
            return failed(NotConnected(f"tool server {self.name!r} is closed"))
        if tool is None:
            return failed(UnknownTool(f"tool server {self.name!r} has no tool {name!r}"))
        if tool.wants_context and context is None:
            context = Context(on_progress=on_progress)
        try:
            call = self.prepare(tool, dict(arguments or {}), on_progress, context)
        except InvalidArguments as exc:
            return resolved(error_result(str(exc)))
        future = then(self._run(call, f"raider-{self.key}-tool"), as_result)
        self._deadlines.watch(future, bound, lambda: ToolTimeout(
            f"tool {name} timed out after {bound:g} s"))
        if context is not None:
            future.add_done_callback(functools.partial(_cancel_unless_answered, context))
        return future

    def close(self) -> bool:
        """Join the pool (queued calls are dropped); True the first time."""
        with self._lock:
            first = not self.closed
            self.closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        self._deadlines.close()
        return first

    def prepare(self, tool: LocalTool, arguments: dict,
                on_progress: Callable | None = None,
                context: Context | None = None) -> Callable[[], Any]:
        """The handler of ``tool`` bound to its checked ``arguments`` (and the ``progress``
        reporter, the ``context`` it takes): a callable that runs it. Raises
        InvalidArguments, whose message names the fields, for arguments that do not fit."""
        extra = {CONTEXT_PARAM: context} if context is not None and tool.wants_context else {}
        if tool.model is None:
            problems = check_schema(tool.input_schema, arguments)
            if problems:
                raise InvalidArguments(f"Invalid arguments for tool {tool.name}: {'; '.join(problems)}")
            return lambda: tool.handler(arguments, **extra)
        try:
            model = tool.model.model_validate(arguments)
        except ValidationError as exc:
            raise InvalidArguments(f"Invalid arguments for tool {tool.name}: "
                                    f"{describe_validation(exc)}") from None
        if tool.pass_model:
            return lambda: tool.handler(model, **extra)
        values = {k: getattr(model, k) for k in type(model).model_fields}
        if tool.wants_progress:
            values[PROGRESS_PARAM] = _progress_reporter(on_progress)
        values.update(extra)
        return lambda: tool.handler(**values)

    def _run(self, call: Callable[[], Any], name: str) -> Future:
        outer: Future = Future()

        def run() -> None:
            try:
                value = call()
            except InputRequired as exc:  # a round of the stateless era ends: not an error
                outer.set_exception(exc)
                return
            except McpError as exc:
                if exc.code != MISSING_CAPABILITY:
                    outer.set_result(handler_failure(exc))
                else:  # a question the client cannot answer: the protocol's error, not a result
                    outer.set_exception(exc)
                return
            except Exception as exc:  # noqa: BLE001 - a handler's failure is an error result
                outer.set_result(handler_failure(exc))
                return
            if isinstance(value, Future):
                value.add_done_callback(lambda f: _settle_from(outer, f))
            else:
                outer.set_result(value)

        with self._lock:
            if self._pool is None and not self.closed:  # never a new pool after close()
                self._pool = Workers(self._max_workers, name)
            pool = self._pool
        try:
            if pool is None:
                raise RuntimeError("closed")
            pool.submit(run)
        except RuntimeError:
            return failed(NotConnected(f"tool server {self.name!r} is closed"))
        return outer


class InvalidArguments(Exception):
    """A call's arguments do not fit its tool; the message names the fields."""


def error_result(text: str) -> dict:
    """An ``isError`` tool result carrying ``text``."""
    return ToolResult({"content": [{"type": "text", "text": text}], "isError": True})


def handler_failure(exc: BaseException) -> dict:
    """The ``isError`` result of a handler that raised ``exc``."""
    log.debug("tool handler failed", exc_info=exc)
    return error_result(f"Error: {exc}" if str(exc) else f"Error: {type(exc).__name__}")


def as_result(value: Any) -> dict:
    """A handler's return value as a tool result dict (a string, content blocks, a
    ``(text, is_error)`` pair, a result dict, None or anything JSON can hold)."""
    return ToolResult(_result_of(value))


def _result_of(value: Any) -> dict:
    if isinstance(value, dict) and ("content" in value or "isError" in value):
        return value
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], bool):
        return text_result(str(value[0]), value[1])
    if isinstance(value, str):
        return text_result(value)
    if isinstance(value, list) and all(isinstance(b, dict) and "type" in b for b in value):
        return {"content": value}
    if value is None:
        return {"content": []}
    return text_result(json.dumps(value, default=str))


def _progress_reporter(on_progress: Callable | None) -> Callable[..., None]:
    """What a handler calls to report progress; errors of the receiver are logged."""
    def report(progress: float, total: float | None = None, message: str | None = None) -> None:
        if on_progress is None:
            return
        try:
            on_progress(progress, total, message)
        except Exception:  # noqa: BLE001 - the tool's work goes on
            log.exception("a progress callback failed")
    return report


def _settle_from(outer: Future, inner: Future) -> None:
    if inner.cancelled():
        outer.set_result(error_result("Error: the call was cancelled"))
    elif inner.exception() is not None:
        outer.set_result(error_result(f"Error: {inner.exception()}"))
    else:
        outer.set_result(inner.result())


def _cancel_unless_answered(context: Context, future: Future) -> None:
    """A call that did not end with its handler's answer (timed out) cancels its context."""
    if future.cancelled() or future.exception() is not None:
        context.cancel()


def describe_validation(exc: ValidationError) -> str:
    """A pydantic error as ``field: message; field: message``."""
    parts = []
    for error in exc.errors():
        loc = ".".join(str(p) for p in error["loc"]) or "(arguments)"
        parts.append(f"{loc}: {error['msg']}")
    return "; ".join(parts)


_JSON_TYPES: dict[str, tuple] = {"string": (str,), "integer": (int,), "number": (int, float),
                                 "boolean": (bool,), "object": (dict,), "array": (list,),
                                 "null": (type(None),)}


def check_schema(schema: dict, arguments: dict) -> list[str]:
    """The problems of ``arguments`` against a JSON schema's required fields and top-level
    property types (enough to name the field; a full validator is not a dependency)."""
    problems = []
    for name in schema.get("required", []):
        if name not in arguments:
            problems.append(f"{name}: Field required")
    properties = schema.get("properties", {})
    for name, value in arguments.items():
        spec = properties.get(name)
        if spec is None:
            if schema.get("additionalProperties") is False:
                problems.append(f"{name}: unknown field")
            continue
        kinds = spec.get("type")
        kinds = [kinds] if isinstance(kinds, str) else kinds
        if kinds and not any(_is_type(value, k) for k in kinds):
            problems.append(f"{name}: expected {' or '.join(kinds)}, got {type(value).__name__}")
        elif "enum" in spec and value not in spec["enum"]:
            problems.append(f"{name}: expected one of {spec['enum']}")
    return problems


def _is_type(value: Any, kind: str) -> bool:
    if kind in ("integer", "number") and isinstance(value, bool):
        return False
    return isinstance(value, _JSON_TYPES.get(kind, (object,)))
