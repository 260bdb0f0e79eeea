"""A task store whose changes are told: what ``notifications/tasks`` is made from.

    store = WatchedStore(MemoryTaskStore(), changed)   # changed(detailed_task) after a change

Each method that may change a task's status or status message (create, set_message,
request_input, respond, take_responses, settle) is passed on, then the task read again:
when its status or message differs from what was last told, ``changed`` gets the task as
``tasks/get`` shows it (the DetailedTask). ``changed`` must not block; a failure of it is
logged.
"""
from __future__ import annotations

import collections
import logging
import threading
from typing import Any, Callable, Iterable

from .store import TaskRecord, TaskStore

log = logging.getLogger("raider_sync.serve.tasks")

#: tasks whose last told state is remembered (a task older than that may be told twice)
TOLD_KEPT = 4096


class WatchedStore:
    """``store`` with its changes told to ``changed``. Thread-safe as ``store`` is."""

    def __init__(self, store: TaskStore, changed: Callable[[dict], None]):
        self.store = store
        self._changed = changed
        self._lock = threading.Lock()
        #: what was last told of each task (the oldest forgotten past TOLD_KEPT)
        self._told: collections.OrderedDict[str, tuple[Any, Any]] = collections.OrderedDict()

    def create(self, record: TaskRecord) -> None:
        self.store.create(record)
        self._tell(record.task_id)

    def get(self, task_id: str) -> TaskRecord | None:
        return self.store.get(task_id)

    def set_message(self, task_id: str, message: str) -> None:
        self.store.set_message(task_id, message)
        self._tell(task_id)

    def request_input(self, task_id: str, requests: dict[str, dict]) -> None:
        self.store.request_input(task_id, requests)
        self._tell(task_id)

    def respond(self, task_id: str, responses: dict[str, dict]) -> None:
        self.store.respond(task_id, responses)
        self._tell(task_id)

    def take_responses(self, task_id: str, keys: Iterable[str],
                       timeout: float) -> dict[str, dict] | None:
        taken = self.store.take_responses(task_id, keys, timeout)
        self._tell(task_id)
        return taken

    def settle(self, task_id: str, status: str, *, result: dict | None = None,
               error: dict | None = None, message: str | None = None) -> bool:
        settled = self.store.settle(task_id, status, result=result, error=error,
                                    message=message)
        self._tell(task_id)
        return settled

    def close(self) -> None:
        self.store.close()

    def _tell(self, task_id: str) -> None:
        record = self.store.get(task_id)
        with self._lock:
            if record is None:
                self._told.pop(task_id, None)
                return
            detailed = record.detailed()
            seen = (detailed.get("status"), detailed.get("statusMessage"))
            if self._told.get(task_id) == seen:
                return
            self._told[task_id] = seen
            self._told.move_to_end(task_id)
            while len(self._told) > TOLD_KEPT:
                self._told.popitem(last=False)
        try:
            self._changed(detailed)
        except Exception:  # noqa: BLE001 - a listener's failure does not fail the task
            log.exception("telling a task's change failed")
