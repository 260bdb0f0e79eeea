"""The commands of one BashTools: starting them, noticing their ends, moving and stopping them.

A :class:`Shell` is one ``bash -c`` in a process group of its own, stdin from /dev/null,
stdout and stderr into one :class:`OutputFile`. :class:`Runtime` holds everything a
BashTools runs (the reaper thread, a small pool whose threads end when idle, the shells) and
never refers back to the BashTools, so that object can be collected and its finalizer can
stop what it started.

Signals and reaping of shells all happen on the reaper thread. When a command's leader
exits, what it left in its process group is killed before the leader is reaped: a command's
processes end with it (use run_in_background for work that should go on). What left the
group (a new session) carries the shell's mark and goes when the shell is stopped or the
tools are stopped or closed (see :mod:`.keeper`).
"""
from __future__ import annotations

import contextlib
import itertools
import logging
import os
import signal
import subprocess
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional

from ..threads.workers import Workers
from . import keeper
from .output import OutputFile
from .reaper import JOIN_TIMEOUT, Reaper, Timer
from .tasks import RUNNING, TaskEntry, Tasks
from .texts import command_result, seconds, shell_notification

if TYPE_CHECKING:
    from ..serve.toolserver import ToolServer

log = logging.getLogger("raider_sync.shell")

INLINE_RESULT_BYTES = 1 << 20  # larger outputs are read on the pool, not the reaper thread
POOL_WORKERS = 4
STOP_SLACK = 5.0  # seconds after SIGKILL we still wait for an exit before giving up
OUTPUT_CHECK_INTERVAL = 0.1  # seconds between looks at the size of the running shells' output


@dataclass
class Caller:
    """Who runs a command: where its background end is notified, the call id it names,
    whether the run goes on without the person, and its default working directory."""
    recipient: str = "main"
    call: Optional[str] = None
    detached: bool = False
    working_directory: Optional[str] = None


def exit_code_of(returncode: int) -> int:
    """A Popen return code as the shell reports it (a signal N is 128 + N)."""
    return 128 - returncode if returncode < 0 else returncode


def signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


class Closed(RuntimeError):
    """The shell tools are closed: nothing starts any more."""


class Shell:
    """One command. ``done`` resolves with the exit code once it has been reaped;
    ``result`` (foreground) with ``(text, is_error)``."""

    kind = "bash"

    def __init__(self, command: str, description: str, cwd: str | None, caller: Caller):
        self.id: str | None = None
        self.command = command
        self.description = description
        self.cwd = cwd
        self.caller = caller
        self.output: OutputFile | None = None
        self.proc: subprocess.Popen | None = None
        self.background = False
        self.status = RUNNING
        self.exit_code: int | None = None
        self.stopping = False
        self.reaped = False
        self.read_offset = 0
        self.entry: TaskEntry | None = None
        self.lock = threading.Lock()       # state, taken by the reaper thread
        self.read_lock = threading.Lock()  # bash_output's reads
        self.done: Future = Future()
        self.result: Future = Future()
        self.timer: Timer | None = None
        self.kill_timer: Timer | None = None
        self.mark = ""  # keeper.VARIABLE's value in its processes' environment
        self.started = time.monotonic()
        self.limit_timer: Timer | None = None
        self.limited: str | None = None  # why a limit stopped it, said in its output

    def __repr__(self) -> str:
        return f"<Shell {self.id or '(foreground)'} {self.status} {self.command[:40]!r}>"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    @property
    def running(self) -> bool:
        return self.status == RUNNING

    @property
    def label(self) -> str:
        """What names the shell in texts: its description, else its command."""
        return self.description or self.command


class Runtime:
    """The machinery of one BashTools (see the module doc)."""

    def __init__(self, *, bash_path: str, tasks: Tasks | None, kill_grace: float,
                 output_limit: int, max_output_bytes: int | None = None,
                 background_time_limit: float | None = None):
        self.bash_path = bash_path
        self.max_output_bytes = max_output_bytes
        self.background_time_limit = background_time_limit
        self._ticker: Timer | None = None
        self.tasks = tasks
        self.kill_grace = kill_grace
        self.output_limit = output_limit
        self.reaper = Reaper()
        self.lock = threading.Lock()
        self.shells: dict[str, Shell] = {}       # background shells by id
        self.monitors: dict[str, Any] = {}       # monitors by id
        self.active: set[Shell] = set()          # every shell not yet reaped
        self.server: ToolServer | None = None    # the ToolServer, closed with the rest
        self._ids = itertools.count(1)
        self._pool: Workers | None = None
        # marks the pool's threads: their idents are reused once an idle one has ended
        self._in_pool = threading.local()
        self.closing = False  # set first by close(): no command starts from then on
        self.closed = False  # after the owner's end nothing starts a thread again
        self._starting = 0   # commands between the closing check and their registration
        self._idle = threading.Condition(self.lock)
        self.marks = keeper.Marks()  # what the commands carry, and the keeper of the token

    # -- the pool -----------------------------------------------------------------------------

    def submit(self, fn: Callable[[], Any]) -> Future:
        """Run ``fn`` on the pool (raises RuntimeError once closed: run it yourself)."""
        with self.lock:
            if self.closed:
                raise RuntimeError("the shell tools are closed")
            if self._pool is None:
                self._pool = Workers(POOL_WORKERS, "raider-shell-worker",
                                     initializer=self._pool_started)
            pool = self._pool
        return pool.submit(fn)

    def _pool_started(self) -> None:
        self._in_pool.marked = True

    def after(self, done: Future, timeout: float, fn: Callable[[], Any]) -> Future:
        """A future of ``fn()`` run on the pool once ``done`` is done or ``timeout`` s
        passed, whichever comes first; no thread waits meanwhile."""
        outer: Future = Future()
        if self.closing:  # no thread will wait on it: answer now
            _settle(outer, fn)
            return outer
        claimed = threading.Lock()
        timers: list[Timer] = []

        def go(_=None) -> None:
            if not claimed.acquire(blocking=False):
                return
            for timer in timers:
                timer.cancel()
            try:
                self.submit(lambda: _settle(outer, fn))
            except RuntimeError:  # the pool is shutting down: answer here
                _settle(outer, fn)

        timers.append(self.reaper.call_later(timeout, go))
        if timers[0].cancelled:  # the watcher stopped for good meanwhile: no timer will come
            go()
        done.add_done_callback(go)
        return outer

    # -- starting -----------------------------------------------------------------------------

    @contextlib.contextmanager
    def starting(self) -> Iterator[None]:
        """Start a command inside this block (spawn, timer, registration): a :meth:`close`
        waits for the block, so what starts is stopped with the rest. Raises :class:`Closed`
        once closing."""
        with self.lock:
            if self.closing:
                raise Closed("the shell tools are closed")
            self._starting += 1
        try:
            yield
        finally:
            with self.lock:
                self._starting -= 1
                if not self._starting:
                    self._idle.notify_all()

    def spawn(self, shell: Shell, background: bool = False) -> None:
        """Start the command (``background``: adopted at once, before its end can be seen).
        Raises OSError when it cannot start (no such directory, ...)."""
        shell.mark, env = self.marks.environment()
        shell.output = OutputFile()
        try:
            proc = shell.proc = subprocess.Popen(
                [self.bash_path, "-c", shell.command], cwd=shell.cwd, stdin=subprocess.DEVNULL,
                stdout=shell.output.fd, stderr=shell.output.fd, start_new_session=True,
                close_fds=True, env=env)
        except OSError:
            shell.output.close()
            raise
        with self.lock:
            self.active.add(shell)
            if self._ticker is None and self.max_output_bytes is not None:
                self._ticker = self.reaper.call_later(OUTPUT_CHECK_INTERVAL, self._check_output)
        if background:
            self.adopt(shell)
        self.reaper.watch(proc.pid, lambda: self._exited(shell))

    def add_monitor(self, monitor: Any) -> None:
        with self.lock:
            self.monitors[monitor.id] = monitor

    def new_id(self) -> str:
        if self.tasks is not None:
            return self.tasks.new_id("bash")
        return f"bash_{next(self._ids)}"

    def adopt(self, shell: Shell) -> None:
        """Make ``shell`` a background shell with an id (and a registry entry)."""
        shell.background = True
        if self.tasks is not None:
            shell.entry = self.tasks.register(
                "bash", description=shell.label, recipient=shell.caller.recipient,
                call=shell.caller.call, stop=lambda: self.request_stop(shell))
            shell.id = shell.entry.id
        else:
            shell.id = self.new_id()
        with self.lock:
            self.shells[shell.id] = shell
        limit = self.background_time_limit
        if limit is not None:
            left = shell.started + limit - time.monotonic()
            # not reaped yet: adopted before its exit is watched, or under shell.lock
            shell.limit_timer = self.reaper.call_later(left, lambda: self.limit(
                shell, f"it ran for more than {seconds(limit)}"))

    # -- ends (reaper thread) -----------------------------------------------------------------

    def _exited(self, shell: Shell) -> None:
        proc, output = shell.proc, shell.output
        assert proc is not None and output is not None  # watched only once spawned
        with shell.lock:
            signal_group(proc.pid, signal.SIGKILL)  # leftovers; the leader holds the pgid
            returncode = proc.wait()
            shell.reaped = True
            if shell.limited:
                output.append(f"\n[The command was stopped: {shell.limited}.]\n")
            for timer in (shell.timer, shell.kill_timer, shell.limit_timer):
                if timer is not None:
                    timer.cancel()
            shell.exit_code = exit_code_of(returncode)
            if shell.stopping:
                shell.status = "killed"
            else:
                shell.status = "completed" if shell.exit_code == 0 else "failed"
            background = shell.background
        with self.lock:
            self.active.discard(shell)
        if background:
            self._submit_or_run(lambda: self._end_background(shell))
        elif shell.stopping:
            self._submit_or_run(lambda: self._end_foreground(shell))
        elif output.size() <= INLINE_RESULT_BYTES:
            self._end_foreground(shell)
        else:
            self._submit_or_run(lambda: self._end_foreground(shell))

    def _submit_or_run(self, fn: Callable[[], object]) -> None:
        try:
            self.submit(fn)
        except RuntimeError:
            fn()

    def _sweep_stopped(self, shell: Shell) -> None:
        """A stopped shell's processes that left its group go with it (see :mod:`.keeper`)."""
        if shell.stopping and shell.mark:
            keeper.sweep(shell.mark)

    def _end_foreground(self, shell: Shell) -> None:
        output, exit_code = shell.output, shell.exit_code
        assert output is not None and exit_code is not None  # it ends once reaped
        try:
            self._sweep_stopped(shell)
            text = output.clip(0, output.size(), self.output_limit)
            if not shell.result.done():
                shell.result.set_result(command_result(exit_code, text))
        except Exception as exc:  # noqa: BLE001 - the caller gets an answer in any case
            log.exception("reading the output of %r failed", shell)
            if not shell.result.done():
                shell.result.set_result((f"Error: reading the output failed: {exc}", True))
        finally:
            output.close()
            if not shell.done.done():
                shell.done.set_result(shell.exit_code)

    def _end_background(self, shell: Shell) -> None:
        try:
            self._sweep_stopped(shell)
            if self.tasks is not None and shell.entry is not None:
                text, summary = shell_notification(shell.entry.id, shell.label, shell.status,
                                                   shell.exit_code, shell.caller.call,
                                                   shell.limited)
                self.tasks.finish(shell.entry.id, shell.status, report=summary, notification=text)
        finally:
            if not shell.done.done():
                shell.done.set_result(shell.exit_code)

    def to_background(self, shell: Shell, moved: Callable[[Shell], Any]) -> None:
        """At a foreground timeout (reaper thread): adopt the shell, answer ``moved(shell)``."""
        with shell.lock:
            if shell.reaped or shell.background or shell.stopping or shell.result.done():
                return
            self.adopt(shell)
        if not shell.result.done():
            shell.result.set_result(moved(shell))

    # -- stopping -----------------------------------------------------------------------------

    def _check_output(self) -> None:
        """The output cap (reaper thread, every OUTPUT_CHECK_INTERVAL while shells run):
        a shell that wrote more than ``max_output_bytes`` is stopped."""
        cap = self.max_output_bytes
        assert cap is not None  # the check ticks only under a cap (see spawn)
        with self.lock:
            ticker = self._ticker
            shells = [shell for shell in self.active if not shell.stopping]
        early = ticker is not None and time.monotonic() < ticker.when  # the watcher is stopping
        for shell in shells:
            if shell.output is not None and shell.output.size() > cap:
                self.limit(shell, f"its output passed {cap} bytes")
        with self.lock:
            if self.active and not self.closing and not early:
                self._ticker = self.reaper.call_later(OUTPUT_CHECK_INTERVAL, self._check_output)
            else:
                self._ticker = None

    def limit(self, shell: Shell, why: str) -> None:
        """Stop ``shell`` because it passed a limit; ``why`` goes into its output."""
        with shell.lock:
            if shell.reaped or shell.stopping:
                return
            shell.limited = why
        log.info("stopping %r: %s", shell, why)
        self.request_stop(shell)

    def interrupt(self, shell: Shell) -> None:
        """The caller of a foreground command gave up on it (its future was cancelled):
        stop it as :meth:`request_stop` does, unless it already ended or moved."""
        with shell.lock:
            if shell.reaped or shell.background or shell.stopping:
                return
            shell.stopping = True
            if shell.timer is not None:
                shell.timer.cancel()
        self.request_stop(shell)

    def request_stop(self, shell: Shell, grace: float | None = None) -> None:
        """SIGTERM the shell's group now and SIGKILL it after ``grace`` s (default
        kill_grace) unless it ended. Returns at once; ``shell.done`` tells the end."""
        grace = self.kill_grace if grace is None else grace
        self.reaper.call_soon(lambda: self._terminate(shell, grace))

    def _terminate(self, shell: Shell, grace: float) -> None:
        with shell.lock:
            if shell.reaped:
                return
            shell.stopping = True
            sig = signal.SIGTERM if grace > 0 else signal.SIGKILL
            assert shell.proc is not None  # only a spawned shell is stopped
            signal_group(shell.proc.pid, sig)
            if shell.kill_timer is None and grace > 0:
                shell.kill_timer = self.reaper.call_later(grace, lambda: self._kill(shell))
        if sig == signal.SIGTERM:  # what left the group is told too (SIGKILLed at the end)
            self._submit_or_run(lambda: keeper.sweep(shell.mark, signal.SIGTERM))

    def _kill(self, shell: Shell) -> None:
        with shell.lock:
            if not shell.reaped:
                assert shell.proc is not None  # only a spawned shell is stopped
                signal_group(shell.proc.pid, signal.SIGKILL)

    def stop_all(self, grace: float | None = None) -> None:
        """Stop every running shell and monitor, wait for their ends (bounded) and join
        the threads. Blocks for about ``grace`` s at most when something ignores SIGTERM.
        What the shells wrote stays readable (bash_output) until :meth:`close`."""
        grace = self.kill_grace if grace is None else grace
        in_reaper = self.reaper.in_reaper()
        if in_reaper:
            grace = 0  # collected on the reaper thread itself: no timer will run after this
        with self.lock:
            shells = list(self.active)
            monitors = list(self.monitors.values())
        for shell in shells:
            self.request_stop(shell, grace)
        for monitor in monitors:
            monitor.stop()
        for shell in shells:
            if not in_reaper:
                _wait(shell.done, grace + STOP_SLACK)
        for monitor in monitors:
            monitor.join(grace + STOP_SLACK)
        self.marks.sweep_all()  # what left the groups of shells, ended or stopped
        self.shutdown_threads()

    def close(self) -> None:
        """:meth:`stop_all` for good: commands already starting are let finish starting
        (bounded) and stopped with the rest; none starts afterwards, and no thread either."""
        with self.lock:
            self.closing = True
            self._idle.wait_for(lambda: not self._starting, JOIN_TIMEOUT)
        self.stop_all()
        self.marks.keeper.close(JOIN_TIMEOUT)
        self.closed = True
        with self.lock:
            ended = list(self.shells.values()) + list(self.monitors.values())
        for item in ended:  # release the output files nobody can read any more
            if not item.running and item.output is not None:
                with item.read_lock:
                    item.output.close()

    def shutdown_threads(self) -> None:
        """Join the reaper (its pending timers run early, on the pool), then the pool."""
        if not self.active:
            self.reaper.stop(JOIN_TIMEOUT, final=self.closing)
        with self.lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            in_pool = getattr(self._in_pool, "marked", False)
            pool.shutdown(wait=not in_pool)

    def background_pids(self) -> list[int]:
        with self.lock:
            shells = [s for s in self.active if s.background or s.caller.detached]
            monitors = [m for m in self.monitors.values() if m.running]
        return [s.pid for s in shells if s.pid] + [m.pid for m in monitors if m.pid]


def _wait(future: Future, timeout: float) -> None:
    try:
        future.result(timeout)
    except Exception:  # noqa: BLE001 - bounded wait; the outcome is looked at elsewhere
        pass


def _settle(outer: Future, fn: Callable[[], Any]) -> None:
    try:
        outer.set_result(fn())
    except BaseException as exc:  # noqa: BLE001
        outer.set_exception(exc)
