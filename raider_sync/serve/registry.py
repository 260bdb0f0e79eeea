"""What a :class:`~raider_sync.serve.toolserver.ToolServer` offers: tools, resources, prompts
(and skills: :mod:`.skills_served`).

:class:`Registry` holds them by name (a resource by URI). A tool is registered with its MCP
definition, the input schema made from a pydantic model, a JSON schema or the handler's
signature (:func:`local_tool`); a resource and a prompt know how they are read and rendered
(:meth:`LocalResource.contents`, :meth:`LocalPrompt.get`), raising McpError with the MCP code
for what the client got wrong. Registering never blocks and is thread-safe; the owner is told
when the tools change. Calling a tool is :mod:`.tool_calls`'.
"""
from __future__ import annotations

import inspect
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from pydantic import BaseModel, create_model

from ..config import normalize_name
from ..errors import McpError
from ..protocol.codes import INVALID_PARAMS, RESOURCE_NOT_FOUND
from .completions import Completer, complete, reference_key
from .context import CONTEXT_PARAM, Context, takes_context
from .skills_served import ServedSkills
from .templates import LocalTemplate, content_item

#: a handler parameter of this name is not an argument: it receives a progress reporter
PROGRESS_PARAM = "progress"
#: how a tool may run as a task (the stateless era's tasks extension): None, never
TASK_SUPPORT = (None, "optional", "required")
#: when a task begins: as the call arrives ("call"), or when the handler says so ("handler")
TASK_BEGINS = ("call", "handler")


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
    #: None: never a task; "optional": a task for a client that declares the tasks
    #: extension; "required": only ever a task (-32021 for a client that does not declare it)
    task: Optional[str] = None
    #: "call": the task begins before the handler runs; "handler": when the handler calls
    #: ``ctx.begin_task()`` (its questions before that are input_required rounds)
    task_begins: str = "call"

    def __post_init__(self) -> None:
        if self.task not in TASK_SUPPORT:
            raise ValueError(f"tool {self.name!r}: task must be None, 'optional' or "
                             f"'required', not {self.task!r}")
        if self.task_begins not in TASK_BEGINS:
            raise ValueError(f"tool {self.name!r}: task_begins must be 'call' or 'handler', "
                             f"not {self.task_begins!r}")
        if self.task is None and self.task_begins != "call":
            raise ValueError(f"tool {self.name!r}: task_begins is for a tool that may run as "
                             f"a task; give task='optional' or 'required' too")

    @property
    def wants_progress(self) -> bool:
        """The handler takes a ``progress(progress, total=None, message=None)`` reporter."""
        try:
            return PROGRESS_PARAM in inspect.signature(self.handler).parameters
        except (TypeError, ValueError):
            return False

    @property
    def wants_context(self) -> bool:
        """The handler takes the request's :class:`~.context.Context` as ``ctx``."""
        return takes_context(self.handler)

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

    def contents(self) -> list[dict]:
        """``[{uri, mimeType, text | blob}]``: what ``read()`` returns (it may block or
        raise), bytes as a base64 blob."""
        return [content_item(self.uri, self.mime_type, self.read())]


@dataclass
class LocalPrompt:
    name: str
    render: Callable[..., Any]
    description: str = ""
    arguments: list = field(default_factory=list)

    def definition(self) -> dict:
        return {"name": self.name, "description": self.description, "arguments": list(self.arguments)}

    @property
    def wants_context(self) -> bool:
        """The render function takes the request's :class:`~.context.Context` as ``ctx``."""
        return takes_context(self.render)

    def get(self, arguments: dict | None, context: Context | None = None) -> dict:
        """The prompt rendered with ``arguments``: ``{description, messages}``. Raises
        McpError -32602 when ``render`` does not take them; a ``render`` with a ``ctx``
        parameter gets ``context`` (may raise what asking the client raises)."""
        values = dict(arguments or {})
        if self.wants_context:
            values[CONTEXT_PARAM] = context if context is not None else Context()
        try:
            value = self.render(**values)
        except TypeError as exc:
            raise McpError(INVALID_PARAMS, f"Invalid arguments for prompt {self.name}: {exc}") from None
        if isinstance(value, str):
            value = [{"role": "user", "content": {"type": "text", "text": value}}]
        return {"description": self.description, "messages": list(value)}


class Registry:
    """The tools, resources and prompts of one tool server; ``tools_changed()`` is called
    after a tool is added or removed (not under a lock)."""

    def __init__(self, tools_changed: Callable[[], None]):
        self._tools_changed = tools_changed
        self._lock = threading.Lock()
        self.tools: dict[str, LocalTool] = {}
        self.resources: dict[str, LocalResource] = {}
        self.prompts: dict[str, LocalPrompt] = {}
        #: resource templates by their URI template
        self.templates: dict[str, LocalTemplate] = {}
        #: completers by (reference, argument name): a prompt's name or a template's URI
        self.completers: dict[tuple[str, str], Completer] = {}
        #: the skills (the skills extension), their files served as resources
        self.skills = ServedSkills()

    @property
    def offers_tasks(self) -> bool:
        """Whether a tool may run as a task (the tasks extension is then advertised)."""
        return any(tool.task is not None for tool in list(self.tools.values()))

    def add_tool(self, tool: LocalTool) -> None:
        """Register (or replace) ``tool``."""
        with self._lock:
            self.tools[tool.name] = tool
        self._tools_changed()

    def remove_tool(self, name: str) -> None:
        with self._lock:
            removed = self.tools.pop(name, None)
        if removed is not None:
            self._tools_changed()

    def add_resource(self, resource: LocalResource) -> None:
        self.resources[resource.uri] = resource

    def add_prompt(self, prompt: LocalPrompt) -> None:
        self.prompts[prompt.name] = prompt

    def add_template(self, template: LocalTemplate) -> None:
        self.templates[template.uri_template] = template

    def find_template(self, uri: str) -> tuple[LocalTemplate, dict[str, str]] | None:
        """The first template that ``uri`` matches, with its variables."""
        for template in list(self.templates.values()):
            variables = template.match(uri)
            if variables is not None:
                return template, variables
        return None

    def resource_list(self) -> list[dict]:
        """The resources' definitions, then those of the skills' files."""
        return [r.definition() for r in list(self.resources.values())] + self.skills.resources()

    def read_resource(self, uri: str) -> list[dict]:
        """The contents of the resource offered by that URI, else of a skill's file, else of
        the first template it matches (reading may block, or raise what ``read()`` raises).
        Raises McpError -32002 with ``data.uri`` for an unknown uri."""
        resource = self.resources.get(uri)
        if resource is not None:
            return resource.contents()
        skill_file = self.skills.contents(uri)
        if skill_file is not None:
            return skill_file
        found = self.find_template(uri)
        if found is None:
            raise McpError(RESOURCE_NOT_FOUND, f"Resource not found: {uri}", {"uri": uri})
        template, variables = found
        return template.contents(uri, variables)

    def get_prompt(self, name: str, arguments: dict | None, context: Context | None) -> dict:
        """The prompt ``name`` rendered (:meth:`LocalPrompt.get`). Raises McpError -32602 for
        an unknown prompt."""
        prompt = self.prompts.get(name)
        if prompt is None:
            raise McpError(INVALID_PARAMS, f"Unknown prompt: {name}")
        return prompt.get(arguments, context)

    def complete(self, ref: dict, argument: dict, context: dict | None) -> dict:
        """The answer to ``completion/complete`` (see :func:`.completions.complete`). Raises
        McpError -32602 for a malformed ``ref``."""
        name = argument.get("name") if isinstance(argument, dict) else None
        return complete(self.completers.get((reference_key(ref), str(name))), argument, context)

    def takes_context(self, method: str, name: Any) -> bool:
        """Whether the handler a ``tools/call`` or ``prompts/get`` of ``name`` reaches takes
        a ``ctx``."""
        if method == "tools/call":
            tool = self.tools.get(name) if isinstance(name, str) else None
            return tool is not None and tool.wants_context
        if method == "prompts/get":
            prompt = self.prompts.get(name) if isinstance(name, str) else None
            return prompt is not None and prompt.wants_context
        return False


def local_tool(name: str, handler: Callable, *, description: str | None = None,
               input_model: type[BaseModel] | None = None, input_schema: dict | None = None,
               annotations: dict | None = None, task: str | None = None,
               task_begins: str = "call") -> LocalTool:
    """The tool ``name`` of ``handler`` (see :meth:`ToolServer.add_tool
    <raider_sync.ToolServer.add_tool>` for where its input schema comes from, and ``task``
    and ``task_begins``). Raises ValueError for a ``task`` or ``task_begins`` it does not
    know."""
    description = description if description is not None else inspect.getdoc(handler) or ""
    if input_model is not None:
        return LocalTool(name, description, _schema_of(input_model), handler, input_model,
                         pass_model=True, annotations=annotations, task=task,
                         task_begins=task_begins)
    if input_schema is not None:
        return LocalTool(name, description, dict(input_schema), handler, None,
                         annotations=annotations, task=task, task_begins=task_begins)
    model = _model_from_signature(name, handler)
    return LocalTool(name, description, _schema_of(model), handler, model,
                     annotations=annotations, task=task, task_begins=task_begins)


def local_prompt(name: str, render: Callable[..., Any], description: str | None) -> LocalPrompt:
    """The prompt ``name`` of ``render``; its arguments are ``render``'s parameters."""
    params = inspect.signature(render).parameters.values()
    arguments = [{"name": p.name, "required": p.default is inspect.Parameter.empty}
                 for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
                 and p.name != CONTEXT_PARAM]
    return LocalPrompt(name, render, description or inspect.getdoc(render) or "", arguments)


def _model_from_signature(name: str, fn: Callable) -> type[BaseModel]:
    fields: dict[str, Any] = {}
    for param in inspect.signature(fn).parameters.values():
        if (param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD)
                or param.name in (PROGRESS_PARAM, CONTEXT_PARAM)):
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
