"""The tasks wire of the stateless era: the ``io.modelcontextprotocol/tasks`` extension
(SEP-2663).

The client declares the extension in every request's ``_meta`` (the era's capabilities,
see :func:`~..eras.modern.with_tasks`); a ``tools/call`` may then be answered ``resultType: "task"`` with
the task, flat. ``tasks/get`` shows the task and carries its questions (``inputRequests``),
its result (completed) or its error (failed); ``tasks/update`` delivers answers by key;
``tasks/cancel`` is acknowledged. Over HTTP each carries ``Mcp-Name: <taskId>``, which the
era's headers add.
"""
from __future__ import annotations

from concurrent.futures import Future
from typing import Any

from ...threads.futures import Deadline
from ..eras.modern import NO_TASKS
from .records import TaskStatus
from .wire import TaskWire, task_of


class WireV2(TaskWire):
    """SEP-2663, over the era's request path."""

    name = "v2"

    def declare(self, params: dict, tool: dict | None, mode: Any = "auto") -> dict:
        """``params`` as they are: the era declares the extension on every request. A call
        whose ``mode`` is False says so in its ``_meta`` (:data:`NO_TASKS`), which the era
        reads when it stamps the request."""
        if mode is False:
            return {**params, "_meta": {**(params.get("_meta") or {}), NO_TASKS: True}}
        return params

    def created(self, result: Any) -> TaskStatus | None:
        if not isinstance(result, dict) or result.get("resultType") != "task":
            return None
        return task_of(TaskStatus.from_v2, result)

    def get_f(self, task_id: str, deadline: Deadline) -> Future:
        return self.send("tasks/get", {"taskId": task_id}, deadline,
                         transform=TaskStatus.from_v2)

    def update_f(self, task_id: str, responses: dict, deadline: Deadline) -> Future:
        return self.send("tasks/update", {"taskId": task_id, "inputResponses": responses},
                         deadline, transform=_nothing)

    def cancel_f(self, task_id: str, deadline: Deadline) -> Future:
        return self.send("tasks/cancel", {"taskId": task_id}, deadline, transform=_nothing)


def _nothing(result: Any) -> None:
    return None
