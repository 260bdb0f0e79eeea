"""ToolServer: local tools (and resources, prompts and skills) with the face of an McpServer.

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

The ToolServer is a face over its parts: a :class:`~.registry.Registry` of what it offers
(tools, resources, prompts, and how a resource is read, a prompt rendered: :mod:`.registry`),
:class:`~.tool_calls.ToolCalls`, which validates a call, runs its handler and shapes the
result (:mod:`.tool_calls`), the tasks (:mod:`.tasks`) and events (:mod:`.events`) it serves,
and the :class:`~.listeners.Listeners` told when its tools or a resource change. Serving it
is :mod:`.serving` (stdio), :mod:`.serving_http` and :mod:`.inprocess`'s.
"""
from __future__ import annotations

import inspect
import logging
import os
from concurrent.futures import Future
from typing import Any, Callable

from pydantic import BaseModel

from ..client.launch import DEFAULT_CALL_TIMEOUT_S
from ..client.results import ToolResult, text_result  # noqa: F401 - text_result importable from here as before
from ..config import normalize_name
from ..errors import InvalidArgument, RaiderError
from ..threads.futures import failed, resolved, then, wait_bounded
from ..threads.timeouts import seconds
from .completions import Completer
from .context import Context
from .events import ServedEvents
from .listeners import Listeners
from .registry import (  # noqa: F401 - importable from here as before
    PROGRESS_PARAM,
    LocalPrompt,
    LocalResource,
    LocalTool,
    Registry,
    local_prompt,
    local_tool,
)
from .request_state import new_secret
from .skill_files import skill_from_folder, skill_from_text
from .skills_served import ServedSkills
from .tasks import ServedTasks, TaskStore
from .tasks.running import DEFAULT_MAX_RUNNING, DEFAULT_POLL_INTERVAL, DEFAULT_TTL
from .templates import LocalTemplate, is_template
from .tool_calls import ToolCalls, check_schema, describe_validation, error_result  # noqa: F401 - importable from here as before

log = logging.getLogger("raider_sync.toolserver")

#: the seconds close() waits for the threads of running tasks to end
TASK_CLOSE_GRACE = 5.0


class ToolServer:
    """In-process tools with the methods of a connected McpServer.

    Handlers run on a small pool owned by this object (``max_workers``), whose threads end
    after half a second without work; a handler may also return a ``Future``, which is then
    awaited without taking a pool thread. :meth:`close` joins the pool.
    ``on_tools_changed(server)`` is told when tools are added or removed.

    Served in the stateless era, a tool registered with ``task=`` runs as a task for a
    client that declares the tasks extension (see :mod:`.tasks`): ``task_store`` keeps the
    tasks (default: in this process's memory), ``task_ttl`` is how long one is kept, in
    seconds from its creation (None: for ever), ``task_poll_interval`` the seconds a client
    is asked to leave between its polls, and at most ``max_tasks`` task handlers run at once,
    each on a thread of its own.
    """

    transport = "local"

    def __init__(self, name: str, *, instructions: str | None = None, version: str = "0.1.0",
                 max_workers: int = 8, call_timeout: float = DEFAULT_CALL_TIMEOUT_S,
                 state_secret: bytes | None = None, task_store: TaskStore | None = None,
                 task_ttl: float | None = DEFAULT_TTL,
                 task_poll_interval: float = DEFAULT_POLL_INTERVAL,
                 max_tasks: int = DEFAULT_MAX_RUNNING):
        self.name = name
        self.key = normalize_name(name)
        self.instructions = instructions
        self.version = version
        self.call_timeout = seconds(call_timeout, DEFAULT_CALL_TIMEOUT_S, "call_timeout",
                                    "ToolServer")
        self.server_info = {"name": name, "version": version}
        if state_secret is not None and (not isinstance(state_secret, bytes) or len(state_secret) < 16):
            raise InvalidArgument("ToolServer state_secret must be bytes, at least 16 of them")
        #: signs the requestState of input_required rounds; give every process of one
        #: server the same one (behind a load balancer), else each makes its own
        self.state_secret = state_secret or new_secret()
        self.warnings: list[str] = []
        self.on_tools_changed: Callable[["ToolServer"], None] | None = None
        #: called once when the tool server is closed (BashTools closes its shells then)
        self.on_close: Callable[[], None] | None = None
        self._tool_listeners = Listeners("a tools-changed callback", log)
        self._resource_listeners = Listeners("a resource-updated callback", log)
        self._registry = Registry(self._tools_changed)
        self._calls = ToolCalls(name, self.key, max_workers)
        #: the tasks of the stateless era's clients (:mod:`.tasks`)
        self.served_tasks = ServedTasks(self.key, store=task_store, ttl=task_ttl,
                                        poll_interval=task_poll_interval, max_running=max_tasks)
        #: the event types, their log and webhooks (the events extension, a draft: .events)
        self.served_events = ServedEvents(self.key)

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
        return "stopped" if self._calls.closed else "connected"

    reason = None
    pid = None
    protocol_version = None

    @property
    def tool_names(self) -> list[str]:
        return list(self._registry.tools)

    def original_name(self, name: str) -> str | None:
        return name if name in self._registry.tools else None

    def list_tools_f(self) -> Future:
        return resolved(self.list_tools())

    def list_tools(self, timeout: float | None = None) -> list[dict]:
        """The tool definitions: name, description, inputSchema (copies). Nothing waits:
        ``timeout`` is only checked, as every method's is."""
        seconds(timeout, self.call_timeout, method="ToolServer.list_tools")
        return [tool.definition() for tool in list(self._registry.tools.values())]

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
             annotations: dict | None = None, task: str | None = None,
             task_begins: str = "call") -> Callable:
        """Decorator form of :meth:`add_tool`; the function's name and docstring are defaults."""
        def register(fn: Callable) -> Callable:
            self.add_tool(name or fn.__name__, fn, description=description,
                          input_model=input_model, input_schema=input_schema,
                          annotations=annotations, task=task, task_begins=task_begins)
            return fn
        return register

    def add_tool(self, name: str, handler: Callable, *, description: str | None = None,
                 input_model: type[BaseModel] | None = None, input_schema: dict | None = None,
                 annotations: dict | None = None, task: str | None = None,
                 task_begins: str = "call") -> None:
        """Register (or replace) a tool.

        The input schema comes from ``input_model`` (the handler gets the model instance),
        else from ``input_schema`` (a JSON schema; the handler gets the argument dict, checked
        for required fields and top-level types), else from the handler's signature (the
        handler gets keyword arguments validated by pydantic).

        ``task`` says whether the tool may run as a task (the stateless era's tasks
        extension): None (never), ``"optional"`` (a task for a client that declares the
        extension, an ordinary call for others) or ``"required"`` (a task only; a client that
        does not declare the extension is refused with -32021). ``task_begins`` says when:
        ``"call"`` (as the call arrives, before the handler runs) or ``"handler"`` (when the
        handler calls ``ctx.begin_task()``; questions it asks before are ordinary rounds of
        the request). Called in-process, or in the handshake era, the tool runs as any
        other. Raises ValueError for a ``task`` or ``task_begins`` it does not know.
        """
        self._registry.add_tool(local_tool(name, handler, description=description,
                                           input_model=input_model, input_schema=input_schema,
                                           annotations=annotations, task=task,
                                           task_begins=task_begins))

    def remove_tool(self, name: str) -> None:
        self._registry.remove_tool(name)

    def add_resource(self, uri: str, read: Callable[..., Any], *, name: str | None = None,
                     mime_type: str | None = "text/plain", description: str | None = None) -> None:
        """Offer a resource; ``read()`` returns its text (str) or bytes (sent as a blob).
        A ``uri`` with ``{name}`` expressions is a resource template (listed by
        resources/templates/list): any URI that matches it is read with
        ``read(**variables)``. Raises ValueError for a template expression other than
        ``{name}`` and ``{+name}``."""
        if is_template(uri):
            self._registry.add_template(LocalTemplate(uri, name or uri, read, mime_type,
                                                      description))
        else:
            self._registry.add_resource(LocalResource(uri, name or uri, read, mime_type,
                                                      description))

    def add_skill(self, folder: str | os.PathLike, *, skill_path: str | None = None) -> str:
        """Publish the skill in ``folder`` (its SKILL.md and every file below it, read now:
        add it again to publish a change) at ``skill://<skill_path>/SKILL.md``; ``skill_path``
        defaults to the folder's name, and its last segment must be the frontmatter's
        ``name``. Served clients list it with ``skills/list`` and read its files as
        resources. Returns the SKILL.md's URI. Raises ValueError naming what breaks the
        rules (see :mod:`.skill_files`), OSError for a folder that cannot be read."""
        skill = skill_from_folder(folder, skill_path)
        self._registry.skills.add(skill)
        return skill.uri

    def add_skill_text(self, skill_path: str, skill_md: str,
                       files: dict[str, str | bytes] | None = None) -> str:
        """Publish a skill held in memory: the text of its SKILL.md and its other files by
        path (``"references/FORMS.md"``), at ``skill://<skill_path>/SKILL.md``. Returns that
        URI. Raises ValueError as :meth:`add_skill` does, TypeError for a file that is
        neither str nor bytes."""
        skill = skill_from_text(skill_path, skill_md, files)
        self._registry.skills.add(skill)
        return skill.uri

    def completion(self, ref: str, argument: str) -> Callable:
        """Decorator form of :meth:`add_completion`."""
        def register(fn: Callable) -> Callable:
            self.add_completion(ref, argument, fn)
            return fn
        return register

    def add_completion(self, ref: str, argument: str, values: Completer) -> None:
        """Offer completions (``completion/complete``) for ``argument`` of the prompt or
        resource template ``ref`` (its name, or its URI template): ``values(value,
        arguments)`` returns the suggestions for what was typed, or ``values`` is a fixed
        list (those that start with what was typed are offered)."""
        self._registry.completers[(ref, argument)] = values

    def complete(self, ref: dict, argument: dict, context: dict | None = None) -> dict:
        """The answer to ``completion/complete``: ``{"completion": {"values": [...]}}``
        (empty for an argument nobody completes). Raises McpError -32602 for a malformed
        ``ref`` or ``argument``; what a completer raises, it raises."""
        return self._registry.complete(ref, argument, context)

    def resource(self, uri: str, **kw) -> Callable:
        def register(fn: Callable) -> Callable:
            kw.setdefault("description", inspect.getdoc(fn))
            self.add_resource(uri, fn, name=kw.pop("name", fn.__name__), **kw)
            return fn
        return register

    def add_prompt(self, name: str, render: Callable[..., Any], *, description: str | None = None) -> None:
        """Offer a prompt; ``render(**arguments)`` returns its text or a list of messages."""
        self._registry.add_prompt(local_prompt(name, render, description))

    def prompt(self, name: str | None = None, **kw) -> Callable:
        def register(fn: Callable) -> Callable:
            self.add_prompt(name or fn.__name__, fn, **kw)
            return fn
        return register

    # -- calls ---------------------------------------------------------------------------

    def call_tool_f(self, name: str, arguments: dict | None = None, *,
                    timeout: float | None = None, on_progress=None,
                    raise_on_error: bool = False, context: Context | None = None) -> Future:
        """A future of the tool's result dict. Fails with UnknownTool, NotConnected after
        close, or ToolTimeout once ``timeout`` s (default :attr:`call_timeout`) pass; the
        handler itself cannot be interrupted and finishes unseen. Bad arguments and handler
        exceptions are ``isError`` results (ToolError when ``raise_on_error``).
        ``on_progress(progress, total, message)`` receives what a handler with a ``progress``
        parameter reports. A handler with a ``ctx`` parameter gets ``context`` (the serving
        side gives one per request; by default a :class:`~.context.Context` with no client)."""
        try:
            bound = seconds(timeout, self.call_timeout, method="ToolServer.call_tool_f")
        except RaiderError as exc:
            return failed(exc)
        future = self._calls.call_f(self._registry.tools.get(name), name, arguments, bound,
                                    on_progress, context)
        return then(future, ToolResult.raise_for_error) if raise_on_error else future

    def call_tool(self, name: str, arguments: dict | None = None, *,
                  timeout: float | None = None, on_progress=None,
                  raise_on_error: bool = False, context: Context | None = None) -> ToolResult:
        """Blocking :meth:`call_tool_f`. Raises ToolTimeout after ``timeout`` s (default
        :attr:`call_timeout`; the handler itself cannot be interrupted, its context says it
        is cancelled)."""
        bound = seconds(timeout, self.call_timeout, method="ToolServer.call_tool")
        return wait_bounded(self.call_tool_f(name, arguments, timeout=bound,
                                             on_progress=on_progress,
                                             raise_on_error=raise_on_error,
                                             context=context), bound)

    def call_as_task(self, params: dict, *, answers: dict[str, dict],
                     notify: Callable[[str, dict], None] | None = None,
                     on_progress: Callable[..., None] | None = None) -> dict | None:
        """The serving side's: the answer to a ``tools/call`` of the stateless era (its
        ``params``, the client's ``answers`` so far) when it is for a task, else None (it is
        answered as any call). See :meth:`.tasks.ServedTasks.call` for what it answers,
        what blocks (up to :attr:`call_timeout`) and what is raised."""
        return self.served_tasks.call(self._registry.tools.get(str(params.get("name"))), params,
                                      self._calls.prepare, answers=answers, notify=notify,
                                      on_progress=on_progress, timeout=self.call_timeout)

    def is_task_call(self, params: dict) -> bool:
        """Whether a ``tools/call`` of the stateless era (its ``params``) is for a task.
        Raises McpError -32021 for a tool that runs only as a task called by a client that
        does not declare the extension (the serving side asks before it answers with a
        stream, so that the refusal keeps its HTTP status). Does not block."""
        return self.served_tasks.is_task(self._registry.tools.get(str(params.get("name"))),
                                         params)

    def takes_context(self, method: str, name: Any) -> bool:
        """Whether the handler a ``tools/call`` or ``prompts/get`` of ``name`` reaches takes
        a ``ctx`` (so that it may log or ask the client while it runs)."""
        return self._registry.takes_context(method, name)

    # -- resources and prompts -----------------------------------------------------------

    @property
    def has_resources(self) -> bool:
        return bool(self._registry.resources or self._registry.templates
                    or self._registry.skills)

    @property
    def has_skills(self) -> bool:
        return bool(self._registry.skills)

    @property
    def skills(self) -> ServedSkills:
        """The skills served (:meth:`add_skill`), as serving answers for them."""
        return self._registry.skills

    @property
    def has_completions(self) -> bool:
        """Whether there is anything to complete (prompts with arguments, templates)."""
        return bool(self._registry.prompts or self._registry.templates)

    @property
    def has_prompts(self) -> bool:
        return bool(self._registry.prompts)

    def list_resources(self, timeout: float | None = None) -> list[dict]:
        seconds(timeout, self.call_timeout, method="ToolServer.list_resources")
        return self._registry.resource_list()

    def list_resources_f(self) -> Future:
        return resolved(self.list_resources())

    def read_resource(self, uri: str, *, timeout: float | None = None) -> list[dict]:
        """The contents of a resource: ``[{uri, mimeType, text | blob}]``, of a resource
        offered by that URI, else of a skill's file, else of the first template it matches.
        Raises McpError -32002 with ``data.uri`` for an unknown uri (served to a client of
        the stateless revision as -32602, which that revision uses)."""
        seconds(timeout, self.call_timeout, method="ToolServer.read_resource")
        return self._registry.read_resource(uri)

    def list_resource_templates(self, timeout: float | None = None) -> list[dict]:
        """The resource templates: ``[{uriTemplate, name, mimeType, description}]``."""
        seconds(timeout, self.call_timeout, method="ToolServer.list_resource_templates")
        return [t.definition() for t in list(self._registry.templates.values())]

    def read_resource_f(self, uri: str, *, timeout: float | None = None) -> Future:
        try:
            seconds(timeout, self.call_timeout, method="ToolServer.read_resource_f")
            return resolved(self.read_resource(uri))
        except Exception as exc:  # noqa: BLE001
            return failed(exc)

    def list_prompts(self, timeout: float | None = None) -> list[dict]:
        seconds(timeout, self.call_timeout, method="ToolServer.list_prompts")
        return [p.definition() for p in list(self._registry.prompts.values())]

    def list_prompts_f(self) -> Future:
        return resolved(self.list_prompts())

    def get_prompt(self, name: str, arguments: dict | None = None, *,
                   timeout: float | None = None, context: Context | None = None) -> dict:
        """The prompt rendered: ``{description, messages}``. Raises McpError -32602 for an
        unknown prompt or arguments it does not take; a render function with a ``ctx``
        parameter gets ``context``."""
        seconds(timeout, self.call_timeout, method="ToolServer.get_prompt")
        return self._registry.get_prompt(name, arguments, context)

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

    def close(self, timeout: float | None = None) -> None:
        """End the running tasks (they fail, their handlers are told they are cancelled,
        their threads joined for at most ``timeout`` s, default :data:`TASK_CLOSE_GRACE`),
        join the handler pool, then call :attr:`on_close` (once): whoever closes the tool
        server (an McpHub it was mounted on) closes what stands behind it. Safe to call
        twice. Raises InvalidArgument for a timeout that is not a positive number."""
        grace = seconds(timeout, TASK_CLOSE_GRACE, method="ToolServer.close")
        self.served_tasks.close(grace)
        self.served_events.close(grace)
        first = self._calls.close()
        if first and self.on_close is not None:
            self.on_close()

    def add_listener(self, callback: Callable[["ToolServer"], None]) -> None:
        """Also tell ``callback(server)`` when tools change (used when serving)."""
        self._tool_listeners.add(callback)

    def remove_listener(self, callback: Callable[["ToolServer"], None]) -> None:
        self._tool_listeners.remove(callback)

    def resource_updated(self, uri: str) -> None:
        """Announce that the resource ``uri`` changed: served clients listening to it (a
        ``subscriptions/listen`` of the stateless era, over stdio or HTTP) get
        ``notifications/resources/updated``. Does not block."""
        self._resource_listeners.tell(uri)

    def add_resource_listener(self, callback: Callable[[str], None]) -> None:
        """Also tell ``callback(uri)`` when :meth:`resource_updated` is called (serving)."""
        self._resource_listeners.add(callback)

    def remove_resource_listener(self, callback: Callable[[str], None]) -> None:
        self._resource_listeners.remove(callback)

    # -- events (the events extension, a draft: docs/events.md) ----------------------------

    def event(self, name: str, *, description: str | None = None,
              input_schema: dict | None = None, payload_schema: dict | None = None,
              delivery=("poll", "push", "webhook")) -> None:
        """Declare the event type ``name`` (experimental): ``events/list`` lists it, and a
        client of the stateless era may poll it, stream it or (over HTTP) have it POSTed to
        a webhook, as ``delivery`` allows. ``input_schema`` is the JSON schema of a
        subscription's arguments, ``payload_schema`` that of the data published. Raises
        InvalidArgument for an empty name, a schema that is not an object schema, or an
        unknown delivery mode. Settings: ``served_events.configure(...)``."""
        self.served_events.declare(name, description=description, input_schema=input_schema,
                                   payload_schema=payload_schema, delivery=delivery)

    def publish(self, name: str, data: Any, *, arguments_match=None,
                event_id: str | None = None) -> str:
        """Record an occurrence of the declared event ``name`` with ``data`` (experimental);
        its eventId (``event_id``, else a new one) is returned. ``arguments_match`` says
        which subscriptions get it: None all, a dict the values of the subscriptions'
        filters (a subscription whose arguments name a key of it gets it only when the
        values are equal), or ``callable(arguments) -> bool``. Does not block (webhook POSTs
        go out on a worker thread). Raises InvalidArgument for an undeclared name."""
        return self.served_events.publish(name, data, arguments_match, event_id).event_id

    @property
    def has_events(self) -> bool:
        """Whether an event type is declared (the events extension is then advertised)."""
        return len(self.served_events) > 0

    @property
    def offers_tasks(self) -> bool:
        """Whether a tool may run as a task (the tasks extension is then advertised)."""
        return self._registry.offers_tasks

    def _tools_changed(self) -> None:
        self._tool_listeners.tell(self, first=self.on_tools_changed)
