"""What every tasks wire implements: :class:`TaskWire`, a strategy object per wire.

A wire turns the task operations into the requests of one revision and their answers into
:class:`~.records.TaskStatus` records. It sends through ``send(method, params, deadline,
**options)``, the one request path of its client (the era's ``request_f`` after the start
check), so headers, ``_meta``, deadlines and cancellation are those of every request. It
raises (or fails its futures with) McpError; what an error means for the task (expired,
failed) is the caller's to decide.
"""
from __future__ import annotations

from concurrent.futures import Future
from typing import Any, Callable

from ...errors import McpError
from ...protocol.codes import INTERNAL_ERROR, METHOD_NOT_FOUND
from ...threads.futures import Deadline, failed, resolved
from .records import TaskStatus

#: ``send(method, params, deadline, **options)``: a future of the answer's result
Send = Callable[..., Future]


def task_of(read: Callable[[Any], TaskStatus], answer: Any) -> TaskStatus:
    """``read(answer)``: the task a ``tools/call`` answer carries. Raises McpError saying
    the answer is no task, with what ``read`` found wrong."""
    try:
        return read(answer)
    except McpError as exc:
        raise McpError(INTERNAL_ERROR, f"tools/call answered a task that is not one: "
                                       f"{exc.message}") from None


class TaskWire:
    """The task operations of one revision, for one server. ``name`` is "v1" or "v2"."""

    name = ""
    #: whether :meth:`declare` needs the tool's listing (its ``execution.taskSupport``)
    needs_tool = False
    #: whether a task's input travels on an open :meth:`outcome_f` (the server's requests
    #: answered by the client's handlers) rather than as ``inputRequests`` of ``tasks/get``
    streams_input = False

    def __init__(self, send: Send):
        self.send = send

    def declare(self, params: dict, tool: dict | None, mode: Any = "auto") -> dict:
        """The ``tools/call`` params as sent for ``tool`` (its listing, or None) when the
        client's task choice is ``mode`` ("auto", True, False). Does not block."""
        raise NotImplementedError

    def created(self, result: Any) -> TaskStatus | None:
        """The task a ``tools/call`` answer created, or None for an ordinary result. Raises
        McpError for an answer that says it is a task and is not one."""
        raise NotImplementedError

    def get_f(self, task_id: str, deadline: Deadline) -> Future:
        """A future of the task's :class:`TaskStatus` (one ``tasks/get``)."""
        raise NotImplementedError

    def update_f(self, task_id: str, responses: dict, deadline: Deadline) -> Future:
        """A future of None once the server took ``responses`` (key -> the client's result)."""
        return failed(McpError(METHOD_NOT_FOUND, f"the {self.name} tasks wire has no "
                                                 f"tasks/update"))

    def cancel_f(self, task_id: str, deadline: Deadline) -> Future:
        """A future of the cancelled task's TaskStatus when the wire answers with it, else
        None, once the server took ``tasks/cancel``."""
        raise NotImplementedError

    def result_f(self, task_id: str, deadline: Deadline) -> Future:
        """A future of the task's final result (a wire whose ``get`` does not carry it)."""
        return failed(McpError(METHOD_NOT_FOUND, f"the {self.name} tasks wire has no "
                                                 f"tasks/result: tasks/get carries it"))

    def outcome_f(self, status: TaskStatus, deadline: Deadline) -> Future:
        """A future of the terminal TaskStatus that carries what the caller gets (its
        ``result`` or ``error``), for the task ``status`` shows. A wire whose ``tasks/get``
        carries them has it already: ``status`` itself."""
        return resolved(status)
