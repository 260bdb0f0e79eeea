"""Tools run as tasks, and the ``tasks/*`` methods that show them: :class:`ServedTasks`.

    tasks = ServedTasks("local", ttl=3600, poll_interval=1.0)
    tasks.call(tool, params, prepare, answers=..., notify=..., on_progress=..., timeout=60)
    tasks.answer("tasks/get", params)      # the DetailedTask, or McpError
    tasks.close(timeout=5)                 # running tasks fail; their threads are joined

A ``tools/call`` of the stateless era runs as a task when its ``_meta`` declares the
``io.modelcontextprotocol/tasks`` extension and the tool was registered with
``task="optional"`` or ``"required"``; a ``required`` tool called without the declaration
is refused with -32021 (data naming the extension), an ``optional`` one runs as any call.

The handler runs on a thread of its own. For a tool whose task begins with the call
(``task_begins="call"``) the task is created (kept in the store, so that ``tasks/get``
finds it) before the client is answered with it, and before the handler starts. For one whose
handler begins it (``task_begins="handler"``), the request waits (up to the tool server's
call timeout) for the first of: the handler calls ``ctx.begin_task()`` (answered with the
task), the handler ends a round with a question (``input_required``), the handler returns
(its result answers the call, no task made).

Once a task: what the handler returns completes it (an ``isError`` result too), an
McpError it raises fails it with that error; ``tasks/cancel`` marks it cancelled at once and
sets the handler's ``ctx.cancelled`` (what the handler returns afterwards is dropped).
"""
from __future__ import annotations

import itertools
import logging
import threading
import time
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from functools import partial
from typing import Any, Callable

from ...client.eras.modern import META_CAPABILITIES
from ...client.results import text_result
from ...errors import InvalidArgument, McpError, ToolTimeout
from ...protocol.codes import INTERNAL_ERROR, INVALID_PARAMS, MISSING_CAPABILITY
from ...threads import timer
from ...threads.futures import settle
from ...threads.timeouts import seconds
from ..client_links import RoundsLink, stateless_context
from ..context import Context, InputRequired
from ..listeners import Listeners
from ..registry import LocalTool
from ..tool_calls import InvalidArguments, as_result, error_result, handler_failure
from .link import TaskLink, ask_timeout
from .store import MemoryTaskStore, TaskRecord, TaskStore, new_task_id
from .watched import WatchedStore

log = logging.getLogger("raider_sync.serve.tasks")

#: the extension a client declares (per request) and a server advertises
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
#: the methods of the extension (tasks/result and tasks/list are not: -32601)
TASK_METHODS = ("tasks/get", "tasks/update", "tasks/cancel")
DEFAULT_TTL = 3600.0
DEFAULT_POLL_INTERVAL = 1.0
DEFAULT_MAX_RUNNING = 64

Prepare = Callable[[LocalTool, dict, Any, Context], Callable[[], Any]]


def declares_tasks(params: Any) -> bool:
    """Whether a request's ``_meta`` declares the tasks extension among the client's
    capabilities."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    capabilities = meta.get(META_CAPABILITIES) if isinstance(meta, dict) else None
    extensions = capabilities.get("extensions") if isinstance(capabilities, dict) else None
    return isinstance(extensions, dict) and TASKS_EXTENSION in extensions


def missing_extension(what: str) -> McpError:
    """The -32021 error of a request that needs the client to declare the extension."""
    return McpError(MISSING_CAPABILITY, f"{what} needs the client to declare the "
                    f"{TASKS_EXTENSION} extension in its request's clientCapabilities",
                    {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}})


class _Call:
    """One tools/call that may become a task: what answers the request (``handoff``: the
    CreateTaskResult, the handler's result, or the exception that ends the round), the
    handler's context and thread, and the task's id once it began."""

    def __init__(self, number: int, tool: LocalTool):
        self.number = number
        self.tool = tool
        self.lock = threading.Lock()
        self.handoff: Future = Future()
        self.task_id: str | None = None
        self.context: Context | None = None
        self.thread: threading.Thread | None = None
        self.expiry: timer.Handle | None = None


class ServedTasks:
    """The tasks of one tool server (``key``: its normalized name, which names the task
    threads ``raider-<key>-task-<n>``). ``store`` keeps them (default: a
    :class:`MemoryTaskStore`; closed with this object); ``ttl`` is how long a task is kept,
    in seconds from its creation (None: for ever, which a memory store pays for in memory);
    ``poll_interval`` the seconds between polls a client is asked to keep; at most
    ``max_running`` handlers run at once. Raises InvalidArgument for a setting that is not
    a positive number."""

    def __init__(self, key: str, *, store: TaskStore | None = None,
                 ttl: float | None = DEFAULT_TTL,
                 poll_interval: float = DEFAULT_POLL_INTERVAL,
                 max_running: int = DEFAULT_MAX_RUNNING):
        if ttl is not None:
            ttl = seconds(ttl, DEFAULT_TTL, "task_ttl", "ToolServer")
        poll_interval = seconds(poll_interval, DEFAULT_POLL_INTERVAL, "task_poll_interval",
                                "ToolServer")
        if isinstance(max_running, bool) or not isinstance(max_running, int) or max_running < 1:
            raise InvalidArgument(f"max_tasks of ToolServer must be a whole number above 0, "
                                  f"not {max_running!r}")
        self.key = key
        #: where the tasks are kept, every change of a status told to the listeners
        self.store = WatchedStore(store if store is not None else MemoryTaskStore(),
                                  self._changed)
        self._listeners = Listeners("a task listener", log)
        self.ttl_ms = None if ttl is None else max(1, round(ttl * 1000))
        self.poll_interval_ms = max(1, round(poll_interval * 1000))
        self.max_running = max_running
        self._lock = threading.Lock()
        self._calls: dict[int, _Call] = {}        # the calls whose handler still runs
        self._by_task: dict[str, _Call] = {}      # the same, by task id once a task
        self._numbers = itertools.count(1)
        self._closed = False

    # -- tools/call ----------------------------------------------------------------------

    def call(self, tool: LocalTool | None, params: dict, prepare: Prepare, *,
             answers: dict[str, dict], notify: Callable[[str, dict], None] | None,
             on_progress: Callable[..., None] | None, timeout: float) -> dict | None:
        """The answer to a ``tools/call`` of the stateless era when it is for a task, else
        None (the caller runs it as any call). The answer is the CreateTaskResult; for a
        tool whose handler begins its task, what the handler did first, waited for up to
        ``timeout`` s (then an ``isError`` result). Raises McpError -32021 for a tool that
        runs only as a task called without the declaration, -32603 once closed or with
        ``max_running`` handlers running; InputRequired when the handler ends a round."""
        if tool is None or not self.is_task(tool, params):
            return None
        call = _Call(next(self._numbers), tool)
        link = TaskLink(self.store, RoundsLink(answers, notify), partial(self._begin, call),
                        on_progress)
        call.context = stateless_context(params, notify, answers, link.progress, link=link,
                                         ask_timeout=ask_timeout(self.ttl_ms))
        arguments = params.get("arguments")
        try:
            run = prepare(tool, dict(arguments if isinstance(arguments, dict) else {}),
                          link.progress, call.context)
        except InvalidArguments as exc:  # answered at once, as any call's: no task
            return error_result(str(exc))
        with self._lock:
            if self._closed:
                raise McpError(INTERNAL_ERROR, "the tool server is closed")
            if len(self._calls) >= self.max_running:
                raise McpError(INTERNAL_ERROR, f"{len(self._calls)} tasks are running, as many "
                               f"as this server runs at once; try again later")
            self._calls[call.number] = call
        try:
            if tool.task_begins == "call":
                link.begin_task(None)
            call.thread = threading.Thread(target=self._run, args=(call, run), daemon=True,
                                           name=f"raider-{self.key}-task-{call.number}")
            call.thread.start()
        except BaseException:
            self._forget(call)
            raise
        return self._answer(call, timeout)

    def is_task(self, tool: LocalTool | None, params: dict) -> bool:
        """Whether a ``tools/call`` of ``tool`` with ``params`` is for a task. Raises
        McpError -32021 for a tool that runs only as a task called by a client that did not
        declare the extension. Does not block."""
        if tool is None or tool.task is None:
            return False
        if declares_tasks(params):
            return True
        if tool.task == "required":
            raise missing_extension(f"tool {tool.name!r} runs only as a task: calling it")
        return False

    def _begin(self, call: _Call, message: str | None) -> str | None:
        """Create the task of ``call`` and answer its request with it; its id, or None once
        the request was answered otherwise (its time ran out, the server closed)."""
        with call.lock:
            if call.handoff.done():
                return None
            record = TaskRecord(new_task_id(), time.time(), self.ttl_ms, self.poll_interval_ms,
                                status_message=message)
            self.store.create(record)  # durable before the client hears of it
            call.task_id = record.task_id
            with self._lock:
                self._by_task[record.task_id] = call
            if self.ttl_ms is not None:
                call.expiry = timer.at(time.monotonic() + self.ttl_ms / 1000.0,
                                       partial(self._expire, call))
            call.handoff.set_result({"resultType": "task", **record.wire()})
            return record.task_id

    def _answer(self, call: _Call, timeout: float) -> dict:
        try:
            return call.handoff.result(timeout)
        except FutureTimeout:
            pass
        with call.lock:
            settle(call.handoff, error=ToolTimeout(f"tool {call.tool.name} timed out after "
                                                   f"{timeout:g} s"))
        try:
            return call.handoff.result(0)  # the task, if it began meanwhile
        except ToolTimeout as exc:
            assert call.context is not None
            call.context.cancel()
            return text_result(str(exc), is_error=True)

    def _run(self, call: _Call, run: Callable[[], Any]) -> None:
        """The handler's thread: run it, then settle the request or the task."""
        try:
            try:
                value = run()
                if isinstance(value, Future):  # a handler may hand its work on
                    value = value.result(ask_timeout(self.ttl_ms))
                outcome: tuple[str, Any] = ("result", as_result(value))
            except InputRequired as exc:
                outcome = ("round", exc)
            except McpError as exc:
                outcome = ("error", exc)
            except Exception as exc:  # noqa: BLE001 - a handler's failure is an error result
                outcome = ("result", handler_failure(exc))
            self._finish(call, *outcome)
        except Exception:  # noqa: BLE001 - the store failed: nothing is left to tell
            log.exception("a task's outcome could not be kept")
        finally:
            self._forget(call)

    def _finish(self, call: _Call, kind: str, value: Any) -> None:
        with call.lock:
            task_id = call.task_id
            if task_id is None:  # the request is still waiting: answer it as any call
                if kind == "result":
                    settle(call.handoff, result=value)
                elif kind == "error" and value.code != MISSING_CAPABILITY:
                    settle(call.handoff, result=handler_failure(value))
                else:  # a round ends, or a question the client cannot answer
                    settle(call.handoff, error=value)
                return
        if kind == "result":
            result = {k: v for k, v in dict(value).items() if k != "resultType"}
            self.store.settle(task_id, "completed", result=result)
        elif kind == "error":
            self.store.settle(task_id, "failed", error=_error_object(value),
                              message=value.message)
        else:  # not through the task's link: a question the task cannot carry
            self.store.settle(task_id, "failed", message="the handler asked for a round "
                              "after its task began",
                              error={"code": INTERNAL_ERROR,
                                     "message": "the handler asked for another round of the "
                                                "request after its task began"})

    def _expire(self, call: _Call) -> None:
        """On the timer thread, once a task's time to live ran out: it fails (the store
        forgets it soon after) and its handler is told to stop."""
        if call.task_id is not None:
            self.store.settle(call.task_id, "failed", message="its time to live ran out",
                              error={"code": INTERNAL_ERROR,
                                     "message": "the task's time to live ran out"})
        if call.context is not None:
            call.context.cancel()

    def _forget(self, call: _Call) -> None:
        with self._lock:
            self._calls.pop(call.number, None)
            if call.task_id is not None:
                self._by_task.pop(call.task_id, None)
        timer.cancel(call.expiry)

    # -- status notifications ------------------------------------------------------------

    def add_listener(self, callback: Callable[[dict], None]) -> None:
        """Also tell ``callback(task)`` (the DetailedTask) when a task's status or status
        message changes (serving sends it as ``notifications/tasks``). Must not block."""
        self._listeners.add(callback)

    def remove_listener(self, callback: Callable[[dict], None]) -> None:
        self._listeners.remove(callback)

    def _changed(self, task: dict) -> None:
        self._listeners.tell(task)

    # -- tasks/get, tasks/update, tasks/cancel -------------------------------------------

    def answer(self, method: str, params: dict) -> dict:
        """The result of ``tasks/get`` (the DetailedTask), ``tasks/update`` or
        ``tasks/cancel`` (acknowledgements; a cancel of a task that is over too). Raises
        McpError -32021 for a request that does not declare the extension, -32602 for a
        ``taskId`` that names no task (unknown or expired) or ``inputResponses`` that are
        not an object of objects. Does not block."""
        if not declares_tasks(params):
            raise missing_extension(method)
        task_id = params.get("taskId")
        if not isinstance(task_id, str) or not task_id:
            raise McpError(INVALID_PARAMS, "taskId must be a non-empty string")
        record = self.store.get(task_id)
        if record is None:
            raise McpError(INVALID_PARAMS, f"no task {task_id!r}: it never was, or it expired")
        if method == "tasks/get":
            return {"resultType": "complete", **record.detailed()}
        if method == "tasks/update":
            responses = params.get("inputResponses")
            if not isinstance(responses, dict):
                raise McpError(INVALID_PARAMS, "inputResponses must be an object of answers "
                               "by key")
            for key, response in responses.items():
                if not isinstance(response, dict):
                    raise McpError(INVALID_PARAMS, f"inputResponses[{key!r}] must be an object "
                                   f"(the client's result for that input request)")
            self.store.respond(task_id, responses)
        elif method == "tasks/cancel":
            if self.store.settle(task_id, "cancelled", message="cancelled by the client"):
                with self._lock:
                    call = self._by_task.get(task_id)
                if call is not None and call.context is not None:
                    call.context.cancel()
        else:
            raise ValueError(f"not a method of the tasks extension: {method!r}")
        return {"resultType": "complete"}

    # -- closing -------------------------------------------------------------------------

    @property
    def running(self) -> int:
        """How many handlers run now (of calls and tasks)."""
        with self._lock:
            return len(self._calls)

    def close(self, timeout: float = 5.0) -> bool:
        """Take no more calls; fail every task still running (-32603: the server closed),
        tell its handler it is cancelled (a question it waits on ends), close the store,
        and join the handlers' threads for at most ``timeout`` s in all. True when every
        one ended; a handler that does not look at its context runs on, unseen (logged).
        Safe to call twice."""
        with self._lock:
            self._closed = True
            calls = list(self._calls.values())
        for call in calls:
            with call.lock:
                task_id = call.task_id
                if task_id is None:
                    settle(call.handoff, error=McpError(INTERNAL_ERROR, "the tool server closed"))
            if task_id is not None:
                self.store.settle(task_id, "failed", message="its server closed",
                                  error={"code": INTERNAL_ERROR,
                                         "message": "the tool server closed before the task "
                                                    "finished"})
            if call.context is not None:
                call.context.cancel()
        self.store.close()
        deadline = time.monotonic() + timeout
        for call in calls:
            thread = call.thread
            if thread is not None and thread is not threading.current_thread():
                thread.join(max(0.0, deadline - time.monotonic()))
        left = [c.thread.name for c in calls if c.thread is not None and c.thread.is_alive()]
        if left:
            log.warning("task handlers still running after %g s: %s", timeout, ", ".join(left))
        return not left


def _error_object(exc: McpError) -> dict:
    error: dict[str, Any] = {"code": exc.code, "message": exc.message}
    if exc.data is not None:
        error["data"] = exc.data
    return error
