"""Following the tasks of one server: :class:`TaskTracker` and its :class:`TaskFollower`\\ s.

No thread of its own: a task's next poll is an action on the process's timer
(:mod:`raider_sync.threads.timer`), which only sends ``tasks/get`` (the session sends it on
its own threads); the answer is read where every answer is read. Input requests, whose
handlers may block (a person answering), are answered on the server's input pool, the one
``input_required`` rounds use, with the same answer function.

Polls honour the server's ``pollIntervalMs`` (it may change with each answer), never more
often than every :data:`POLL_FLOOR` s nor less than every :data:`POLL_CAP` s
(:data:`POLL_DEFAULT` s when the server names none). A status the server sends unasked (the
2025-11-25 ``notifications/tasks/status``) counts as a poll's answer. Where ``tasks/get``
carries no result (2025-11-25), the wire is asked once for the task's outcome
(:meth:`~.wire.TaskWire.outcome_f`: ``tasks/result``, opened as soon as the task is
``input_required``, since the server asks its questions on that request's stream).
"""
from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from typing import Any, Callable

from ...errors import (
    McpError,
    TaskCancelled,
    TaskDetached,
    TaskError,
    TaskExpired,
    TaskFailed,
    ToolTimeout,
)
from ...protocol.codes import INTERNAL_ERROR, INVALID_PARAMS
from ...threads import timer
from ...threads.futures import Deadline, settle, wait_bounded
from ..eras.rounds import fulfil
from .future import TaskFuture
from .handle import TaskHandle
from .records import TaskStatus
from .wire import TaskWire
from .wire_v1 import status_notification

log = logging.getLogger("raider_sync.tasks")

POLL_FLOOR = 0.1
POLL_DEFAULT = 1.0
POLL_CAP = 30.0


def poll_delay(interval_ms: int | None) -> float:
    """Seconds until the next poll for a server's ``pollIntervalMs`` (None: the default)."""
    if interval_ms is None:
        return POLL_DEFAULT
    return min(POLL_CAP, max(POLL_FLOOR, interval_ms / 1000.0))


@dataclass
class FollowOptions:
    """How one call's task is followed: ``tool`` (its name as called), ``shape`` (the
    completed result as the call's result: ToolResult, ToolError when raising),
    ``on_status(TaskStatus)``, ``bound`` (s: how long the task is waited for), ``idle``
    (s, or None: a change of the task starts that wait anew, ``bound`` capping it)."""

    tool: str | None
    shape: Callable[[dict], Any]
    on_status: Callable[[TaskStatus], None] | None
    bound: float
    idle: float | None = None


class TaskTracker:
    """The tasks one McpServer follows. ``send(method, params, deadline, **options)`` is the
    server's request path; ``answer(method, params)`` its handlers of input requests;
    ``pool()`` the pool they run on; ``identity()`` what a handle says of the server
    (server, fingerprint, transport, instance, protocol_version); ``request_timeout()`` the
    seconds one ``tasks/*`` request may take. Thread-safe."""

    def __init__(self, *, send: Callable[..., Future], answer: Callable[[str, dict], Any],
                 pool: Callable[[], Executor], identity: Callable[[], dict],
                 request_timeout: Callable[[], float], name: str):
        self.send = send
        self.answer = answer
        self.pool = pool
        self.identity = identity
        self.request_timeout = request_timeout
        self.name = name
        self._lock = threading.Lock()
        self._live: set[TaskFollower] = set()
        self._closed = False

    def follow(self, future: TaskFuture, wire: TaskWire, status: TaskStatus,
               options: FollowOptions, handle: TaskHandle | None = None,
               announce: bool = True) -> "TaskFollower":
        """Follow the task ``status`` describes, settling ``future``; ``handle`` (a resume)
        carries the keys answered before. Returns at once. A tracker that is closed fails
        the future with TaskDetached."""
        if handle is None:
            handle = TaskHandle(era=wire.name, task_id=status.task_id, tool=options.tool,
                                created_at=status.created_at, ttl_ms=status.ttl_ms,
                                poll_interval_ms=status.poll_interval_ms, **self.identity())
        follower = TaskFollower(self, future, wire, status, handle, options)
        future._follower = follower
        with self._lock:
            closed = self._closed
            if not closed:
                self._live.add(follower)
        if closed:
            follower.detach("the server was stopped")
        elif future.cancelled():  # cancelled while the call was answered with the task
            follower.cancel_task()
        else:
            follower.start(announce)
        return follower

    def notified(self, method: str, params: Any) -> None:
        """A notification of the server: a task's status (v1 ``notifications/tasks/status``,
        which a server may send unasked) goes to the follower of that task, if any."""
        status = status_notification(method, params)
        if status is None:
            return
        with self._lock:
            followers = [f for f in self._live if f.status.task_id == status.task_id]
        for follower in followers:
            follower.notified(status)

    def discard(self, follower: "TaskFollower") -> None:
        with self._lock:
            self._live.discard(follower)

    def close(self) -> None:
        """Stop following every task: each future fails with TaskDetached (its handle
        resumes the task later). Nothing is sent; nothing waits."""
        with self._lock:
            self._closed = True
            live, self._live = list(self._live), set()
        for follower in live:
            follower.detach("the server was stopped")

    def reopen(self) -> None:
        with self._lock:
            self._closed = False


class TaskFollower:
    """Follows one task until it ends, the caller lets go or its time runs out."""

    def __init__(self, tracker: TaskTracker, future: TaskFuture, wire: TaskWire,
                 status: TaskStatus, handle: TaskHandle, options: FollowOptions):
        self.tracker = tracker
        self.future = future
        self.wire = wire
        self.status = status
        self.handle = handle
        self.options = options
        now = time.monotonic()
        self._cap = now + options.bound
        #: when the wait for the task ends (time.monotonic())
        self.deadline = min(now + options.idle, self._cap) if options.idle else self._cap
        self._lock = threading.Lock()
        self._timer: timer.Handle | None = None
        self._finished = False
        self._claimed = False                # the outcome was asked for (once)
        self._outcome: Future | None = None  # v1: the open tasks/result
        self._expires = status.expires_at()

    # -- the loop ------------------------------------------------------------------------

    def start(self, announce: bool) -> None:
        if announce:
            self._seen(self.status, first=True)
        else:
            self._schedule(0.0)  # a resume: look at once

    def _schedule(self, delay: float) -> None:
        with self._lock:
            if self._finished:
                return
            previous = self._timer  # a poll made now (poll()) replaces the one planned
            self._timer = timer.at(min(time.monotonic() + delay, self.deadline), self._tick)
        timer.cancel(previous)

    def _tick(self) -> None:
        """On the timer thread: the wait is over, or it is time to poll (send only)."""
        if self._finished:
            return
        if time.monotonic() >= self.deadline:
            self._time_out()
            return
        if self._expired():
            return
        try:
            get = self.wire.get_f(self.status.task_id, Deadline(self.tracker.request_timeout()))
        except Exception as exc:  # noqa: BLE001 - the future carries it
            self._finish(error=exc)
            return
        get.add_done_callback(self._got)

    def _got(self, get: Future) -> None:
        status = self._answered(get)
        if status is not None:
            self._seen(status)

    def _answered(self, request: Future) -> TaskStatus | None:
        """The TaskStatus a tasks/* request answered; None when the follow is over, or the
        request failed (then its error ended the follow)."""
        if self._finished or request.cancelled():
            return None
        error = request.exception()
        if error is not None:
            self._failed_request(error)
            return None
        return request.result()

    def _seen(self, status: TaskStatus, first: bool = False) -> None:
        """A status the server showed: tell ``on_status`` of a change, settle a terminal
        task, answer new input requests, poll again."""
        if self._finished:
            return
        with self._lock:  # a poll's answer and a notification may come at once: one is news
            changed = first or status.changed_from(self.status)
            self.status = status
        if changed:
            if not first and self.options.idle:  # a change is progress: the wait starts anew
                self.deadline = min(time.monotonic() + self.options.idle, self._cap)
            self._announce(status)
        if status.terminal:
            self._open_outcome(status)
            return
        if status.status == "input_required":
            if status.input_requests:
                self._answer(status.input_requests)
            elif self.wire.streams_input:  # the server asks on the open tasks/result
                self._open_outcome(status)
        self._schedule(poll_delay(status.poll_interval_ms))

    def notified(self, status: TaskStatus) -> None:
        """A status the server sent unasked (v1 ``notifications/tasks/status``)."""
        if status.task_id == self.status.task_id:
            self._seen(status)

    def _open_outcome(self, status: TaskStatus) -> None:
        """Ask once for what the task ends with (:meth:`TaskWire.outcome_f`; v1: the
        ``tasks/result`` that stays open until the task ended, on whose stream the server
        asks its questions), and settle the future with it. Polls go on meanwhile."""
        with self._lock:
            if self._finished or self._claimed:
                return
            self._claimed = True
        try:
            outcome = self.wire.outcome_f(status, Deadline(max(self._cap - time.monotonic(),
                                                               0.001)))
        except Exception as exc:  # noqa: BLE001 - the future carries it
            self._finish(error=exc)
            return
        with self._lock:
            self._outcome = outcome
            late = self._finished
        if late:
            outcome.cancel()
            return
        outcome.add_done_callback(self._outcome_done)

    def _outcome_done(self, outcome: Future) -> None:
        status = self._answered(outcome)
        if status is None:
            return
        if status.status != self.status.status:  # answered before a poll showed the end
            self.status = status
            self._announce(status)
        self._ended(status)

    def _announce(self, status: TaskStatus) -> None:
        on_status = self.options.on_status
        if on_status is None:
            return
        try:
            on_status(status)
        except Exception:  # noqa: BLE001 - a callback's failure does not end the task
            log.exception("%s: on_status failed", self.tracker.name)

    def _ended(self, status: TaskStatus) -> None:
        handle = self.handle
        # a v1 tool's isError result ends its task failed: a tool error, the call's result
        if status.status == "completed" or (status.status == "failed"
                                            and status.result is not None):
            try:
                self._finish(result=self.options.shape(dict(status.result or {})))
            except Exception as exc:  # noqa: BLE001 - ToolError, a result that is not one
                self._finish(error=exc)
        elif status.status == "failed":
            if self._expires is not None and time.time() >= self._expires:
                self._finish(error=self._expiry())
                return
            error = status.error or {}
            code = error.get("code")
            if not isinstance(code, int):
                code = INTERNAL_ERROR
            message = error.get("message")
            if not isinstance(message, str):
                message = status.status_message or "the task failed"
            self._finish(error=TaskFailed(code, message, error.get("data"), handle=handle))
        else:
            self._finish(error=TaskCancelled(
                INTERNAL_ERROR, f"task {status.task_id} was cancelled"
                + (f": {status.status_message}" if status.status_message else ""), handle=handle))

    # -- input -----------------------------------------------------------------------------

    def _answer(self, requests: dict) -> None:
        """Answer the input requests not answered before, on the input pool, then send
        them with tasks/update. A key is marked answered before its answer is made: it is
        never answered twice, however many polls show it meanwhile."""
        with self._lock:
            fresh = {k: v for k, v in requests.items() if k not in self.handle.answered_keys}
            if not fresh or self._finished:
                return
            self.handle = self.handle.answered(fresh)

        def run() -> None:
            try:
                responses = {key: fulfil("tools/call", key, request, self.tracker.answer)
                             for key, request in fresh.items()}
                if self._finished:
                    return
                seconds = self.tracker.request_timeout()
                wait_bounded(self.wire.update_f(self.status.task_id, responses,
                                                Deadline(seconds)), seconds)
            except McpError as exc:
                self._finish(error=TaskError(exc.code, f"task {self.status.task_id}: "
                                             f"{exc.message}", exc.data, handle=self.handle))
            except Exception as exc:  # noqa: BLE001 - the future carries it
                self._finish(error=exc)
        try:
            self.tracker.pool().submit(run)
        except RuntimeError:
            self.detach("the server was stopped")

    # -- ends --------------------------------------------------------------------------------

    def _expired(self) -> bool:
        """Whether the task's time to live passed (then the future failed TaskExpired)."""
        if self._expires is None or time.time() < self._expires:
            return False
        self._finish(error=self._expiry())
        return True

    def _expiry(self) -> TaskExpired:
        return TaskExpired(INVALID_PARAMS, f"task {self.status.task_id} expired: its time to "
                           f"live ({self.status.ttl_ms} ms from {self.status.created_at}) "
                           f"passed", handle=self.handle)

    def _failed_request(self, error: BaseException) -> None:
        if isinstance(error, McpError) and error.code == INVALID_PARAMS:
            self._finish(error=TaskExpired(error.code, f"task {self.status.task_id}: the "
                                           f"server no longer knows it ({error.message})",
                                           error.data, handle=self.handle))
        else:
            self._finish(error=error)

    def _time_out(self) -> None:
        if not self._stop():
            return
        self._send_cancel()
        error = ToolTimeout(f"MCP tool call {self.options.tool!r}: its task "
                            f"{self.status.task_id} did not end within "
                            f"{self.options.bound:g} s; it was cancelled")
        error.handle = self.handle
        if self.options.idle and time.monotonic() < self._cap:
            error.kind = "idle"
        settle(self.future, error=error)

    def poll_now(self, timeout: float | None) -> TaskStatus:
        """One tasks/get now, blocking up to ``timeout`` s (default the request timeout)."""
        seconds = timeout if timeout is not None else self.tracker.request_timeout()
        get = self.wire.get_f(self.status.task_id, Deadline(seconds))
        try:
            status = wait_bounded(get, seconds)
        except McpError as exc:
            self._failed_request(exc)
            raise
        self._seen(status)
        return status

    def detach(self, why: str = "detached by the caller") -> TaskHandle | None:
        """Stop following; the future fails with TaskDetached. The handle, or None when the
        future was settled already."""
        if not self._stop():
            return None
        handle = self.handle
        settle(self.future, error=TaskDetached(INTERNAL_ERROR, f"task {handle.task_id} of "
                                               f"{handle.server!r} no longer followed: {why}; "
                                               f"resume it with its handle", handle=handle))
        return handle

    def cancel_task(self) -> None:
        """Stop following and send tasks/cancel (its failure is only logged: the caller's
        future is cancelled either way)."""
        if self._stop():
            self._send_cancel()

    def _send_cancel(self) -> None:
        task_id = self.status.task_id
        try:
            sent = self.wire.cancel_f(task_id, Deadline(self.tracker.request_timeout()))
        except Exception as exc:  # noqa: BLE001
            log.warning("%s: tasks/cancel of %s failed: %s", self.tracker.name, task_id, exc)
            return

        def done(answer: Future) -> None:
            if not answer.cancelled() and answer.exception() is not None:
                log.warning("%s: tasks/cancel of %s failed: %s", self.tracker.name, task_id,
                            answer.exception())
        sent.add_done_callback(done)

    def _stop(self) -> bool:
        """Mark the follow over (once: whether this call did it) and drop its timer."""
        with self._lock:
            if self._finished:
                return False
            self._finished = True
            handle, self._timer = self._timer, None
            outcome = self._outcome
        timer.cancel(handle)
        if outcome is not None:
            outcome.cancel()  # v1: let go of the open tasks/result (the task runs on)
        self.tracker.discard(self)
        return True

    def _finish(self, *, result: Any = None, error: BaseException | None = None) -> None:
        if self._stop():
            settle(self.future, result=result, error=error)
