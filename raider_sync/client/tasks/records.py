"""TaskStatus: the one normalised record of a task's state, whichever wire it came by.

    TaskStatus.from_v1(task)     # a 2025-11-25 Task (CreateTaskResult["task"], tasks/get, ...)
    TaskStatus.from_v2(result)   # an io.modelcontextprotocol/tasks DetailedTask

Nothing here blocks or sends anything. A record that is not a task raises McpError (-32603),
as any answer that is not what its request returns.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...errors import McpError
from ...protocol.codes import INTERNAL_ERROR

#: the statuses a task never leaves
TERMINAL = ("completed", "failed", "cancelled")


@dataclass(frozen=True)
class TaskStatus:
    """A task's state as the server last showed it; ``raw`` is what it sent."""

    task_id: str
    status: str                    # "working" | "input_required" | "completed" | "failed" | "cancelled"
    status_message: str | None
    created_at: str | None         # ISO 8601 as the server sent it
    last_updated_at: str | None
    ttl_ms: int | None             # v1 "ttl", v2 "ttlMs"
    poll_interval_ms: int | None   # v1 "pollInterval", v2 "pollIntervalMs"
    input_requests: dict | None    # v2 only: key -> {method, params}
    result: dict | None            # v2 completed (resultType stripped)
    error: dict | None             # v2 failed {code, message, data?}
    raw: dict

    @property
    def terminal(self) -> bool:
        """True for a status the task never leaves: completed, failed or cancelled."""
        return self.status in TERMINAL

    @classmethod
    def from_v1(cls, task: dict) -> "TaskStatus":
        """The record of a 2025-11-25 ``Task`` object. Raises McpError for one without a
        string ``taskId`` and ``status``."""
        _check(task, "taskId", "status")
        return cls(task["taskId"], task["status"], _text(task, "statusMessage"),
                   _text(task, "createdAt"), _text(task, "lastUpdatedAt"),
                   _millis(task, "ttl"), _millis(task, "pollInterval"),
                   None, None, None, dict(task))

    @classmethod
    def from_v2(cls, result: dict) -> "TaskStatus":
        """The record of an ``io.modelcontextprotocol/tasks`` task (a CreateTaskResult or a
        ``tasks/get`` result); the inlined ``result`` loses its ``resultType``. Raises
        McpError for one without a string ``taskId`` and ``status``."""
        _check(result, "taskId", "status")
        inlined = result.get("result")
        if isinstance(inlined, dict):
            inlined = {k: v for k, v in inlined.items() if k != "resultType"}
        requests = result.get("inputRequests")
        error = result.get("error")
        return cls(result["taskId"], result["status"], _text(result, "statusMessage"),
                   _text(result, "createdAt"), _text(result, "lastUpdatedAt"),
                   _millis(result, "ttlMs"), _millis(result, "pollIntervalMs"),
                   dict(requests) if isinstance(requests, dict) else None,
                   inlined if isinstance(inlined, dict) else None,
                   dict(error) if isinstance(error, dict) else None, dict(result))


def _check(task: Any, *fields: str) -> None:
    if not isinstance(task, dict):
        raise McpError(INTERNAL_ERROR, f"a task must be an object, not {type(task).__name__}")
    for name in fields:
        if not isinstance(task.get(name), str) or not task[name]:
            raise McpError(INTERNAL_ERROR, f"a task's {name} must be a non-empty string, "
                                           f"not {task.get(name)!r}")


def _text(task: dict, name: str) -> str | None:
    value = task.get(name)
    return value if isinstance(value, str) else None


def _millis(task: dict, name: str) -> int | None:
    """An integer number of milliseconds, or None (absent, null: unlimited, or not one)."""
    value = task.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        return None
    return int(value)
