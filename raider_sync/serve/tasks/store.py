"""Where the tasks of a served ToolServer are kept: :class:`TaskStore`, and
:class:`MemoryTaskStore`, the one a tool server uses unless given another.

    store = MemoryTaskStore()
    store.create(record)                          # before the client hears of the task
    store.request_input(task_id, {"confirm": {...}})
    store.respond(task_id, {"confirm": {...}})    # from tasks/update (unknown keys ignored)
    store.take_responses(task_id, ["confirm"], timeout=60)   # blocks the handler's thread
    store.settle(task_id, "completed", result={...})         # the first terminal status wins

A record is what ``tasks/get`` shows of a task (:meth:`TaskRecord.detailed`): its status,
times, status message, the questions it waits on, its result or its error, plus the answers
delivered and not yet taken by the handler. Records are kept for their time to live (from
their creation) and then forgotten. A store is thread-safe; only :meth:`take_responses`
blocks.

The interface is what a store shared by several processes (behind a load balancer) would
implement; the in-memory one holds the tasks of one process, and its waits wake in-process.
"""
from __future__ import annotations

import copy
import secrets
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Iterable, Protocol

#: the statuses a task ends in; it never leaves one
TERMINAL = ("completed", "failed", "cancelled")
STATUSES = ("working", "input_required", *TERMINAL)


def new_task_id() -> str:
    """An unguessable task id (256 random bits): knowing it is what lets a client see the
    task."""
    return secrets.token_urlsafe(32)


def iso_time(when: float) -> str:
    """``when`` (seconds since the epoch) as an ISO 8601 UTC time with milliseconds."""
    stamp = datetime.fromtimestamp(when, timezone.utc).isoformat(timespec="milliseconds")
    return stamp.replace("+00:00", "Z")


@dataclass
class TaskRecord:
    """One task. Times are seconds since the epoch; ``ttl_ms`` None means no expiry.
    ``input_requests``: the questions not yet answered, by key (``{method, params}``);
    ``responses``: answers delivered for them and not yet taken by the handler."""
    task_id: str
    created_at: float
    ttl_ms: int | None
    poll_interval_ms: int
    status: str = "working"
    last_updated_at: float = 0.0
    status_message: str | None = None
    result: dict | None = None
    error: dict | None = None
    input_requests: dict[str, dict] = field(default_factory=dict)
    responses: dict[str, dict] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.last_updated_at:
            self.last_updated_at = self.created_at

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    def expired(self, now: float) -> bool:
        return self.ttl_ms is not None and now >= self.created_at + self.ttl_ms / 1000.0

    def wire(self) -> dict:
        """The Task fields, as a ``CreateTaskResult`` carries them (without ``resultType``)."""
        task: dict[str, Any] = {"taskId": self.task_id, "status": self.status}
        if self.status_message:
            task["statusMessage"] = self.status_message
        task.update({"createdAt": iso_time(self.created_at),
                     "lastUpdatedAt": iso_time(self.last_updated_at),
                     "ttlMs": self.ttl_ms, "pollIntervalMs": self.poll_interval_ms})
        return task

    def detailed(self) -> dict:
        """The DetailedTask of ``tasks/get``: the Task, and ``inputRequests`` while it waits
        for input, ``result`` once completed, ``error`` once failed."""
        task = self.wire()
        if self.status == "input_required":
            task["inputRequests"] = copy.deepcopy(self.input_requests)
        elif self.status == "completed" and self.result is not None:
            task["result"] = copy.deepcopy(self.result)
        elif self.status == "failed" and self.error is not None:
            task["error"] = copy.deepcopy(self.error)
        return task


class TaskStore(Protocol):
    """Where tasks are kept. Every method is thread-safe; an unknown (or expired) task id
    makes each a no-op (``get``: None)."""

    def create(self, record: TaskRecord) -> None:
        """Keep ``record``; when this returns, :meth:`get` finds it (the client is told of
        the task only then)."""

    def get(self, task_id: str) -> TaskRecord | None:
        """A copy of the task, or None when there is none (never was, or expired)."""

    def set_message(self, task_id: str, message: str) -> None:
        """Set the status message of a task that is not over (and its lastUpdatedAt)."""

    def request_input(self, task_id: str, requests: dict[str, dict]) -> None:
        """Add questions (key -> ``{method, params}``) to those the task waits on: it is
        ``input_required`` until each is answered."""

    def respond(self, task_id: str, responses: dict[str, dict]) -> None:
        """Deliver answers: those to questions the task waits on are kept for the handler
        and the questions removed (the task is ``working`` again once none is left); others
        (never asked, answered already) are ignored."""

    def take_responses(self, task_id: str, keys: Iterable[str],
                       timeout: float) -> dict[str, dict] | None:
        """Block until every one of ``keys`` is answered, then take (remove) and return
        their answers; None when the task ends (or is gone, or the store is closed) first,
        or ``timeout`` s pass."""

    def settle(self, task_id: str, status: str, *, result: dict | None = None,
               error: dict | None = None, message: str | None = None) -> bool:
        """End the task with a terminal ``status`` (its ``result`` or ``error``, a status
        message); False when it had ended already (the first end wins) or is unknown."""

    def close(self) -> None:
        """Wake every waiter of :meth:`take_responses` (it returns None)."""


class MemoryTaskStore:
    """The tasks of this process, in a dict. Expired tasks are forgotten when the store is
    next used."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._tasks: dict[str, TaskRecord] = {}
        self._closed = False

    def __len__(self) -> int:
        with self._cond:
            self._forget_expired()
            return len(self._tasks)

    def create(self, record: TaskRecord) -> None:
        with self._cond:
            self._forget_expired()
            self._tasks[record.task_id] = copy.deepcopy(record)

    def get(self, task_id: str) -> TaskRecord | None:
        with self._cond:
            record = self._live(task_id)
            return copy.deepcopy(record) if record is not None else None

    def set_message(self, task_id: str, message: str) -> None:
        with self._cond:
            record = self._live(task_id)
            if record is not None and not record.terminal:
                record.status_message = message
                record.last_updated_at = time.time()

    def request_input(self, task_id: str, requests: dict[str, dict]) -> None:
        with self._cond:
            record = self._live(task_id)
            if record is None or record.terminal or not requests:
                return
            record.input_requests.update(copy.deepcopy(requests))
            record.status = "input_required"
            record.last_updated_at = time.time()

    def respond(self, task_id: str, responses: dict[str, dict]) -> None:
        with self._cond:
            record = self._live(task_id)
            if record is None or record.terminal:
                return
            answered = [key for key in responses if key in record.input_requests]
            if not answered:
                return
            for key in answered:
                del record.input_requests[key]
                record.responses[key] = copy.deepcopy(responses[key])
            if not record.input_requests:
                record.status = "working"
            record.last_updated_at = time.time()
            self._cond.notify_all()

    def take_responses(self, task_id: str, keys: Iterable[str],
                       timeout: float) -> dict[str, dict] | None:
        keys = list(keys)
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                record = self._live(task_id)
                if self._closed or record is None or record.terminal:
                    return None
                if all(key in record.responses for key in keys):
                    return {key: record.responses.pop(key) for key in keys}
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(left)

    def settle(self, task_id: str, status: str, *, result: dict | None = None,
               error: dict | None = None, message: str | None = None) -> bool:
        if status not in TERMINAL:
            raise ValueError(f"a task ends {', '.join(TERMINAL)}, not {status!r}")
        with self._cond:
            record = self._live(task_id)
            if record is None or record.terminal:
                return False
            record.status = status
            record.result, record.error = result, error
            if message is not None:
                record.status_message = message
            record.input_requests.clear()
            record.responses.clear()
            record.last_updated_at = time.time()
            self._cond.notify_all()
            return True

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def _live(self, task_id: str) -> TaskRecord | None:
        record = self._tasks.get(task_id)
        if record is not None and record.expired(time.time()):
            del self._tasks[task_id]
            self._cond.notify_all()  # a handler waiting for its answers stops waiting
            return None
        return record

    def _forget_expired(self) -> None:
        now = time.time()
        for task_id in [t for t, record in self._tasks.items() if record.expired(now)]:
            del self._tasks[task_id]
