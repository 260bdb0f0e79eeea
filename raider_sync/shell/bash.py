"""BashTools: the shell tools bash, bash_output, kill_shell and monitor.

    tasks = Tasks()
    shell = BashTools(working_directory="/repo", validator=lambda command, cwd: True, tasks=tasks)
    text, is_error = shell.bash({"command": "make test", "timeout": 300})
    text, is_error = shell.bash({"command": "sleep 60", "run_in_background": True})
    text, is_error = shell.bash_output({"bash_id": "bash_1", "block": True, "timeout": 10})
    text, is_error = shell.kill_shell({"shell_id": "bash_1"})
    shell.server.call_tool("bash", {"command": "ls"})   # the same tools as a ToolServer
    shell.stop_all()

Shaped after Claude Code's Bash, BashOutput, KillShell and Monitor. Each tool method takes
the tool's input dict and returns ``(text, is_error)``; its ``_f`` twin returns a
``concurrent.futures.Future`` of the same and never blocks. Times given to calls are seconds
(``timeout`` of bash and bash_output, as the seed says), except monitor's ``timeout_ms``.

The shells belong to this object: they live across calls and are stopped by
:meth:`stop_all`, by :meth:`close`, when the object is garbage collected, or at interpreter
exit, whichever comes first. No shell outlives its owner.

BashTools runs bash and monitor; reading and stopping what runs in the background
(bash_output, kill_shell) is its :class:`~raider_sync.shell.background.Background` part, and
:mod:`raider_sync.shell.as_tools` offers its methods as a ToolServer and as per-run tools.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import threading
import weakref
from concurrent.futures import Future
from typing import Any, Callable, Iterable, Iterator, Optional, Union

from ..errors import ConfigError
from ..serve.toolserver import ToolServer
from ..threads.futures import resolved
from . import as_tools
from .as_tools import CLOSED, AsyncTool
from .background import Background, Result, clip_text, entry_report, read_new  # noqa: F401 - importable from here as before
from .gates import Validator, refusal
from .monitor import DEFAULT_OPTIONS, Monitor
from .shells import STOP_SLACK, Caller, Closed, Runtime, Shell
from .tasks import Tasks
from .texts import monitor_started, moved_to_background, shell_notification, started_in_background

DEFAULT_MAX_OUTPUT_BYTES = 512 << 20
CallerLike = Union[Caller, dict, None]


class BashTools:
    """The shell tools of one application (see the module doc).

    Options (seconds unless named ``_ms``): ``working_directory`` (default: the process's),
    ``allowed_commands`` (first words a command may start with), ``validator(command,
    working_directory)``, ``tasks`` (a :class:`Tasks` registry: background shells are
    registered and notify there, and monitor is offered), ``default_timeout`` 120,
    ``max_timeout`` 600, ``output_limit`` 30000 characters, ``kill_grace`` 2,
    ``block_timeout`` 30, ``monitor_timeout`` 300, ``monitor_max_timeout`` 1800,
    ``monitor_unattended_max_timeout`` 600 (when ``unattended()`` is true),
    ``monitor_min_timeout`` 1 and ``monitor_options`` (batch_window, burst_limit,
    burst_window, max_line_chars for every Monitor).

    Limits of every shell: ``max_output_bytes`` (512 MiB; None: none) stops a command whose
    output passes it, and ``background_time_limit`` (None: none) stops a background shell
    that has run that long; either says so at the end of its output. Raises ConfigError
    for a limit that is not a positive number.
    """

    def __init__(self, working_directory: str | None = None, *,
                 allowed_commands: Optional[Iterable[str]] = None,
                 validator: Optional[Validator] = None, tasks: Tasks | None = None,
                 default_timeout: float = 120, max_timeout: float = 600, output_limit: int = 30000,
                 kill_grace: float = 2.0, block_timeout: float = 30, monitor_timeout: float = 300,
                 monitor_max_timeout: float = 1800, monitor_unattended_max_timeout: float = 600,
                 unattended: Callable[[], Any] | None = None, monitor_min_timeout: float = 1,
                 monitor_options: dict | None = None, name: str = "shell",
                 max_output_bytes: int | None = DEFAULT_MAX_OUTPUT_BYTES,
                 background_time_limit: float | None = None):
        unknown_options = set(monitor_options or {}) - set(DEFAULT_OPTIONS)
        if unknown_options:
            raise TypeError(f"unknown monitor_options: {', '.join(sorted(unknown_options))}")
        self.working_directory = working_directory
        self.allowed_commands = list(allowed_commands) if allowed_commands is not None else None
        self.validator = validator
        self.tasks = tasks
        self.default_timeout = default_timeout
        self.max_timeout = max_timeout
        self.output_limit = output_limit
        self.kill_grace = kill_grace
        self.block_timeout = block_timeout
        self.monitor_timeout = monitor_timeout
        self.monitor_max_timeout = monitor_max_timeout
        self.monitor_unattended_max_timeout = monitor_unattended_max_timeout
        self.unattended = unattended
        self.monitor_min_timeout = monitor_min_timeout
        self.monitor_options = {**DEFAULT_OPTIONS, **(monitor_options or {})}
        self.max_output_bytes = _limit("max_output_bytes", max_output_bytes)
        self.background_time_limit = _limit("background_time_limit", background_time_limit)
        self.name = name
        self.bash_path = shutil.which("bash") or "/bin/bash"
        self._runtime = Runtime(bash_path=self.bash_path, tasks=tasks, kill_grace=kill_grace,
                                output_limit=output_limit, max_output_bytes=self.max_output_bytes,
                                background_time_limit=self.background_time_limit)
        self._background = Background(self._runtime)
        self._lock = threading.Lock()
        self._server: ToolServer | None = None
        self._finalizer = weakref.finalize(self, _shutdown, self._runtime)

    def __repr__(self) -> str:
        return f"<BashTools {self.name!r} shells={len(self._runtime.shells)}>"

    def __enter__(self) -> "BashTools":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- bash ---------------------------------------------------------------------------------

    def bash(self, inp: dict, caller: CallerLike = None) -> Result:
        """Run a command; blocks until it ends or its timeout moves it to the background.

        ``inp``: command, timeout (seconds, default ``default_timeout``, at most
        ``max_timeout``), description, run_in_background. ``caller``: recipient, call,
        detached, working_directory (a dict or :class:`Caller`).

        A ``KeyboardInterrupt`` (Ctrl-C) while it waits stops the command as
        :meth:`kill_shell` would (bounded by ``kill_grace``; a second one kills at once)
        and propagates: nothing is left running."""
        started: list[Shell] = []
        try:
            with deferred_interrupt():  # a command half started could not be stopped
                future = self._bash(inp, caller, started)
            return future.result()
        except KeyboardInterrupt:
            if started:
                self._abandon(started[0])
            raise

    def _abandon(self, shell: Shell) -> None:
        """The caller of a foreground command was interrupted: stop the command unless it
        was answered already (ended, or moved to the background); wait for its end, bounded
        by ``kill_grace``; a second interrupt kills it at once."""
        if shell.result.done() and not shell.result.cancelled():
            return
        shell.result.cancel()
        if shell.proc is None:
            return
        self._runtime.interrupt(shell)
        try:
            shell.done.exception(self.kill_grace + STOP_SLACK)
        except KeyboardInterrupt:
            self._runtime.request_stop(shell, 0)
            raise
        except Exception:  # noqa: BLE001 - a bounded wait; the interrupt goes on anyway
            pass

    def bash_f(self, inp: dict, caller: CallerLike = None) -> Future:
        """:meth:`bash` as a future of ``(text, is_error)``. Cancelling the future while
        the command runs in the foreground stops the command (SIGTERM to its process
        group, ``kill_grace``, SIGKILL)."""
        return self._bash(inp, caller)

    def _bash(self, inp: dict, caller: CallerLike, started: list | None = None) -> Future:
        caller = as_caller(caller)
        admitted = self._admit(inp, caller)
        if isinstance(admitted, Future):
            return admitted
        command, cwd = admitted
        shell = Shell(command, str(inp.get("description") or ""), cwd, caller)
        if started is not None:
            started.append(shell)
        try:
            with self._runtime.starting():  # a close() meanwhile waits, then stops it
                return self._start(shell, inp)
        except Closed:
            return resolved((CLOSED, True))

    def _start(self, shell: Shell, inp: dict) -> Future:
        background = bool(inp.get("run_in_background"))
        try:
            self._runtime.spawn(shell, background=background)
        except OSError as exc:
            return resolved((f"Error: the command could not start: {exc}", True))
        notified = self.tasks is not None
        if background:
            assert shell.id is not None  # adopted by spawn
            return resolved((started_in_background(shell.id, notified), False))
        timeout = self._seconds(inp.get("timeout"), self.default_timeout)
        runtime = self._runtime  # the timer must not keep this object alive

        def moved(adopted: Shell) -> Result:
            assert adopted.id is not None  # to_background adopts it first
            return moved_to_background(adopted.id, timeout, notified), False

        timer = runtime.reaper.call_later(timeout, lambda: runtime.to_background(shell, moved))
        with shell.lock:
            shell.timer = timer
            if shell.reaped:  # it ended before the timer was known: nothing to move
                timer.cancel()

        def interrupted(result: Future) -> None:
            if result.cancelled():
                runtime.interrupt(shell)

        shell.result.add_done_callback(interrupted)
        return shell.result

    def notification(self, shell: Shell, status: str) -> tuple[str, str]:
        """The ``<task-notification>`` of a background shell that ended with ``status``
        (completed, failed, killed) and the line a surface shows for it."""
        return shell_notification(shell.id or "", shell.label, status, shell.exit_code,
                                  shell.caller.call)

    # -- bash_output --------------------------------------------------------------------------

    def bash_output(self, inp: dict) -> Result:
        """The new output of a background shell (or the status and report of another task).

        Blocks, with ``block``, until it ends or ``timeout`` s (default ``block_timeout``,
        at most ``max_timeout``) pass; it waits for an agent's end too."""
        return self.bash_output_f(inp).result()

    def bash_output_f(self, inp: dict) -> Future:
        """:meth:`bash_output` as a future; ``block`` waits without holding a thread."""
        return self._background.output_f(
            inp, self.tasks, timeout=self._seconds(inp.get("timeout"), self.block_timeout),
            limit=self.output_limit)

    # -- kill_shell ---------------------------------------------------------------------------

    def kill_shell(self, inp: dict) -> Result:
        """Stop a running background shell or monitor (SIGTERM to its group, ``kill_grace``,
        SIGKILL) and wait for its end, or ask another running task to stop."""
        return self.kill_shell_f(inp).result()

    def kill_shell_f(self, inp: dict) -> Future:
        """:meth:`kill_shell` as a future."""
        return self._background.kill_f(inp, self.tasks, kill_grace=self.kill_grace)

    # -- monitor ------------------------------------------------------------------------------

    def monitor(self, inp: dict, caller: CallerLike = None) -> Result:
        """Start a monitor (needs ``tasks``) and answer at once. ``timeout_ms`` is held to
        ``monitor_min_timeout``..``monitor_max_timeout`` seconds (the unattended maximum when
        ``unattended()`` is true)."""
        return self.monitor_f(inp, caller).result()

    def monitor_f(self, inp: dict, caller: CallerLike = None) -> Future:
        """:meth:`monitor` as a future (already resolved: a monitor answers at once)."""
        tasks = self.tasks
        if tasks is None:
            return resolved(("Error: monitor needs a task registry (tasks)", True))
        caller = as_caller(caller)
        admitted = self._admit(inp, caller)
        if isinstance(admitted, Future):
            return admitted
        command, cwd = admitted
        timeout = self.monitor_seconds(inp.get("timeout_ms"))
        try:
            with self._runtime.starting():  # a close() meanwhile waits, then stops it
                return self._start_monitor(tasks, command, inp, cwd, timeout, caller)
        except Closed:
            return resolved((CLOSED, True))

    def _start_monitor(self, tasks: Tasks, command: str, inp: dict, cwd: str | None,
                       timeout: float, caller: Caller) -> Future:
        task_id = tasks.new_id("monitor")
        monitor = Monitor(task_id, command, str(inp.get("description") or ""), cwd, timeout,
                          tasks=tasks, bash_path=self.bash_path, recipient=caller.recipient,
                          call=caller.call, kill_grace=self.kill_grace,
                          environment=self._runtime.marks.environment(), **self.monitor_options)
        tasks.register("monitor", description=monitor.label, recipient=caller.recipient,
                       call=caller.call, stop=monitor.stop, task_id=task_id)
        try:
            monitor.start()
        except OSError as exc:
            tasks.finish(task_id, "failed", error=str(exc))
            return resolved((f"Error: the command could not start: {exc}", True))
        self._runtime.add_monitor(monitor)
        return resolved((monitor_started(task_id, timeout), False))

    def monitor_seconds(self, timeout_ms: Any) -> float:
        """A monitor's watch in seconds for the ``timeout_ms`` given (None: the default)."""
        seconds = self.monitor_timeout
        if _positive(timeout_ms):
            seconds = float(timeout_ms) / 1000.0
        maximum = self.monitor_max_timeout
        if self.unattended is not None and self.unattended():
            maximum = self.monitor_unattended_max_timeout
        return min(max(seconds, self.monitor_min_timeout), maximum)

    # -- the session's processes --------------------------------------------------------------

    def background_pids(self) -> list[int]:
        """Process IDs that belong to the session rather than to the run in progress: the
        running background shells and monitors, and the foreground commands of detached
        callers."""
        return self._runtime.background_pids()

    @property
    def shells(self) -> list[Shell]:
        """The background shells, running or ended, oldest first."""
        with self._runtime.lock:
            return list(self._runtime.shells.values())

    def stop_all(self) -> None:
        """Stop every shell and monitor still running (``kill_grace``), wait for their ends
        and join this object's threads. Blocks for about ``kill_grace`` s at most when a
        command ignores SIGTERM. The object stays usable."""
        self._runtime.stop_all()

    def close(self) -> None:
        """:meth:`stop_all` and close the tool server; later commands are refused. Safe to
        call twice."""
        self._finalizer()

    # -- as tools -----------------------------------------------------------------------------

    @property
    def server(self) -> ToolServer:
        """A ToolServer with bash, bash_output and kill_shell (and monitor with ``tasks``),
        built once; its handlers hold this object weakly."""
        with self._lock:
            if self._server is None:
                server = as_tools.tool_server(self)
                self._server = self._runtime.server = server
            return self._server

    def async_tools(self, recipient: Any = "main", detached: Any = False,
                    working_directory: Any = None, applies: Callable | None = None) -> list["AsyncTool"]:
        """The tools for one run, as callables ``tool(arguments, context=None)`` returning a
        future of an MCP result dict. ``recipient``, ``detached`` and ``working_directory``
        are values or callables asked at each call; the call id comes from the context
        (``call``, else ``id``). ``applies`` is passed on for the application to use."""
        return as_tools.async_tools(self, recipient, detached, working_directory, applies)

    # -- internals ----------------------------------------------------------------------------

    def _admit(self, inp: dict, caller: Caller) -> tuple[str, str | None] | Future:
        """The way in of bash and monitor alike: ``(command, working directory)`` once the
        command is there, the tools are open and the gates let it run; else the future of
        the error result."""
        command = inp.get("command")
        if not isinstance(command, str) or not command.strip():
            return resolved(("Error: command must be a non-empty string", True))
        if not self._finalizer.alive:
            return resolved((CLOSED, True))
        cwd = caller.working_directory or self.working_directory
        refused = refusal(command, cwd or os.getcwd(), allowed=self.allowed_commands,
                          validator=self.validator)
        if refused:
            return resolved((refused, True))
        return command, cwd

    def _seconds(self, value: Any, default: float) -> float:
        seconds = float(value) if _positive(value) else float(default)
        return min(seconds, float(self.max_timeout))


@contextlib.contextmanager
def deferred_interrupt() -> Iterator[None]:
    """A Ctrl-C (SIGINT with Python's default handler, on the main thread) that comes
    inside the block is raised as KeyboardInterrupt when the block ends, not in it."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield
        return
    seen: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, frame: seen.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if seen:
        raise KeyboardInterrupt


def as_caller(caller: CallerLike) -> Caller:
    if caller is None:
        return Caller()
    if isinstance(caller, Caller):
        return caller
    return Caller(recipient=str(caller.get("recipient") or "main"), call=caller.get("call"),
                  detached=bool(caller.get("detached")),
                  working_directory=caller.get("working_directory"))


def _positive(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return False
    try:
        number = float(value)
    except ValueError:
        return False
    return number > 0 and number == number and number != float("inf")


def _limit(name: str, value: Any) -> Any:
    """A limit option as given (None: no limit); anything but a positive number is refused."""
    if value is None:
        return None
    if not _positive(value) or isinstance(value, str):
        raise ConfigError(f"{name} must be a positive number or None, not {value!r}")
    return value


def _shutdown(runtime: Runtime) -> None:
    """The finalizer: stop everything (also at interpreter exit)."""
    runtime.close()
    server = runtime.server
    if server is not None:
        try:
            server.close()
        except RuntimeError:  # closing from one of its own threads
            pass
