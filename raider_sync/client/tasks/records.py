"""The one record of a task's state that every wire produces: :class:`TaskStatus`.

    status = TaskStatus.from_v2(tasks_get_result)    # SEP-2663 (stateless era)
    status = TaskStatus.from_v1(result["task"])      # 2025-11-25 (handshake era)
    status.terminal                                  # completed, failed or cancelled

Pure data: nothing here blocks or sends anything. A record that is not a task raises
McpError naming the field.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ...errors import McpError
from ...protocol.codes import INTERNAL_ERROR

#: the statuses a task ends in; it never leaves one
TERMINAL = ("completed", "failed", "cancelled")
STATUSES = ("working", "input_required", *TERMINAL)


@dataclass(frozen=True)
class TaskStatus:
    """A task as the server last showed it. ``result`` (completed, v2: the tool's result,
    ``resultType`` stripped), ``error`` (failed, v2: ``{code, message, data?}``) and
    ``input_requests`` (input_required, v2: key -> ``{method, params}``) are None otherwise;
    ``raw`` is what the server sent."""

    task_id: str
    status: str
    status_message: str | None = None
    created_at: str | None = None
    last_updated_at: str | None = None
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None
    input_requests: dict | None = None
    result: dict | None = None
    error: dict | None = None
    raw: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    def changed_from(self, other: "TaskStatus | None") -> bool:
        """Whether this record tells something ``other`` did not: a new status, status
        message or set of input request keys. A new ``lastUpdatedAt`` alone is not a change:
        a server may stamp each answer with the time it answered (fastmcp-tasks does), and
        every poll would then look like progress."""
        return (other is None or self.status != other.status
                or self.status_message != other.status_message
                or set(self.input_requests or ()) != set(other.input_requests or ()))

    def expires_at(self) -> float | None:
        """``createdAt + ttlMs`` in seconds since the epoch, or None (no ttl, or a time that
        does not parse)."""
        if self.ttl_ms is None or not self.created_at:
            return None
        try:
            created = datetime.fromisoformat(self.created_at.replace("Z", "+00:00"))
        except ValueError:
            return None
        if created.tzinfo is None:
            return None  # a local time of an unknown zone: no backstop rather than a wrong one
        return created.timestamp() + self.ttl_ms / 1000.0

    @classmethod
    def from_v2(cls, result: Any) -> "TaskStatus":
        """The record of a CreateTaskResult or a ``tasks/get`` result (SEP-2663: flat, integer
        ``ttlMs`` and ``pollIntervalMs``). Raises McpError for one that is not a task."""
        task = _task_object(result, "the task")
        return cls(**_common(task, "ttlMs", "pollIntervalMs"),
                   input_requests=_object(task.get("inputRequests")),
                   result=_result(task.get("result")),
                   error=_object(task.get("error")), raw=task)

    @classmethod
    def from_v1(cls, task: Any) -> "TaskStatus":
        """The record of a 2025-11-25 Task (``ttl``, ``pollInterval``; a CreateTaskResult's
        ``task`` or a ``tasks/get`` result). Raises McpError for one that is not a task."""
        task = _task_object(task, "the task")
        return cls(**_common(task, "ttl", "pollInterval"), raw=task)


def _task_object(value: Any, what: str) -> dict:
    if not isinstance(value, dict):
        raise McpError(INTERNAL_ERROR, f"{what} is {type(value).__name__}, not an object")
    if not isinstance(value.get("taskId"), str) or not value["taskId"]:
        raise McpError(INTERNAL_ERROR, f"{what} has no taskId string")
    if value.get("status") not in STATUSES:
        raise McpError(INTERNAL_ERROR, f"{what} has status {value.get('status')!r}, not one "
                                       f"of {', '.join(STATUSES)}")
    return value


def _common(task: dict, ttl: str, poll: str) -> dict:
    return {"task_id": task["taskId"], "status": task["status"],
            "status_message": _text(task.get("statusMessage")),
            "created_at": _text(task.get("createdAt")),
            "last_updated_at": _text(task.get("lastUpdatedAt")),
            "ttl_ms": _millis(task.get(ttl)), "poll_interval_ms": _millis(task.get(poll))}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _millis(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return None
    return max(0, int(value))


def _object(value: Any) -> dict | None:
    return dict(value) if isinstance(value, dict) else None


def _result(value: Any) -> dict | None:
    if not isinstance(value, dict):
        return None
    return {k: v for k, v in value.items() if k != "resultType"}
