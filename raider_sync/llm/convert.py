"""MCP tools as model API tool definitions, and a model's tool calls back to the tools.

    tools = hub.tools()
    to_openai(tools)                      # Chat Completions "tools", strict where possible
    to_openai(tools, api="responses")     # the Responses API's function tools
    to_anthropic(tools)                   # Anthropic Messages "tools"
    caller = ToolCaller(hub, tools)
    result = caller.call(name, arguments) # the model's name and arguments (dict or JSON text)

A tool whose schema is past the bounds of :func:`~raider_sync.llm.schema.check_bounds` is
left out (logged as a warning on ``raider_sync.llm``); the others are converted. What strict
mode changed in a schema is logged at debug level, why a tool is not strict at info level, or
as a warning when the reason is one of OpenAI's documented limits (see
:mod:`raider_sync.llm.limits`).
"""
from __future__ import annotations

import json
import logging
import threading
from concurrent.futures import Future
from typing import Any, Iterable

from ..client.budget import budget_of
from ..client.results import ToolResult
from ..errors import InvalidArgument, RaiderError, SchemaRefused, ToolError, UnknownTool
from ..threads.futures import failed, resolved, wait_bounded
from ..threads.timeouts import seconds
from .names import ToolNames
from .nulls import drop_added_nulls
from .schema import check_bounds, loose_schema, strict_schema
from .search import SearchDisclosure

log = logging.getLogger("raider_sync.llm")

_said: set[tuple[str, str]] = set()
_said_lock = threading.Lock()
_SAY_AT_MOST = 2000  # distinct messages remembered, so a long-running program cannot grow it

#: how a ToolCaller shows the tools to a model (see ToolCaller)
DISCLOSURES = ("all", "search", "auto")
#: the context a model has, in tokens, unless the caller says (for disclosure="auto")
DEFAULT_CONTEXT_TOKENS = 200_000


def _say_once(level: int, tool: str, message: str) -> None:
    """Log ``message`` about ``tool`` once per process: a loop converts the same tools on
    every turn."""
    with _said_lock:
        if (tool, message) in _said:
            return
        if len(_said) < _SAY_AT_MOST:
            _said.add((tool, message))
    log.log(level, "tool %s: %s", tool, message)


def _tool_list(tools: Any) -> list[dict]:
    if isinstance(tools, (str, bytes, dict)) or not isinstance(tools, Iterable):
        raise TypeError(f"tools must be a list of tool dicts (hub.tools()), not {type(tools).__name__}")
    listed = list(tools)
    for i, tool in enumerate(listed):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            raise TypeError(f"tools[{i}] is not a tool: a dict with a string 'name' is needed")
    return listed


def _usable(tools: list[dict]) -> Iterable[tuple[dict, dict]]:
    """``(tool, input schema)`` of the tools a model may be given: duplicates and schemas
    past the bounds are left out, with a warning."""
    seen: set[str] = set()
    for tool in tools:
        name = tool["name"]
        if name in seen:
            _say_once(logging.WARNING, name, "listed twice: the second one is left out")
            continue
        seen.add(name)
        schema = tool.get("inputSchema")
        if schema is None:
            schema = {"type": "object", "properties": {}}
        try:
            check_bounds(schema)
        except SchemaRefused as exc:
            _say_once(logging.WARNING, name, f"left out: {exc}")
            continue
        yield tool, schema


def _description(tool: dict) -> str:
    description = tool.get("description") or tool.get("title") or ""
    return description if isinstance(description, str) else str(description)


def to_openai(tools: Iterable[dict], *, strict: bool = True, api: str = "chat") -> list[dict]:
    """OpenAI tool definitions for ``tools`` (MCP tool dicts, as ``hub.tools()`` gives).

    ``api="chat"`` gives Chat Completions' ``{"type": "function", "function": {...}}``,
    ``api="responses"`` the Responses API's ``{"type": "function", "name": ...}``. Names are
    mapped as :class:`~raider_sync.llm.ToolNames` does. With ``strict`` (the default) each
    tool whose schema strict mode can express is sent with ``"strict": true`` (see
    :func:`~raider_sync.llm.strict_schema`); the others, and all with ``strict=False``, are
    sent as they are, ``"strict": false``. Raises TypeError for a list that is not of tools
    and ValueError for an unknown ``api``.
    """
    if api not in ("chat", "responses"):
        raise ValueError(f"api must be 'chat' or 'responses', not {api!r}")
    listed = _tool_list(tools)
    names = ToolNames(t["name"] for t in listed)
    definitions = []
    for tool, schema in _usable(listed):
        if strict:
            converted = strict_schema(schema)
            parameters, is_strict = converted.schema, converted.strict
            # past a limit, OpenAI would have refused the whole request: worth a warning
            level = (logging.DEBUG if is_strict else
                     logging.WARNING if converted.limits else logging.INFO)
            for note in converted.notes:
                _say_once(level, tool["name"], note)
        else:
            notes: list[str] = []
            parameters, is_strict = loose_schema(schema, notes), False
            for note in notes:
                _say_once(logging.INFO, tool["name"], note)
        function: dict[str, Any] = {"name": names.model_name(tool["name"])}
        if _description(tool):
            function["description"] = _description(tool)
        function["parameters"] = parameters
        function["strict"] = is_strict
        definitions.append({"type": "function", "function": function} if api == "chat"
                           else {"type": "function", **function})
    return definitions


def to_anthropic(tools: Iterable[dict]) -> list[dict]:
    """Anthropic tool definitions (``{"name", "description", "input_schema"}``) for
    ``tools``. The input schema is the tool's own, with an object root; a union at the root
    (which the Messages API refuses) is flattened into one object (see
    :func:`~raider_sync.llm.schema.loose_schema`). Raises TypeError for a list that is not
    of tools."""
    listed = _tool_list(tools)
    names = ToolNames(t["name"] for t in listed)
    definitions = []
    for tool, schema in _usable(listed):
        definition: dict[str, Any] = {"name": names.model_name(tool["name"])}
        if _description(tool):
            definition["description"] = _description(tool)
        definition["input_schema"] = _anthropic_schema(schema, tool["name"])
        definitions.append(definition)
    return definitions


def _anthropic_schema(schema: dict, name: str) -> dict:
    notes: list[str] = []
    converted = loose_schema(schema, notes)
    for note in notes:
        _say_once(logging.INFO, name, note)
    return converted


class ToolCaller:
    """Calls the tools a model asks for, on ``target``: an McpHub, an McpServer or a
    ToolServer (anything with ``call_tool_f``).

    ``tools`` is the list the model's definitions were made from (default: the target's
    tools now, ``hub.tools()`` or ``server.list_tools()``). The caller maps the model's names
    back to the tools' own, parses arguments given as JSON text, and drops the nulls strict
    mode made the model send for optional arguments.

    What goes wrong is an error result the model can read, so a tool-use loop can answer
    every tool call: an unknown name, arguments that are not a JSON object, and a call that
    fails (ToolTimeout, NotConnected, McpError...). With ``raise_errors=True`` those raise
    instead: UnknownTool, ToolError (carrying the error result), or the call's own error.
    Thread-safe: calls may run in parallel.

    ``disclosure="search"`` gives the model two tools in place of every definition, one that
    searches the tools by words and one that loads the definitions it found, which are given
    from then on (see :mod:`raider_sync.llm.search`); ``"auto"`` does so when the definitions
    would take more than a tenth of ``context_tokens`` (:meth:`ToolBudget.search_pays`).
    Raises ValueError for another disclosure, or for a tool named as a search tool.
    """

    def __init__(self, target: Any, tools: Iterable[dict] | None = None, *,
                 timeout: float | None = None, raise_errors: bool = False,
                 disclosure: str = "all", context_tokens: int = DEFAULT_CONTEXT_TOKENS):
        if not callable(getattr(target, "call_tool_f", None)):
            raise TypeError(f"target must be an McpHub, McpServer or ToolServer, "
                            f"not {type(target).__name__}")
        if disclosure not in DISCLOSURES:
            raise ValueError(f"disclosure must be one of {', '.join(DISCLOSURES)}, not "
                             f"{disclosure!r}")
        self.target = target
        if tools is None:
            tools = target.tools() if callable(getattr(target, "tools", None)) else target.list_tools()
        self.tools = _tool_list(tools)
        self.names = ToolNames(t["name"] for t in self.tools)
        self.timeout = None if timeout is None else seconds(timeout, 0.0, method="ToolCaller")
        self.raise_errors = raise_errors
        self._schemas = {t["name"]: t.get("inputSchema") for t in self.tools}
        if disclosure == "auto":
            budget = budget_of(self.tools)
            disclosure = "search" if budget.search_pays(context_tokens) else "all"
        #: "all" (every definition) or "search" (two search tools, then what was loaded)
        self.disclosure = disclosure
        self._search = SearchDisclosure(self.tools, self.names) if disclosure == "search" else None

    def __repr__(self) -> str:
        return f"<ToolCaller {len(self.tools)} tools on {self.target!r}>"

    @property
    def shown(self) -> list[dict]:
        """The tool definitions the model is given now: every tool, or with
        ``disclosure="search"`` the two search tools and the tools the model loaded."""
        return self.tools if self._search is None else self._search.definitions()

    def to_openai(self, *, strict: bool = True, api: str = "chat") -> list[dict]:
        """:func:`to_openai` of the tools the model is given now (:attr:`shown`)."""
        return to_openai(self.shown, strict=strict, api=api)

    def to_anthropic(self) -> list[dict]:
        """:func:`to_anthropic` of the tools the model is given now (:attr:`shown`)."""
        return to_anthropic(self.shown)

    def resolve(self, name: str, arguments: Any = None) -> tuple[str, dict]:
        """The tool's own name and the arguments to call it with, for the model's ``name``
        and ``arguments`` (a dict, JSON text, or None). Raises UnknownTool for a name the
        model was not given, ToolError for arguments that are not a JSON object."""
        if name not in self.names:
            known = ", ".join(m for _, m in self.names.items()[:20]) or "none"
            raise UnknownTool(f"no tool named {name!r} was given to the model (tools: {known})")
        original = self.names.original(name)
        if isinstance(arguments, (str, bytes, bytearray)):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except ValueError as exc:
                raise ToolError(_error(f"the arguments for {name} are not valid JSON: {exc}",
                                       original)) from None
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise ToolError(_error(f"the arguments for {name} must be a JSON object, not "
                                   f"{type(arguments).__name__}", original))
        return original, drop_added_nulls(arguments, self._schemas.get(original))

    def call_f(self, name: str, arguments: Any = None, *,
               timeout: float | None = None) -> Future:
        """A future of the :class:`~raider_sync.ToolResult` of the model's call of
        ``name`` with ``arguments`` (see the class doc for what an error becomes).
        ``timeout`` (s) defaults to the caller's, else the target's call timeout; a bad one
        is the program's error, not the model's: the future fails with InvalidArgument."""
        try:
            bound = self._timeout(timeout, "ToolCaller.call_f")
        except InvalidArgument as exc:
            return failed(exc)
        if self._search is not None and self._search.handles(name):
            if isinstance(arguments, (str, bytes, bytearray)):
                try:
                    arguments = json.loads(arguments) if arguments.strip() else {}
                except ValueError:
                    arguments = None
            return resolved(self._search.answer(name, arguments if isinstance(arguments, dict)
                                                else {}))
        try:
            original, args = self.resolve(name, arguments)
        except (UnknownTool, ToolError) as exc:
            return self._recovered(exc, name)
        try:
            inner = self.target.call_tool_f(original, args, timeout=bound, raise_on_error=False)
        except RaiderError as exc:
            return self._recovered(exc, name)
        outer: Future = Future()

        def settle(done: Future) -> None:
            if done.cancelled():
                outer.cancel()
                return
            error = done.exception()
            if error is None:
                outer.set_result(done.result())
            elif isinstance(error, RaiderError) and not self.raise_errors:
                outer.set_result(_as_error_result(error, original))
            else:
                outer.set_exception(error)

        inner.add_done_callback(settle)
        outer.add_done_callback(lambda done: inner.cancel() if done.cancelled() else None)
        return outer

    def call(self, name: str, arguments: Any = None, *, timeout: float | None = None) -> ToolResult:
        """Blocking :meth:`call_f`: the result, or (``raise_errors``) the error raised."""
        bound = self._timeout(timeout, "ToolCaller.call")
        future = self.call_f(name, arguments, timeout=bound)
        if bound is None:
            bound = getattr(self.target, "call_timeout", None) or 600.0
        return wait_bounded(future, bound)

    def _timeout(self, timeout: Any, method: str) -> float | None:
        """``timeout`` checked (see :func:`raider_sync.threads.timeouts.seconds`); None: the caller's,
        which may be None too (then the target's call timeout)."""
        return self.timeout if timeout is None else seconds(timeout, 0.0, method=method)

    def _recovered(self, exc: RaiderError, name: str) -> Future:
        if self.raise_errors:
            future: Future = Future()
            future.set_exception(exc)
            return future
        return resolved(_as_error_result(exc, name))


def _error(text: str, tool: str | None) -> ToolResult:
    return ToolResult({"content": [{"type": "text", "text": text}], "isError": True}, tool=tool)


def _as_error_result(exc: BaseException, tool: str) -> ToolResult:
    if isinstance(exc, ToolError) and isinstance(exc.result, dict):
        return exc.result if isinstance(exc.result, ToolResult) else ToolResult(exc.result, tool=tool)
    return _error(f"Calling the tool failed: {exc}", tool)
