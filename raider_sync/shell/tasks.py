"""Tasks: the application's registry of background work, and its notifications.

    tasks = Tasks(on_notification=lambda recipient, text: print(recipient, text))
    entry = tasks.register("agent", description="review the diff", name="reviewer",
                           recipient="main", stop=lambda: cancel.set())
    tasks.finish(entry.id, "completed", report="LGTM",
                 notification=task_notification(entry.id, summary='Agent "review" completed'))
    tasks.notifications("main", block=True, timeout=5)   # ["<task-notification>..."]

An entry has an id (``KIND_N``), a kind (bash, monitor, agent, ...), an optional name, a
description, a status (running, completed, failed, killed) and the recipient its
notifications go to. The registry does not know what an entry is: :meth:`Tasks.stop` asks
it to stop through the callable it was registered with, and whoever runs it calls
:meth:`Tasks.finish` when it ends. Everything here is thread-safe.
"""
from __future__ import annotations

import collections
import itertools
import logging
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Callable, Optional
from xml.sax.saxutils import escape

from ..threads.timeouts import poll_seconds

log = logging.getLogger("raider_sync.shell")

RUNNING = "running"
ENDED = ("completed", "failed", "killed")


def task_notification(task_id: str, *, summary: str, status: str | None = None,
                      tool_use_id: str | None = None, event: str | None = None,
                      result: str | None = None) -> str:
    """A ``<task-notification>`` in Claude Code's form; ``summary``, ``event`` and ``result``
    are XML-escaped here (pass them as plain text)."""
    lines = ["<task-notification>", f"<task-id>{escape(task_id)}</task-id>"]
    if tool_use_id:
        lines.append(f"<tool-use-id>{escape(str(tool_use_id))}</tool-use-id>")
    if status:
        lines.append(f"<status>{escape(status)}</status>")
    lines.append(f"<summary>{escape(summary)}</summary>")
    if event is not None:
        lines.append(f"<event>{escape(event)}</event>")
    if result is not None:
        lines.append(f"<result>{escape(result)}</result>")
    lines.append("</task-notification>")
    return "\n".join(lines)


@dataclass(eq=False)
class TaskEntry:
    """One piece of background work. ``done`` resolves with the entry when it ends."""
    id: str
    kind: str
    description: str = ""
    name: Optional[str] = None
    recipient: str = "main"
    call: Optional[str] = None
    status: str = RUNNING
    report: Optional[str] = None
    error: Optional[str] = None
    started: float = field(default_factory=time.monotonic)
    ended: Optional[float] = None
    stop_callback: Optional[Callable[[], Any]] = field(default=None, repr=False)
    done: Future = field(default_factory=Future, repr=False)

    @property
    def running(self) -> bool:
        return self.status == RUNNING


class Tasks:
    """The registry: entries by id (and name) and a notification queue per recipient.

    ``on_notification(recipient, text)`` is called in the notifying thread as each
    notification is queued; its exceptions are logged, never raised to the notifier.
    """

    def __init__(self, on_notification: Callable[[str, str], Any] | None = None):
        self.on_notification = on_notification
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._entries: dict[str, TaskEntry] = {}
        self._counters: dict[str, itertools.count] = {}
        self._queues: dict[str, collections.deque[str]] = collections.defaultdict(collections.deque)

    def __repr__(self) -> str:
        return f"<Tasks entries={len(self._entries)}>"

    # -- entries ------------------------------------------------------------------------------

    def new_id(self, kind: str) -> str:
        """The next free id of ``kind``: ``bash_1``, ``bash_2``, ..."""
        with self._lock:
            counter = self._counters.setdefault(kind, itertools.count(1))
            while True:
                task_id = f"{kind}_{next(counter)}"
                if task_id not in self._entries:
                    return task_id

    def register(self, kind: str, *, description: str = "", name: str | None = None,
                 recipient: str = "main", call: str | None = None,
                 stop: Callable[[], Any] | None = None, task_id: str | None = None) -> TaskEntry:
        """Add a running entry (id from :meth:`new_id` unless ``task_id`` is given).

        ``stop()`` is what :meth:`stop` calls to ask it to stop; it should not block long."""
        task_id = task_id or self.new_id(kind)
        entry = TaskEntry(task_id, kind, description, name, recipient, call, stop_callback=stop)
        with self._lock:
            if task_id in self._entries:
                raise ValueError(f"task id {task_id} is taken")
            self._entries[task_id] = entry
        return entry

    def get(self, id_or_name: str) -> TaskEntry | None:
        """The entry with this id, else the latest one with this name (a running one first)."""
        with self._lock:
            entry = self._entries.get(id_or_name)
            if entry is not None:
                return entry
            named = [e for e in self._entries.values() if e.name == id_or_name]
        if not named:
            return None
        running = [e for e in named if e.running]
        return (running or named)[-1]

    def entries(self, kind: str | None = None, *, running: bool | None = None) -> list[TaskEntry]:
        """The entries, oldest first, optionally of one kind and running or not."""
        with self._lock:
            entries = list(self._entries.values())
        return [e for e in entries if (kind is None or e.kind == kind)
                and (running is None or e.running == running)]

    def finish(self, id_or_name: str, status: str = "completed", *, report: str | None = None,
               error: str | None = None, notification: str | None = None) -> TaskEntry:
        """Mark an entry ended (completed, failed or killed) and, given a ``notification``
        text, deliver it to the entry's recipient. Finishing twice keeps the first end.
        Raises LookupError for an unknown entry, ValueError for another status."""
        if status not in ENDED:
            raise ValueError(f"status must be one of {', '.join(ENDED)}, not {status!r}")
        entry = self.get(id_or_name)
        if entry is None:
            raise LookupError(f"No task found with ID: {id_or_name}")
        with self._lock:
            if not entry.running:
                return entry
            entry.status = status
            entry.report = report
            entry.error = error
            entry.ended = time.monotonic()
        if notification is not None:
            self.notify(entry.recipient, notification)
        if not entry.done.done():
            entry.done.set_result(entry)
        return entry

    def stop(self, id_or_name: str) -> bool:
        """Ask a running entry to stop (its stop callable); False when it is unknown, not
        running or cannot be stopped. Its end comes when whoever runs it finishes it."""
        entry = self.get(id_or_name)
        if entry is None or not entry.running or entry.stop_callback is None:
            return False
        entry.stop_callback()
        return True

    # -- notifications ------------------------------------------------------------------------

    def notify(self, recipient: str, text: str) -> None:
        """Queue ``text`` for ``recipient`` and tell ``on_notification``."""
        with self._changed:
            self._queues[recipient].append(text)
            self._changed.notify_all()
        callback = self.on_notification
        if callback is not None:
            try:
                callback(recipient, text)
            except Exception:  # noqa: BLE001
                log.exception("on_notification failed")

    def notifications(self, recipient: str = "main", block: bool = False,
                      timeout: float | None = None) -> list[str]:
        """Take every notification waiting for ``recipient`` (oldest first).

        With ``block``, wait for the first one up to ``timeout`` seconds (None: until one
        comes; 0: not at all); an empty list means none came in time. Raises InvalidArgument
        for a negative, NaN or infinite ``timeout``, a bool or a non-number."""
        timeout = poll_seconds(timeout, method="Tasks.notifications")
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._changed:
            queue = self._queues[recipient]
            while block and not queue:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    break
                self._changed.wait(remaining)
            items = list(queue)
            queue.clear()
        return items

    def pending(self, recipient: str = "main") -> int:
        """How many notifications wait for ``recipient``."""
        with self._lock:
            return len(self._queues.get(recipient, ()))
