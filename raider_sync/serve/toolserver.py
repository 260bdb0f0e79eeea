"""ToolServer: local tools (and resources and prompts) with the face of an McpServer.

    tools = ToolServer("local")

    @tools.tool()
    def add(a: int, b: int) -> str:
        "Add two numbers."
        return str(a + b)

    tools.call_tool("add", {"a": 1, "b": "x"})   # {"content": [...], "isError": True}: names "b"
    tools.serve_stdio()                          # a real MCP server over stdin/stdout

An application treats it like a connected :class:`McpServer`: ``status`` is "connected",
``list_tools``/``call_tool``/``call_tool_f``/``tool_names`` answer alike. Tool names are the
plain names given here (an application's own tools, as Claude Code's Bash or ReadMcpResourceTool,
are not prefixed). Arguments are validated before a handler runs; invalid arguments and a
handler's exception are error results, never exceptions in the caller.
"""
from __future__ import annotations

import base64
import inspect
import json
import logging
import threading
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from pydantic import BaseModel, ValidationError, create_model

from ..threads.timeouts import seconds
from ..config import normalize_name
from ..errors import McpError, NotConnected, RaiderError, ToolTimeout, UnknownTool
from ..protocol.codes import INVALID_PARAMS, RESOURCE_NOT_FOUND
from ..threads.futures import Deadlines, failed, resolved, then, wait_bounded
from ..threads.workers import Workers
from ..client.launch import DEFAULT_CALL_TIMEOUT_S
from ..client.results import ToolResult, text_result

log = logging.getLogger("raider_sync.toolserver")

#: a handler parameter of this name is not an argument: it receives a progress reporter
PROGRESS_PARAM = "progress"



@dataclass
class LocalTool:
    """One registered tool: its MCP definition and how to call its handler."""
    name: str
    description: str
    input_schema: dict
    handler: Callable[..., Any]
    model: Optional[type[BaseModel]] = None  # validates and builds the handler's argument(s)
    pass_model: bool = False                  # handler(model) rather than handler(**fields)
    annotations: Optional[dict] = None

    @property
    def wants_progress(self) -> bool:
        """The handler takes a ``progress(progress, total=None, message=None)`` reporter."""
        try:
            return PROGRESS_PARAM in inspect.signature(self.handler).parameters
        except (TypeError, ValueError):
            return False

    def definition(self) -> dict:
        tool = {"name": self.name, "description": self.description, "inputSchema": self.input_schema}
        if self.annotations:
            tool["annotations"] = dict(self.annotations)
        return tool


@dataclass
class LocalResource:
    uri: str
    name: str
    read: Callable[[], Any]
    mime_type: Optional[str] = None
    description: Optional[str] = None

    def definition(self) -> dict:
        item = {"uri": self.uri, "name": self.name}
        if self.mime_type:
            item["mimeType"] = self.mime_type
        if self.description:
            item["description"] = self.description
        return item


@dataclass
class LocalPrompt:
    name: str
    render: Callable[..., Any]
    description: str = ""
    arguments: list = field(default_factory=list)

    def definition(self) -> dict:
        return {"name": self.name, "description": self.description, "arguments": list(self.arguments)}


class ToolServer:
    """In-process tools with the methods of a connected McpServer.

    Handlers run on a small pool owned by this object (``max_workers``), whose threads end
    after half a second without work; a handler may also return a ``Future``, which is then
    awaited without taking a pool thread. :meth:`close` joins the pool.
    ``on_tools_changed(server)`` is told when tools are added or removed.
    """

    transport = "local"

    def __init__(self, name: str, *, instructions: str | None = None, version: str = "0.1.0",
                 max_workers: int = 8, call_timeout: float = DEFAULT_CALL_TIMEOUT_S):
        self.name = name
        self.key = normalize_name(name)
        self.instructions = instructions
        self.version = version
        self.call_timeout = seconds(call_timeout, DEFAULT_CALL_TIMEOUT_S, "call_timeout",
                                    "ToolServer")
        self.server_info = {"name": name, "version": version}
        self.warnings: list[str] = []
        self.on_tools_changed: Callable[["ToolServer"], None] | None = None
        #: called once when the tool server is closed (BashTools closes its shells then)
        self.on_close: Callable[[], None] | None = None
        self._listeners: list[Callable[["ToolServer"], None]] = []
        self._resource_listeners: list[Callable[[str], None]] = []
        self._tools: dict[str, LocalTool] = {}
        self._resources: dict[str, LocalResource] = {}
        self._prompts: dict[str, LocalPrompt] = {}
        self._lock = threading.Lock()
        self._max_workers = max_workers
        self._pool: Workers | None = None
        self._deadlines = Deadlines(self.key)
        self._closed = False

    def __repr__(self) -> str:
        return f"<ToolServer {self.name!r} tools={self.tool_names}>"

    def _repr_html_(self) -> str:
        from ..client.notebook import server_html  # the Jupyter module, only in Jupyter
        return server_html(self)

    def __enter__(self) -> "ToolServer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- the McpServer face --------------------------------------------------------------

    @property
    def status(self) -> str:
        return "stopped" if self._closed else "connected"

    reason = None
    pid = None
    protocol_version = None

    @property
    def tool_names(self) -> list[str]:
        return list(self._tools)

    def original_name(self, name: str) -> str | None:
        return name if name in self._tools else None

    def list_tools_f(self) -> Future:
        return resolved(self.list_tools())

    def list_tools(self, timeout: float | None = None) -> list[dict]:
        """The tool definitions: name, description, inputSchema (copies). Nothing waits:
        ``timeout`` is only checked, as every method's is."""
        seconds(timeout, self.call_timeout, method="ToolServer.list_tools")
        return [tool.definition() for tool in list(self._tools.values())]

    def start_f(self) -> Future:
        return resolved(self)

    def initialize(self, timeout: float | None = None) -> "ToolServer":
        seconds(timeout, self.call_timeout, method="ToolServer.initialize")
        return self

    def stop(self) -> None:
        self.close()

    # -- registration --------------------------------------------------------------------

    def tool(self, name: str | None = None, *, description: str | None = None,
             input_model: type[BaseModel] | None = None, input_schema: dict | None = None,
             annotations: dict | None = None) -> Callable:
        """Decorator form of :meth:`add_tool`; the function's name and docstring are defaults."""
        def register(fn: Callable) -> Callable:
            self.add_tool(name or fn.__name__, fn, description=description,
                          input_model=input_model, input_schema=input_schema,
                          annotations=annotations)
            return fn
        return register

    def add_tool(self, name: str, handler: Callable, *, description: str | None = None,
                 input_model: type[BaseModel] | None = None, input_schema: dict | None = None,
                 annotations: dict | None = None) -> None:
        """Register (or replace) a tool.

        The input schema comes from ``input_model`` (the handler gets the model instance),
        else from ``input_schema`` (a JSON schema; the handler gets the argument dict, checked
        for required fields and top-level types), else from the handler's signature (the
        handler gets keyword arguments validated by pydantic).
        """
        description = description if description is not None else inspect.getdoc(handler) or ""
        if input_model is not None:
            tool = LocalTool(name, description, _schema_of(input_model), handler, input_model,
                             pass_model=True, annotations=annotations)
        elif input_schema is not None:
            tool = LocalTool(name, description, dict(input_schema), handler, None,
                             annotations=annotations)
        else:
            model = _model_from_signature(name, handler)
            tool = LocalTool(name, description, _schema_of(model), handler, model,
                             annotations=annotations)
        with self._lock:
            self._tools[name] = tool
        self._tools_changed()

    def remove_tool(self, name: str) -> None:
        with self._lock:
            removed = self._tools.pop(name, None)
        if removed is not None:
            self._tools_changed()

    def add_resource(self, uri: str, read: Callable[[], Any], *, name: str | None = None,
                     mime_type: str | None = "text/plain", description: str | None = None) -> None:
        """Offer a resource; ``read()`` returns its text (str) or bytes (sent as a blob)."""
        self._resources[uri] = LocalResource(uri, name or uri, read, mime_type, description)

    def resource(self, uri: str, **kw) -> Callable:
        def register(fn: Callable) -> Callable:
            kw.setdefault("description", inspect.getdoc(fn))
            self.add_resource(uri, fn, name=kw.pop("name", fn.__name__), **kw)
            return fn
        return register

    def add_prompt(self, name: str, render: Callable[..., Any], *, description: str | None = None) -> None:
        """Offer a prompt; ``render(**arguments)`` returns its text or a list of messages."""
        params = inspect.signature(render).parameters.values()
        arguments = [{"name": p.name, "required": p.default is inspect.Parameter.empty}
                     for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        self._prompts[name] = LocalPrompt(name, render, description or inspect.getdoc(render) or "",
                                          arguments)

    def prompt(self, name: str | None = None, **kw) -> Callable:
        def register(fn: Callable) -> Callable:
            self.add_prompt(name or fn.__name__, fn, **kw)
            return fn
        return register

    # -- calls ---------------------------------------------------------------------------

    def call_tool_f(self, name: str, arguments: dict | None = None, *,
                    timeout: float | None = None, on_progress=None,
                    raise_on_error: bool = False) -> Future:
        """A future of the tool's result dict. Fails with UnknownTool, NotConnected after
        close, or ToolTimeout once ``timeout`` s (default :attr:`call_timeout`) pass; the
        handler itself cannot be interrupted and finishes unseen. Bad arguments and handler
        exceptions are ``isError`` results (ToolError when ``raise_on_error``).
        ``on_progress(progress, total, message)`` receives what a handler with a ``progress``
        parameter reports."""
        try:
            bound = seconds(timeout, self.call_timeout, method="ToolServer.call_tool_f")
        except RaiderError as exc:
            return failed(exc)
        future = self._call_tool_f(name, arguments, bound, on_progress)
        return then(future, ToolResult.raise_for_error) if raise_on_error else future

    def _call_tool_f(self, name: str, arguments: dict | None, bound: float,
                     on_progress) -> Future:
        if self._closed:
            return failed(NotConnected(f"tool server {self.name!r} is closed"))
        tool = self._tools.get(name)
        if tool is None:
            return failed(UnknownTool(f"tool server {self.name!r} has no tool {name!r}"))
        try:
            call = self._prepare(tool, dict(arguments or {}), on_progress)
        except _InvalidArguments as exc:
            return resolved(error_result(str(exc)))
        future = then(self._run(call, f"raider-{self.key}-tool"), _as_result)
        self._deadlines.watch(future, bound, lambda: ToolTimeout(
            f"tool {name} timed out after {bound:g} s"))
        return future

    def call_tool(self, name: str, arguments: dict | None = None, *,
                  timeout: float | None = None, on_progress=None,
                  raise_on_error: bool = False) -> ToolResult:
        """Blocking :meth:`call_tool_f`. Raises ToolTimeout after ``timeout`` s (default
        :attr:`call_timeout`); the handler itself cannot be interrupted."""
        bound = seconds(timeout, self.call_timeout, method="ToolServer.call_tool")
        return wait_bounded(self.call_tool_f(name, arguments, timeout=bound,
                                             on_progress=on_progress,
                                             raise_on_error=raise_on_error), bound)

    def _prepare(self, tool: LocalTool, arguments: dict,
                 on_progress: Callable | None = None) -> Callable[[], Any]:
        if tool.model is None:
            problems = check_schema(tool.input_schema, arguments)
            if problems:
                raise _InvalidArguments(f"Invalid arguments for tool {tool.name}: {'; '.join(problems)}")
            return lambda: tool.handler(arguments)
        try:
            model = tool.model.model_validate(arguments)
        except ValidationError as exc:
            raise _InvalidArguments(f"Invalid arguments for tool {tool.name}: "
                                    f"{describe_validation(exc)}") from None
        if tool.pass_model:
            return lambda: tool.handler(model)
        values = {k: getattr(model, k) for k in type(model).model_fields}
        if tool.wants_progress:
            values[PROGRESS_PARAM] = _progress_reporter(on_progress)
        return lambda: tool.handler(**values)

    def _run(self, call: Callable[[], Any], name: str) -> Future:
        outer: Future = Future()

        def run() -> None:
            try:
                value = call()
            except Exception as exc:  # noqa: BLE001 - a handler's failure is an error result
                log.debug("tool handler failed", exc_info=True)
                outer.set_result(error_result(f"Error: {exc}" if str(exc) else
                                              f"Error: {type(exc).__name__}"))
                return
            if isinstance(value, Future):
                value.add_done_callback(lambda f: _settle_from(outer, f))
            else:
                outer.set_result(value)

        with self._lock:
            if self._pool is None and not self._closed:  # never a new pool after close()
                self._pool = Workers(self._max_workers, name)
            pool = self._pool
        try:
            if pool is None:
                raise RuntimeError("closed")
            pool.submit(run)
        except RuntimeError:
            return failed(NotConnected(f"tool server {self.name!r} is closed"))
        return outer

    # -- resources and prompts -----------------------------------------------------------

    @property
    def has_resources(self) -> bool:
        return bool(self._resources)

    @property
    def has_prompts(self) -> bool:
        return bool(self._prompts)

    def list_resources(self, timeout: float | None = None) -> list[dict]:
        seconds(timeout, self.call_timeout, method="ToolServer.list_resources")
        return [r.definition() for r in list(self._resources.values())]

    def list_resources_f(self) -> Future:
        return resolved(self.list_resources())

    def read_resource(self, uri: str, *, timeout: float | None = None) -> list[dict]:
        """The contents of a resource: ``[{uri, mimeType, text | blob}]``. Raises McpError
        -32002 for an unknown uri."""
        seconds(timeout, self.call_timeout, method="ToolServer.read_resource")
        resource = self._resources.get(uri)
        if resource is None:
            raise McpError(RESOURCE_NOT_FOUND, f"Resource not found: {uri}")
        value = resource.read()
        item: dict[str, Any] = {"uri": uri}
        if resource.mime_type:
            item["mimeType"] = resource.mime_type
        if isinstance(value, (bytes, bytearray)):
            item["blob"] = base64.b64encode(bytes(value)).decode("ascii")
        else:
            item["text"] = str(value)
        return [item]

    def read_resource_f(self, uri: str, *, timeout: float | None = None) -> Future:
        try:
            seconds(timeout, self.call_timeout, method="ToolServer.read_resource_f")
            return resolved(self.read_resource(uri))
        except Exception as exc:  # noqa: BLE001
            return failed(exc)

    def list_prompts(self, timeout: float | None = None) -> list[dict]:
        seconds(timeout, self.call_timeout, method="ToolServer.list_prompts")
        return [p.definition() for p in list(self._prompts.values())]

    def list_prompts_f(self) -> Future:
        return resolved(self.list_prompts())

    def get_prompt(self, name: str, arguments: dict | None = None, *,
                   timeout: float | None = None) -> dict:
        seconds(timeout, self.call_timeout, method="ToolServer.get_prompt")
        prompt = self._prompts.get(name)
        if prompt is None:
            raise McpError(INVALID_PARAMS, f"Unknown prompt: {name}")
        try:
            value = prompt.render(**(arguments or {}))
        except TypeError as exc:
            raise McpError(INVALID_PARAMS, f"Invalid arguments for prompt {name}: {exc}") from None
        if isinstance(value, str):
            value = [{"role": "user", "content": {"type": "text", "text": value}}]
        return {"description": prompt.description, "messages": list(value)}

    def get_prompt_f(self, name: str, arguments: dict | None = None, **kw) -> Future:
        try:
            seconds(kw.get("timeout"), self.call_timeout, method="ToolServer.get_prompt_f")
            return resolved(self.get_prompt(name, arguments))
        except Exception as exc:  # noqa: BLE001
            return failed(exc)

    # -- serving and closing -------------------------------------------------------------

    def in_process_client(self, **options: Any) -> Any:
        """A client of these tools in this process (what :meth:`McpServer.in_process
        <raider_sync.McpServer.in_process>` returns): an :class:`~raider_sync.McpServer`
        whose messages pass through queues as JSON. ``options`` are McpServer's."""
        from .inprocess import InProcessServer
        return InProcessServer(self, **options)

    def serve_stdio(self, stdin=None, stdout=None) -> None:
        """Serve these tools as an MCP server over stdio until stdin ends. Blocks.

        While serving, file descriptor 1 is pointed at stderr, so a handler (or a child
        process) that prints cannot corrupt the protocol stream.
        """
        from .serving import serve_stdio
        serve_stdio(self, stdin=stdin, stdout=stdout)

    def close(self) -> None:
        """Join the handler pool, then call :attr:`on_close` (once): whoever closes the tool
        server (an McpHub it was mounted on) closes what stands behind it. Safe to call twice."""
        with self._lock:
            first = not self._closed
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        self._deadlines.close()
        if first and self.on_close is not None:
            self.on_close()

    def add_listener(self, callback: Callable[["ToolServer"], None]) -> None:
        """Also tell ``callback(server)`` when tools change (used when serving)."""
        self._listeners.append(callback)

    def remove_listener(self, callback: Callable[["ToolServer"], None]) -> None:
        if callback in self._listeners:
            self._listeners.remove(callback)

    def resource_updated(self, uri: str) -> None:
        """Announce that the resource ``uri`` changed: served clients listening to it (a
        ``subscriptions/listen`` of the stateless era, over stdio or HTTP) get
        ``notifications/resources/updated``. Does not block."""
        for callback in list(self._resource_listeners):
            try:
                callback(uri)
            except Exception:  # noqa: BLE001
                log.exception("a resource-updated callback failed")

    def add_resource_listener(self, callback: Callable[[str], None]) -> None:
        """Also tell ``callback(uri)`` when :meth:`resource_updated` is called (serving)."""
        self._resource_listeners.append(callback)

    def remove_resource_listener(self, callback: Callable[[str], None]) -> None:
        if callback in self._resource_listeners:
            self._resource_listeners.remove(callback)

    def _tools_changed(self) -> None:
        for callback in [self.on_tools_changed, *self._listeners]:
            if callback is None:
                continue
            try:
                callback(self)
            except Exception:  # noqa: BLE001
                log.exception("a tools-changed callback failed")


class _InvalidArguments(Exception):
    pass


def error_result(text: str) -> dict:
    """An ``isError`` tool result carrying ``text``."""
    return ToolResult({"content": [{"type": "text", "text": text}], "isError": True})


def _as_result(value: Any) -> dict:
    """A handler's return value as a tool result dict."""
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


def _model_from_signature(name: str, fn: Callable) -> type[BaseModel]:
    fields: dict[str, Any] = {}
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD) or param.name == PROGRESS_PARAM:
            continue
        annotation = Any if param.annotation is inspect.Parameter.empty else param.annotation
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (annotation, default)
    return create_model(f"{normalize_name(name)}_arguments", **fields)


def _schema_of(model: type[BaseModel]) -> dict:
    schema = model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        if isinstance(prop, dict):
            prop.pop("title", None)
    schema.setdefault("properties", {})
    return schema


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
