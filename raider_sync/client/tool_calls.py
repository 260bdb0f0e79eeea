"""Tool calls of one server: sent, shaped, sent again after a broken connection, and
followed when the server makes them tasks.

:class:`ToolCalls` is a part of :class:`~raider_sync.McpServer`, as
:class:`~raider_sync.client.asks.Asks` is for every other request: the face keeps the public
methods (``call_tool_f``, ``call_tool``, ``resume_task_f``, ``resume_task``) and their docs,
and hands them here. A call goes the one way every request goes (a timeout checked by the
face's rule, ``Connection.when_up_f``, the era's ``request_f``); around it, the deadlines that
understand progress, the tasks a call may become (:mod:`raider_sync.client.tasks`) and the
safe retries (:mod:`raider_sync.client.retries`).
"""
from __future__ import annotations

import functools
import time
from concurrent.futures import Future
from typing import Any, Callable

from ..errors import (
    InvalidArgument,
    McpError,
    RaiderError,
    ToolTimeout,
    TransportError,
    UnknownTool,
)
from ..jsonrpc import INTERNAL_ERROR, ProgressCallback, Session
from ..threads.futures import Deadline, failed, resolved
from .calls import seconds, tool_arguments, unknown_tool_message
from .catalog import Catalog
from .connection import Connection
from .content import limit_content, strip_private_meta
from .eras.era_seam import Era
from .results import ToolResult
from .retries import (
    RETRY_DELAY,
    Repeats,
    Retrying,
    Waiting,
    lost_in_flight,
    never_sent,
    retry_choice,
    safe_to_repeat,
)
from .task_identity import TaskIdentity
from .tasks import Created, FollowOptions, TaskFuture, TaskHandle, TaskStatus, TaskTracker
from .tasks.choice import wire_for, wire_named

#: the default cap of a call whose clock progress resets: the greater of its timeout and this
DEFAULT_MAX_TOTAL = 3600.0


class ToolCalls:
    """The tool calls of ``owner`` (the :class:`~raider_sync.McpServer`, whose options
    (``raise_on_error``, ``retry``, ``tasks``...) and name are read at each call), on its
    ``connection`` and ``catalog``; ``tracker`` follows the calls that became tasks,
    ``waiting`` holds the calls waiting to be sent again (the face's stop fails them).
    Thread-safe."""

    def __init__(self, owner: Any, *, connection: Connection, catalog: Catalog,
                 tracker: TaskTracker, waiting: Waiting):
        self.owner = owner
        self.connection = connection
        self.catalog = catalog
        self.tracker = tracker
        self.waiting = waiting
        #: what a task's handle says of this server, and whether a handle is its to follow
        self.identity = TaskIdentity(owner)
        self._wire: tuple[Any, Any] = (None, None)  # (era, its tasks wire): chosen once per era
        self._message: tuple[float, str] = (0.0, "")  # (seconds, the timeout's message)

    def call_tool_f(self, name: str, arguments: dict | str | None = None, *,
                    timeout: float | None = None,
                    on_progress: ProgressCallback | None = None,
                    raise_on_error: bool | None = None,
                    reset_on_progress: bool | None = None,
                    max_total: float | None = None, task_timeout: float | None = None,
                    on_status: Callable[[TaskStatus], None] | None = None,
                    tasks: Any = None, retry: str | None = None) -> TaskFuture:
        """See :meth:`McpServer.call_tool_f`."""
        try:
            bound, idle, cap, mode, policy = self._choices(
                timeout, on_progress, reset_on_progress, max_total, task_timeout, tasks, retry,
                "call_tool_f")
        except RaiderError as exc:
            future = TaskFuture()
            future.set_exception(exc)
            return future
        request, repeats = self._call_tool_f(name, arguments, bound, on_progress,
                                             raise_on_error, inline=False, idle=idle, cap=cap,
                                             mode=mode, retry=policy)
        return TaskFuture().attach(request, lambda future, created: self._follow_created(
            future, created, name, bound, cap, idle, task_timeout, on_status), repeats)

    def call_tool(self, name: str, arguments: dict | str | None = None, *,
                  timeout: float | None = None,
                  on_progress: ProgressCallback | None = None,
                  raise_on_error: bool | None = None,
                  reset_on_progress: bool | None = None,
                  max_total: float | None = None, task_timeout: float | None = None,
                  on_status: Callable[[TaskStatus], None] | None = None,
                  tasks: Any = None, retry: str | None = None) -> dict:
        """See :meth:`McpServer.call_tool`."""
        bound, idle, cap, mode, policy = self._choices(
            timeout, on_progress, reset_on_progress, max_total, task_timeout, tasks, retry,
            "call_tool")
        request, repeats = self._call_tool_f(name, arguments, bound, on_progress,
                                             raise_on_error, inline=True, idle=idle, cap=cap,
                                             mode=mode, retry=policy)
        total = bound if cap is None else bound + cap  # a start, then the cap
        try:
            value = self.owner._wait(request, total)
        except Exception as exc:  # noqa: BLE001 - repeated when the policy says so, else raised
            if repeats is None:
                raise
            value = self.owner._wait(repeats(exc), total)
        if type(value) is not Created:
            return value
        future = TaskFuture()  # the call became a task: follow it here
        follower = self._follow_created(future, value, name, bound, cap, idle, task_timeout,
                                        on_status)
        try:
            return future.wait_result(max(0.0, follower.deadline - time.monotonic()))
        except BaseException:
            if not future.done():
                future.cancel()  # tasks/cancel
            raise

    def _choices(self, timeout: Any, on_progress: ProgressCallback | None, reset: Any,
                 max_total: Any, task_timeout: Any, tasks: Any, retry: Any, method: str
                 ) -> tuple[float, float | None, float | None, Any, str]:
        """A call's options checked once, by the face's rules: ``(bound, idle, cap, tasks
        mode, retry policy)``. Raises InvalidArgument naming ``McpServer.<method>``."""
        owner = self.owner
        # the options left out (the usual call) are the server's, checked when it was made
        bound = owner.call_timeout if timeout is None else owner._bound(timeout, method)
        if on_progress is None and reset is None and owner.reset_on_progress is None:
            idle = cap = None  # no progress asked for: the timeout bounds the whole call
        else:
            idle, cap = self._progress_bounds(bound, on_progress, reset, max_total, method)
        if task_timeout is None and tasks is None:
            mode = owner.tasks
        else:
            mode = self._task_choices(task_timeout, tasks, method)
        policy = owner.retry if retry is None else retry_choice(retry, f"McpServer.{method}")
        return bound, idle, cap, mode, policy

    def _task_choices(self, task_timeout: Any, tasks: Any, method: str) -> Any:
        """The call's ``tasks`` choice (the server's when None); raises InvalidArgument for
        a ``task_timeout`` or ``tasks`` that cannot be used."""
        if task_timeout is not None:
            seconds(task_timeout, 1.0, "task_timeout", f"McpServer.{method}")
        return self.owner.tasks if tasks is None else tasks_choice(tasks, f"McpServer.{method}")

    def _follow_created(self, future: TaskFuture, created: Created, name: str, bound: float,
                        cap: float | None, idle: float | None, task_timeout: Any,
                        on_status: Any) -> Any:
        """Follow the task a call became (see :meth:`McpServer.call_tool_f` for the bounds)."""
        task_bound: float
        if task_timeout is not None or self.owner.task_timeout is not None:
            task_bound = task_timeout if task_timeout is not None else self.owner.task_timeout or 0.0
            idle = None
        else:
            task_bound = cap if cap is not None else bound
        options = FollowOptions(tool=name, shape=created.shape, bound=task_bound, idle=idle,
                                on_status=on_status if on_status is not None
                                else self.owner.on_task_status)
        return self.tracker.follow(future, created.wire, created.status, options)

    def _progress_bounds(self, bound: float, on_progress: ProgressCallback | None,
                         reset: bool | None, max_total: Any, method: str
                         ) -> tuple[float | None, float | None]:
        """``(idle, cap)`` of a call: the silence it may keep between progress
        notifications and its total bound, or ``(None, None)`` when ``bound`` is its total
        bound (no reset on progress). Raises InvalidArgument for a ``max_total`` that is not
        a positive number of seconds."""
        if reset is None:
            reset = self.owner.reset_on_progress
        if reset is None:
            reset = on_progress is not None
        if not reset:
            return None, None
        default = self.owner.max_total if self.owner.max_total is not None else max(bound, DEFAULT_MAX_TOTAL)
        cap = seconds(max_total, default, "max_total", f"McpServer.{method}")
        return min(bound, cap), cap

    def _call_tool_f(self, name: str, arguments: Any, bound: float,
                     on_progress: ProgressCallback | None, raise_on_error: bool | None,
                     inline: bool, idle: float | None = None,
                     cap: float | None = None, mode: Any = "auto",
                     retry: str = "never") -> tuple[Future, Repeats | None]:
        """The request of :meth:`McpServer.call_tool_f`; ``bound`` is the timeout already checked; with
        ``idle`` and ``cap``, the call's silence is bounded by ``idle`` (a start it waits for
        by ``bound``) and the call by ``cap``; ``mode`` the call's ``tasks`` choice. A future
        of the ToolResult, or of a :class:`Created` when the server made the call a task; with
        it, the call's :data:`~raider_sync.client.retries.Repeats` when ``retry`` allows any."""
        try:  # a dict, the usual arguments, is copied here: the caller may change it
            arguments = dict(arguments) if type(arguments) is dict else tool_arguments(arguments, name)
        except RaiderError as exc:
            return failed(exc), None
        raising = self.owner.raise_on_error if raise_on_error is None else raise_on_error
        catalog = self.catalog

        def send(session: Session, era: Era, deadline: Deadline, inline: bool) -> Future:
            original = catalog.original.get(name)
            if original is None:
                original = catalog.original_of(name)  # the name on the server, or unknown
                if original is None:
                    return failed(UnknownTool(unknown_tool_message(
                        f"MCP server {self.owner.name!r} has no tool {name!r}", name,
                        self.owner.tool_names)))
            options: dict[str, Any] = {}
            total = bound
            if idle is not None and cap is not None:  # silence bounded, the whole call capped
                deadline, total = whole, cap
                options["idle"] = idle
            params: dict[str, Any] = {"name": original, "arguments": arguments}
            shape = functools.partial(self.shape_result, name=name, original=original,
                                      raising=raising)
            transform: Callable[[Any], Any] = shape
            held, wire = self._wire
            if held is not era:
                wire = self._task_wire(era)
            if wire is not None:  # the call may become a task
                params = wire.declare(params, catalog.listed(original) if wire.needs_tool
                                      else None, mode)

                def transform(result: Any) -> Any:
                    created = wire.created(result)
                    return shape(result) if created is None else Created(created, wire, shape)
            return era.request_f(
                "tools/call", params,
                deadline=deadline, timeout_error=ToolTimeout,
                on_progress=on_progress if on_progress is not None or idle is None
                else _ignore_progress,  # asked for all the same: progress resets the clock
                timeout_message=self._timeout_message(total),
                transform=transform,
                inline=inline, wait=inline, **options)  # inline: call_tool waits next

        if idle is not None and cap is not None:
            whole = Deadline(cap)
            start = Deadline(bound)  # the wait for a start, and the first attempt's
        else:
            whole = start = Deadline(bound)
        # the first attempt alone, as a call without retries makes it: a blocking call waits
        # on it (no second future settled on the caller's thread, where Ctrl-C lands), a
        # TaskFuture follows it (no second future settled on the way); either asks for the
        # repeats only once it failed
        first = self.connection.when_up_f(self.owner, start, send, inline, ToolTimeout,
                                          "MCP tool call")
        if retry == "never" or self.owner.max_attempts <= 1:
            return first, None
        return first, lambda error: self._retrying(name, whole, start, send, retry).after(error)

    def _retrying(self, name: str, whole: Deadline, start: Deadline, send: Any,
                  retry: str) -> Retrying:
        """The attempts of a call of ``name`` within ``whole`` (the first one's wait for a
        start within ``start``), each one sent on the connection by ``send`` and repeated as
        the ``retry`` policy allows."""
        catalog = self.catalog

        def attempt(deadline: Deadline, first: bool) -> Future:
            return self.connection.when_up_f(self.owner, start if first else deadline, send,
                                              False, ToolTimeout, "MCP tool call")

        def may_repeat(error: BaseException) -> bool:
            if never_sent(error):
                return True
            if not lost_in_flight(error):
                return False
            original = catalog.original_of(name)
            return retry == "always" or (original is not None
                                         and safe_to_repeat(catalog.listed(original)))

        def back_in(error: BaseException, attempts: int) -> float | None:
            if isinstance(error, TransportError):  # HTTP: nothing to wait for but a moment
                return RETRY_DELAY * 2 ** (attempts - 1)
            return self.connection.back_in()

        def retried(attempts: int, error: BaseException) -> None:
            self.owner.retries += 1
            self.owner.log.warning("%s: %s met a broken connection (%s); sending it again "
                             "(attempt %d of %d)", self.owner.name, name, error, attempts + 1,
                             self.owner.max_attempts)
            if self.owner.telemetry is not None:
                self.owner.telemetry.retried(self.owner, "tools/call", name)

        return Retrying(attempt, whole, max_attempts=self.owner.max_attempts,
                        may_repeat=may_repeat, back_in=back_in, on_retry=retried,
                        name=self.owner.key, waiting=self.waiting)

    def _timeout_message(self, seconds: float) -> str:
        """What a ToolTimeout after ``seconds`` says; the last one is kept, as most calls
        of a server have the same timeout."""
        held, message = self._message
        if held != seconds:
            message = f"MCP tool call timed out after {seconds:g} s"
            self._message = (seconds, message)
        return message

    def _task_wire(self, era: Era) -> Any:
        """The tasks wire of ``era``'s connection (None: its calls do not become tasks),
        chosen once per connection (:func:`~raider_sync.client.tasks.choice.wire_for`)."""
        held, wire = self._wire
        if held is not era:
            wire = wire_for(era.name, self.owner.capabilities, self.owner._task_send)
            self._wire = (era, wire)
        return wire

    def resume_task_f(self, handle: TaskHandle, *, timeout: float | None = None,
                      task_timeout: float | None = None,
                      on_status: Callable[[TaskStatus], None] | None = None,
                      raise_on_error: bool | None = None) -> TaskFuture:
        """See :meth:`McpServer.resume_task_f`."""
        return self._resume_task_f(handle, timeout, task_timeout, on_status, raise_on_error,
                                   "resume_task_f")

    def _resume_task_f(self, handle: TaskHandle, timeout: Any, task_timeout: Any,
                       on_status: Any, raise_on_error: bool | None, method: str) -> TaskFuture:
        future = TaskFuture()
        try:
            if not isinstance(handle, TaskHandle):
                raise InvalidArgument(f"handle must be a TaskHandle (TaskHandle.from_json), not "
                                      f"{type(handle).__name__}")
            bound = self.owner._bound(timeout, method)
            self._task_choices(task_timeout, None, method)
            self.identity.check(handle, started=False)
        except RaiderError as exc:
            future.set_exception(exc)
            return future
        raising = self.owner.raise_on_error if raise_on_error is None else raise_on_error
        tool = handle.tool or ""

        def shape(result: Any) -> Any:
            return self.shape_result(result, tool, self.catalog.original_of(tool) or "",
                                      raising)
        status = TaskStatus(handle.task_id, "working", created_at=handle.created_at,
                            ttl_ms=handle.ttl_ms, poll_interval_ms=handle.poll_interval_ms)

        def send(session: Session, era: Era, deadline: Deadline, inline: bool) -> Future:
            try:
                self.identity.check(handle, started=True)
                wire = wire_named(handle.era, era.name, self.owner._task_send, handle)
            except RaiderError as exc:
                return failed(exc)
            return resolved(Created(status, wire, shape))

        def follow(future: TaskFuture, created: Created) -> None:
            task_bound: float
            if task_timeout is not None or self.owner.task_timeout is not None:
                task_bound = task_timeout if task_timeout is not None else self.owner.task_timeout or 0.0
            else:
                task_bound = self.owner.call_timeout
            self.tracker.follow(future, created.wire, created.status, FollowOptions(
                tool=tool, shape=shape, bound=task_bound, on_status=on_status
                if on_status is not None else self.owner.on_task_status), handle=handle,
                announce=False)

        return future.attach(self.connection.when_up_f(self.owner, Deadline(bound), send, False,
                                                        ToolTimeout, "resuming a task"), follow)

    def resume_task(self, handle: TaskHandle, *, timeout: float | None = None,
                    task_timeout: float | None = None,
                    on_status: Callable[[TaskStatus], None] | None = None,
                    raise_on_error: bool | None = None) -> Any:
        """See :meth:`McpServer.resume_task`."""
        bound = self.owner._bound(timeout, "resume_task")
        future = self._resume_task_f(handle, bound, task_timeout, on_status, raise_on_error,
                                     "resume_task")
        try:
            return future.wait_result(bound)
        except KeyboardInterrupt:
            future.detach()  # a resume lets go of the task, as it found it: running
            raise

    def shape_result(self, result: Any, name: str = "", original: str = "",
                      raising: bool = False) -> dict:
        if not isinstance(result, dict):
            raise McpError(INTERNAL_ERROR,
                           f"tools/call answered with {type(result).__name__}, not an object")
        if "_meta" in result:
            result = strip_private_meta(result)
        result = ToolResult(result, tool=name,
                            output_schema=self.catalog.output_schemas.get(original))
        content = result.get("content")
        if isinstance(content, list):  # see McpServer.limit_content
            result["content"] = limit_content(content, bool(result.get("isError")),
                                              max_output_tokens=self.owner.max_output_tokens)
        return result.raise_for_error() if raising else result


def tasks_choice(value: Any, method: str) -> Any:
    """A ``tasks`` choice as given; raises InvalidArgument naming it for another."""
    if value is None or value == "auto":
        return "auto"
    if isinstance(value, bool):
        return value
    raise InvalidArgument(f'tasks of {method} must be "auto", True or False, not {value!r}')


def _ignore_progress(progress: float, total: float | None, message: str | None) -> None:
    """The progress callback of a call that resets its clock on progress but was given
    none: progress is asked for, and only counted."""
