"""The future of a tool call that may become a task: :class:`TaskFuture`.

    future = server.call_tool_f("mcp__jobs__report", {"year": 2026}, task_timeout=600)
    future.task_id          # None until the server made the call a task
    future.status           # "working", "input_required", ... (None until then)
    future.poll()           # one tasks/get now: the TaskStatus
    handle = future.detach()   # stop following, the task runs on: resume it with the handle
    future.result(60)       # the ToolResult, as call_tool gives it

Until the server answers the call with a task, a TaskFuture is the call's future as it always
was. Once it is a task, a :class:`~.poller.TaskFollower` (the server's poller) follows the task
and settles this future: with the tool's result (completed), TaskFailed, TaskExpired,
TaskCancelled (not cancelled by this caller), ToolTimeout (``task_timeout`` passed:
``tasks/cancel`` sent, ``.handle`` set) or TaskDetached.
"""
from __future__ import annotations

import time
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from ...errors import RequestTimeout
from ...threads.futures import WAIT_MARGIN_S, settle
from ..retries import Repeats
from .handle import TaskHandle
from .records import TaskStatus


class Created:
    """What a tools/call's request future holds when the server made the call a task: the
    task as created, the wire it speaks and ``shape`` (its result as the call's result)."""

    __slots__ = ("status", "wire", "shape")

    def __init__(self, status: TaskStatus, wire: Any, shape: Any):
        self.status = status
        self.wire = wire
        self.shape = shape


class TaskFuture(Future):
    """A :class:`concurrent.futures.Future` of a tool call's :class:`~raider_sync.ToolResult`,
    through the task the server may make of the call. Thread-safe, like Future."""

    def __init__(self) -> None:
        super().__init__()
        self._request: Future | None = None  # the tools/call request, until it is answered
        self._follower: Any = None           # the task's follower, once a task
        self._relay: TaskFuture | None = None  # the future this one mirrors (a hub's reroute)

    # -- what the task is ------------------------------------------------------------------

    def _current(self) -> "TaskFuture":
        relay = self._relay
        return relay._current() if relay is not None else self

    @property
    def task_id(self) -> str | None:
        """The task's id, None while the call is not (or never becomes) a task."""
        follower = self._current()._follower
        return follower.status.task_id if follower is not None else None

    @property
    def task_status(self) -> TaskStatus | None:
        """The task as last seen (None while the call is not a task)."""
        follower = self._current()._follower
        return follower.status if follower is not None else None

    @property
    def status(self) -> str | None:
        """The task's status as last seen (None while the call is not a task)."""
        record = self.task_status
        return record.status if record is not None else None

    @property
    def status_message(self) -> str | None:
        record = self.task_status
        return record.status_message if record is not None else None

    @property
    def handle(self) -> TaskHandle | None:
        """What :meth:`~raider_sync.McpServer.resume_task` needs (None while not a task)."""
        follower = self._current()._follower
        return follower.handle if follower is not None else None

    # -- acting on it ------------------------------------------------------------------------

    def poll(self, timeout: float | None = None) -> TaskStatus | None:
        """One ``tasks/get`` now (blocking up to ``timeout`` s, default the call timeout);
        the task as it is, after ``on_status`` heard of a change. None while the call is not a
        task. Raises what the request raises (McpError, RequestTimeout, NotConnected)."""
        follower = self._current()._follower
        return follower.poll_now(timeout) if follower is not None else None

    def detach(self) -> TaskHandle | None:
        """Stop following the task without cancelling it: the future fails with
        TaskDetached (carrying the handle), and the handle is returned. A call that is not a
        task (yet), or a future already done, is left as it is: None."""
        current = self._current()
        follower = current._follower
        return follower.detach() if follower is not None else None

    def cancel(self) -> bool:
        """Cancel the call. Before it is a task: as any request's future (the server is told
        with ``notifications/cancelled``). Once a task: ``tasks/cancel`` is sent and the
        future is cancelled (True). False when the future is done already."""
        relay = self._relay
        if relay is not None:
            relay.cancel()
            return super().cancel()
        follower = self._follower
        if follower is not None:
            if self.done():
                return False
            follower.cancel_task()
            return super().cancel()
        if not super().cancel():
            return False
        request = self._request
        if request is not None:
            request.cancel()
        return True

    def wait_result(self, bound: float) -> Any:
        """The result, waiting ``bound`` s for the call to be answered (or made a task), then
        as long as the task's own deadline allows, plus a margin against a stuck thread
        (then the call is cancelled and RequestTimeout raised). Raises what the future
        holds."""
        end = time.monotonic() + bound + WAIT_MARGIN_S
        while True:
            try:
                return self.result(max(0.0, end - time.monotonic()))
            except FutureTimeout:
                if self.done():
                    raise
                follower = self._current()._follower
                later = (follower.deadline + WAIT_MARGIN_S) if follower is not None else end
                if later > time.monotonic():
                    end = later
                    continue
                self.cancel()
                raise RequestTimeout(f"no answer within {bound:g} s") from None

    # -- how the server side drives it --------------------------------------------------------

    def attach(self, request: Future, on_created: Any,
               repeats: Repeats | None = None) -> "TaskFuture":
        """Follow ``request`` (the tools/call's future): its result or error becomes this
        future's, unless it holds a :class:`Created`; then ``on_created(self, status)`` makes
        the follower. When ``request`` fails and there are ``repeats`` (the call's
        :data:`~raider_sync.client.retries.Repeats`), their future is followed instead.
        Starts nothing."""
        self._request = request
        request.add_done_callback(lambda done: self._answered(done, on_created, repeats))
        return self

    def _answered(self, done: Future, on_created: Any,
                  repeats: Repeats | None) -> None:
        if done.cancelled():
            super().cancel()
            return
        error = done.exception()
        if error is not None:
            if repeats is None:
                settle(self, error=error)
                return
            again = repeats(error)  # settled at once when there is no repeat
            self.attach(again, on_created)
            if self.cancelled():  # cancelled while the first attempt failed
                again.cancel()
            return
        value = done.result()
        if isinstance(value, Created):
            try:
                on_created(self, value)  # also when cancelled meanwhile: it cancels the task
            except Exception as exc:  # noqa: BLE001 - the future carries it
                settle(self, error=exc)
            return
        settle(self, result=value)

    def relay(self, other: "TaskFuture") -> None:
        """Mirror ``other`` (a call sent again elsewhere): its task, its cancel, its detach."""
        self._relay = other

