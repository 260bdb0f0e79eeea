"""The 2025-11-25 tasks wire (experimental ``tasks``, SEP-1686), handshake era only.

    wire = V1Wire(era)                         # the connection's HandshakeEra
    params = wire.declare({"name": "research", "arguments": {...}}, tool)  # + task: {ttl}
    status = wire.created(call_result)         # TaskStatus, or None for an ordinary result
    wire.get_f(status.task_id, Deadline(10))   # tasks/get -> TaskStatus
    wire.result_f(status.task_id, Deadline(600))   # tasks/result -> the CallToolResult

A tool runs as a task when the server declares ``tasks.requests.tools.call`` and the tool's
``execution.taskSupport`` is ``"required"`` (or ``"optional"``, with ``tasks=True``); the
server answers ``{"task": {...}}`` at once. ``tasks/result`` blocks on the server until the
task ends: while it is open, a server whose task is ``input_required`` sends its
``elicitation/create`` or ``sampling/createMessage`` on that request's stream (stdio:
between the other messages; Streamable HTTP: the SSE answer of its POST), and the client's
ordinary handlers answer them, as any server request. There is no ``tasks/update``.

A server MAY also send ``notifications/tasks/status`` (params: the Task) unasked;
:func:`status_notification` turns one into a TaskStatus.
"""
from __future__ import annotations

from concurrent.futures import Future
from typing import Any

from ...errors import ConfigError, McpError
from ...protocol.codes import INVALID_PARAMS, METHOD_NOT_FOUND
from ...threads.futures import Deadline, rescue, then
from .records import TaskStatus
from .wire import TaskWire

#: what a receiver puts in ``_meta`` of everything that belongs to a task
RELATED_TASK = "io.modelcontextprotocol/related-task"
#: the text a server may give, in the CreateTaskResult's ``_meta``, for the model meanwhile
IMMEDIATE_RESPONSE = "io.modelcontextprotocol/model-immediate-response"
#: the notification a server MAY send on each change of a task
STATUS_NOTIFICATION = "notifications/tasks/status"
#: the retention asked for a task (ms), as long as a call may wait by default (an hour)
DEFAULT_TTL_MS = 3_600_000


class V1Wire(TaskWire):
    """The 2025-11-25 wire over ``era`` (a connection's HandshakeEra, whose ``request_f``
    sends and whose ``description.capabilities`` are read at each :meth:`declare`).

    ``tasks``: "auto" (default: only ``required`` tools run as tasks), True (``optional``
    ones too) or False (never). ``ttl_ms``: the retention asked of the server (it may
    choose another), None to leave it to the server. Raises ConfigError naming the option
    for a bad one, ValueError for an era other than the handshake era."""

    name = "v1"

    def __init__(self, era: Any, *, tasks: bool | str = "auto",
                 ttl_ms: int | None = DEFAULT_TTL_MS):
        if getattr(era, "name", None) != "legacy":
            raise ValueError("the 2025-11-25 tasks wire belongs to the handshake era, not "
                             f"{getattr(era, 'name', type(era).__name__)!r}")
        if not (tasks is True or tasks is False or tasks == "auto"):
            raise ConfigError(f"tasks: expected 'auto', True or False, not {tasks!r}")
        if ttl_ms is not None and (isinstance(ttl_ms, bool) or not isinstance(ttl_ms, int)
                                   or ttl_ms <= 0):
            raise ConfigError(f"ttl_ms: expected a positive number of milliseconds or None, "
                              f"not {ttl_ms!r}")
        self.era = era
        self.tasks = tasks
        self.ttl_ms = ttl_ms

    # -- the call --------------------------------------------------------------------------

    def offered(self) -> bool:
        """True when the server declares task-augmented ``tools/call``."""
        capabilities = self.era.description.capabilities
        tasks = capabilities.get("tasks") if isinstance(capabilities, dict) else None
        requests = tasks.get("requests") if isinstance(tasks, dict) else None
        tools = requests.get("tools") if isinstance(requests, dict) else None
        return isinstance(tools, dict) and isinstance(tools.get("call"), dict)

    def declare(self, params: dict, tool: dict | None) -> dict:
        """``params`` with ``task: {ttl}`` added for a tool to run as a task; unchanged for
        any other (and for every tool of a server that does not offer tasks: a client MUST
        NOT ask them of it)."""
        execution = tool.get("execution") if isinstance(tool, dict) else None
        support = execution.get("taskSupport") if isinstance(execution, dict) else None
        wanted = support == "required" or (support == "optional" and self.tasks is True)
        if self.tasks is False or not wanted or not self.offered():
            return params
        return {**params, "task": {} if self.ttl_ms is None else {"ttl": self.ttl_ms}}

    def created(self, result: dict) -> TaskStatus | None:
        """The TaskStatus of a CreateTaskResult (``{"task": {...}}``), whose ``raw`` keeps
        the result's ``_meta`` (:data:`IMMEDIATE_RESPONSE` among it); None for any other
        result. Raises McpError for a ``task`` that is not a Task."""
        if not isinstance(result, dict) or "task" not in result:
            return None
        task = result["task"]
        meta = result.get("_meta")
        if isinstance(task, dict) and isinstance(meta, dict):
            own = task.get("_meta")
            task = {**task, "_meta": {**(own if isinstance(own, dict) else {}), **meta}}
        return TaskStatus.from_v1(task)

    # -- the tasks/* requests --------------------------------------------------------------

    def get_f(self, task_id: str, deadline: Deadline) -> Future:
        """A future of the task's TaskStatus (``tasks/get``); McpError -32602 for a task the
        server does not know (never created, expired, or of another session)."""
        return self._send("tasks/get", task_id, deadline, TaskStatus.from_v1)

    def update_f(self, task_id: str, responses: dict, deadline: Deadline) -> Future:
        """Raises McpError: this wire has no ``tasks/update``."""
        raise McpError(METHOD_NOT_FOUND, "the 2025-11-25 tasks wire has no tasks/update: a "
                                         "task's input goes through tasks/result, where the "
                                         "client's handlers answer the server's requests")

    def cancel_f(self, task_id: str, deadline: Deadline) -> Future:
        """A future of the task's TaskStatus after ``tasks/cancel`` (``cancelled``).
        Cancelling a task that has already ended is no error: the server refuses it with
        -32602, and the status is got again; the future fails with that refusal only when
        the task is not found, or not ended, either."""
        def ended(refusal: BaseException) -> Future:
            if not isinstance(refusal, McpError) or refusal.code != INVALID_PARAMS:
                raise refusal

            def terminal(status: TaskStatus) -> TaskStatus:
                if not status.terminal:
                    raise refusal
                return status

            def not_found(_: BaseException) -> Future:
                raise refusal  # the refusal says what the cancel met, not the get's error

            return rescue(then(self.get_f(task_id, deadline), terminal), not_found)

        return rescue(self._send("tasks/cancel", task_id, deadline, TaskStatus.from_v1), ended)

    def result_f(self, task_id: str, deadline: Deadline) -> Future:
        """A future of what the underlying ``tools/call`` returns (``tasks/result``, which
        the server answers once the task ended), without the :data:`RELATED_TASK` ``_meta``
        key; McpError for its JSON-RPC error. Meanwhile the server's requests on that
        stream reach the client's handlers. ``deadline`` bounds the whole wait."""
        return self._send("tasks/result", task_id, deadline, without_related_task)

    def _send(self, method: str, task_id: str, deadline: Deadline, transform: Any) -> Future:
        if not isinstance(task_id, str) or not task_id:
            raise ConfigError(f"task_id: expected a non-empty string, not {task_id!r}")
        return self.era.request_f(method, {"taskId": task_id}, deadline=deadline,
                                  transform=transform, inline=False,
                                  timeout_message=f"{method} of task {task_id} timed out "
                                                  f"after {deadline.seconds:g} s")


def without_related_task(result: Any) -> Any:
    """``result`` without the :data:`RELATED_TASK` key of its ``_meta`` (a copy; ``_meta``
    dropped when nothing else is in it)."""
    if not isinstance(result, dict) or not isinstance(result.get("_meta"), dict):
        return result
    meta = {k: v for k, v in result["_meta"].items() if k != RELATED_TASK}
    shaped = {k: v for k, v in result.items() if k != "_meta"}
    if meta:
        shaped["_meta"] = meta
    return shaped


def status_notification(method: str, params: Any) -> TaskStatus | None:
    """The TaskStatus a ``notifications/tasks/status`` carries (its params are the Task),
    else None: for another method, or params that are no Task (a notification has nobody to
    answer an error to)."""
    if method != STATUS_NOTIFICATION:
        return None
    try:
        return TaskStatus.from_v1(params)
    except McpError:
        return None
