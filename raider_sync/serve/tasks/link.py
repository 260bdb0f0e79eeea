"""How the handler of a call that may become a task reaches its client: :class:`TaskLink`.

A :class:`~raider_sync.serve.context.ClientLink` in two phases, one after the other:

- before the task begins, the call is an ordinary request of the stateless era: log
  messages and progress go out on the request's own stream, and a question not yet answered
  ends the round with ``input_required`` (the :class:`~..client_links.RoundsLink` it wraps);
- once the task began (:meth:`TaskLink.begin_task`, called by the serving side as the call
  arrives, or by the handler through ``ctx.begin_task()``), the request has been answered
  with the task. A question then parks the task in ``input_required``: the questions are
  shown by ``tasks/get`` and the handler's thread blocks until ``tasks/update`` delivers
  every answer. Progress messages become the task's status message; log messages, which a
  task has no stream for, go to Python's logging.
"""
from __future__ import annotations

import threading
from typing import Callable

from ...errors import McpError, RequestTimeout
from ...protocol.codes import REQUEST_CANCELLED
from ..client_links import RoundsLink
from ..context import InputRequest, log_locally
from .store import TaskStore

#: the seconds a task's question waits for its answer when the task never expires
NO_TTL_ASK_TIMEOUT = 24 * 3600.0


class TaskLink:
    """The link of one call: ``rounds`` before the task begins; ``begin(message)`` creates
    the task (its id, or None when the call can no longer become one); ``on_progress`` is
    the request's progress sender, for the time before. Thread-safe."""

    def __init__(self, store: TaskStore, rounds: RoundsLink,
                 begin: Callable[[str | None], str | None],
                 on_progress: Callable[..., None] | None = None):
        self._store = store
        self._rounds = rounds
        self._begin = begin
        self._on_progress = on_progress
        self._lock = threading.Lock()
        #: the task's id once it began
        self.task_id: str | None = None
        self._issued: set[str] = set()  # every question key of the task's life

    def begin_task(self, message: str | None = None) -> bool:
        """Make the call a task, once; whether it is one. Does not block (the store's
        create aside)."""
        with self._lock:
            if self.task_id is None:
                self.task_id = self._begin(message)
            return self.task_id is not None

    def notify(self, method: str, params: dict) -> None:
        task_id = self.task_id
        if task_id is None:
            self._rounds.notify(method, params)
        elif method == "notifications/message":  # a task has no stream to send it on
            log_locally(str(params.get("level")), params.get("data"), params.get("logger"))

    def progress(self, progress: float, total: float | None = None,
                 message: str | None = None) -> None:
        """The context's progress reporter: the request's progress before the task began,
        the task's status message after (a report without a message changes nothing)."""
        task_id = self.task_id
        if task_id is None:
            if self._on_progress is not None:
                self._on_progress(progress, total, message)
        elif message:
            self._store.set_message(task_id, message)

    def ask(self, requests: dict[str, InputRequest], timeout: float) -> dict[str, dict]:
        """Before the task: the round's answers, or InputRequired. In the task: park it in
        input_required until every answer came, blocking up to ``timeout`` s. Raises
        RequestTimeout when they did not come in time, McpError -32800 when the task ended
        meanwhile (cancelled, expired, its server closed)."""
        task_id = self.task_id
        if task_id is None:
            return self._rounds.ask(requests, timeout)
        keys = {self._unique(key): key for key in requests}
        self._store.request_input(task_id, {wire: requests[key].wire()
                                            for wire, key in keys.items()})
        answers = self._store.take_responses(task_id, list(keys), timeout)
        if answers is None:
            record = self._store.get(task_id)
            if record is None or record.terminal:
                raise McpError(REQUEST_CANCELLED, "the task ended while it waited for the "
                               "client's answers")
            raise RequestTimeout(f"the client did not answer {', '.join(keys)} within "
                                 f"{timeout:g} s")
        return {key: answers[wire] for wire, key in keys.items()}

    def _unique(self, key: str) -> str:
        """``key``, or ``key-2``, ``key-3``...: a question key is never used twice in a
        task's life (a client remembers the keys it answered)."""
        with self._lock:
            wire, count = key, 1
            while wire in self._issued:
                count += 1
                wire = f"{key}-{count}"
            self._issued.add(wire)
            return wire


def ask_timeout(ttl_ms: int | None) -> float:
    """How long a task's question waits: its time to live (a day when it has none)."""
    return NO_TTL_ASK_TIMEOUT if ttl_ms is None else ttl_ms / 1000.0

