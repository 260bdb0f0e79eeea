"""Monitor: a background command whose standard output lines are delivered as notifications.

    monitor = Monitor("monitor_1", "tail -f app.log | grep --line-buffered ERROR",
                      "errors in the log", cwd, timeout=600, tasks=tasks, bash_path="/bin/bash")
    monitor.start()          # the reader thread raider-shell-monitor runs until the end
    monitor.stop()           # asks; monitor.join(timeout) waits

Each line is an event. Lines that arrive within ``batch_window`` seconds of the first one
waiting go out together as one ``<task-notification>`` (Claude Code's event form). More than
``burst_limit`` lines within ``burst_window`` seconds stop the monitor with a notice: a
monitor that floods the conversation is useless. The watch ends when the command exits
(completed or failed), when it is stopped (killed) or at its timeout; a final notification
says which. Standard error goes to an output file that bash_output reads, as for a shell.

One thread per monitor does everything: reads the pipe, batches, keeps the deadlines,
signals the process group (SIGTERM, ``kill_grace``, SIGKILL) and reaps the command.
"""
from __future__ import annotations

import logging
import os
import select
import signal
import subprocess
import threading
import time
from concurrent.futures import Future

from ..threads.timeouts import poll_seconds
from . import keeper
from .output import OutputFile
from .shells import exit_code_of, signal_group
from .tasks import RUNNING, Tasks, task_notification
from .texts import MONITOR_TIMED_OUT, monitor_event, seconds

log = logging.getLogger("raider_sync.shell")

DEFAULT_OPTIONS = {"batch_window": 0.2, "burst_limit": 100, "burst_window": 1.0,
                   "max_line_chars": 2000}
DRAIN_AFTER_EXIT = 0.5  # seconds to read what is left once the command is gone
READ_SIZE = 65536
POLL_WITHOUT_PIDFD = 0.05


class Monitor:
    """One monitored command (see the module doc). ``done`` resolves with the final status."""

    kind = "monitor"

    def __init__(self, task_id: str, command: str, description: str, cwd: str | None,
                 timeout: float, *,
                 tasks: Tasks, bash_path: str, recipient: str = "main", call: str | None = None,
                 kill_grace: float = 2.0, batch_window: float = 0.2, burst_limit: int = 100,
                 burst_window: float = 1.0, max_line_chars: int = 2000,
                 environment: tuple[str, dict] | None = None):
        self.id = task_id
        self.command = command
        self.description = description
        self.cwd = cwd
        self.timeout = timeout
        self.tasks = tasks
        self.bash_path = bash_path
        self.recipient = recipient
        self.call = call
        self.kill_grace = kill_grace
        self.batch_window = batch_window
        self.burst_limit = burst_limit
        self.burst_window = burst_window
        self.max_line_chars = max_line_chars
        self.mark: str
        self.env: dict | None
        self.mark, self.env = environment or ("", None)  # see keeper.py
        self.status = RUNNING
        self.exit_code: int | None = None
        self.events = 0
        self.end_reason: str | None = None      # None (exited), killed, timeout, burst
        self.output: OutputFile | None = None  # standard error, for bash_output
        self.read_offset = 0
        self.lock = threading.Lock()
        self.read_lock = threading.Lock()  # bash_output's reads
        self.done: Future = Future()
        self.proc: subprocess.Popen | None = None
        self._requested: str | None = None
        self._stopping = False
        self._kill_at: float | None = None
        self._batch: list[str] = []
        self._batch_due = 0.0
        self._burst_start = 0.0
        self._burst_count = 0
        self._wake_r = self._wake_w = -1
        self._pipe_r = -1
        self._pidfd: int | None = None
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        return f"<Monitor {self.id} {self.status} {self.command[:40]!r}>"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    @property
    def running(self) -> bool:
        return self.status == RUNNING

    @property
    def _process(self) -> subprocess.Popen:
        """The process, for the reader thread: start() sets it before the thread starts."""
        assert self.proc is not None
        return self.proc

    @property
    def label(self) -> str:
        return self.description or self.command

    # -- control ------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the command and the reader thread. Raises OSError if it cannot start."""
        self.output = OutputFile()
        pipe_r, pipe_w = os.pipe()
        try:
            proc = self.proc = subprocess.Popen(
                [self.bash_path, "-c", self.command], cwd=self.cwd, stdin=subprocess.DEVNULL,
                stdout=pipe_w, stderr=self.output.fd, start_new_session=True, close_fds=True,
                env=self.env)
        except OSError:
            os.close(pipe_r)
            self.output.close()
            raise
        finally:
            os.close(pipe_w)
        self._pipe_r = pipe_r
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        if hasattr(os, "pidfd_open"):
            try:
                self._pidfd = os.pidfd_open(proc.pid)
            except OSError:
                self._pidfd = None
        self._deadline = time.monotonic() + self.timeout
        # daemon: BashTools' finalizer (also at exit) stops monitors and joins this thread.
        self._thread = threading.Thread(target=self._run, name="raider-shell-monitor", daemon=True)
        self._thread.start()

    def stop(self, reason: str = "killed") -> None:
        """Ask the monitor to stop; returns at once (``join`` waits)."""
        with self.lock:
            if self._requested is None:
                self._requested = reason
            if self._wake_w >= 0:
                try:
                    os.write(self._wake_w, b"x")
                except OSError:
                    pass

    def join(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` s for the monitor to end (None: until it has; 0: not at
        all); True if it has."""
        timeout = poll_seconds(timeout, method="Monitor.join")
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        return self.done.done()

    # -- the reader thread --------------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._loop()
        except Exception:  # noqa: BLE001
            log.exception("monitor %s failed", self.id)
            signal_group(self._process.pid, signal.SIGKILL)
        finally:
            self._finish()

    def _loop(self) -> None:
        partial = b""
        eof = exited = False
        exited_at = 0.0
        while True:
            now = time.monotonic()
            if not self._stopping:
                reason = self._requested or ("timeout" if now >= self._deadline else None)
                if reason:
                    self._begin_stop(reason, now)
            if self._kill_at is not None and now >= self._kill_at and not exited:
                signal_group(self._process.pid, signal.SIGKILL)
                self._kill_at = None
            if self._batch and now >= self._batch_due:
                self._flush()
            if exited and (eof or now >= exited_at + DRAIN_AFTER_EXIT):
                break
            due = [exited_at + DRAIN_AFTER_EXIT] if exited else []
            if not self._stopping:
                due.append(self._deadline)
            if self._kill_at is not None:
                due.append(self._kill_at)
            if self._batch:
                due.append(self._batch_due)
            delay = max(0.0, min(due) - now) if due else None
            if self._pidfd is None and not exited:
                delay = POLL_WITHOUT_PIDFD if delay is None else min(delay, POLL_WITHOUT_PIDFD)
            watched = [self._wake_r]
            if not eof:
                watched.append(self._pipe_r)
            if self._pidfd is not None and not exited:
                watched.append(self._pidfd)
            ready, _, _ = select.select(watched, [], [], delay)
            if self._wake_r in ready:
                os.read(self._wake_r, 4096)
            if self._pipe_r in ready:
                data = os.read(self._pipe_r, READ_SIZE)
                if data:
                    partial = self._take_lines(partial + data)
                else:
                    eof = True
            if not exited and self._has_exited(ready):
                exited, exited_at = True, time.monotonic()
                signal_group(self._process.pid, signal.SIGKILL)  # leftovers; the leader holds the pgid
        if partial:
            self._line(partial.decode("utf-8", "replace").rstrip("\r"))
        if self._batch and self.end_reason != "burst":
            self._flush()

    def _has_exited(self, ready: list[int]) -> bool:
        if self._pidfd is not None:
            return self._pidfd in ready
        if hasattr(os, "waitid"):
            try:
                return os.waitid(os.P_PID, self._process.pid,
                                 os.WEXITED | os.WNOWAIT | os.WNOHANG) is not None
            except ChildProcessError:
                return True
        return self._process.poll() is not None  # pragma: no cover - reaps; tiny pgid race

    def _begin_stop(self, reason: str, now: float) -> None:
        self._stopping = True
        self.end_reason = reason
        signal_group(self._process.pid, signal.SIGTERM)
        self._kill_at = now + self.kill_grace

    def _take_lines(self, data: bytes) -> bytes:
        lines = data.split(b"\n")
        partial = lines.pop()
        for line in lines:
            self._line(line.decode("utf-8", "replace").rstrip("\r"))
        limit = self.max_line_chars * 4
        while len(partial) > limit:
            self._line(partial[:limit].decode("utf-8", "replace"))
            partial = partial[limit:]
        return partial

    def _line(self, text: str) -> None:
        if self._stopping:
            return  # what a command prints while it is being stopped is not an event
        now = time.monotonic()
        if now - self._burst_start > self.burst_window:
            self._burst_start, self._burst_count = now, 0
        self._burst_count += 1
        if self._burst_count > self.burst_limit:
            self._batch.clear()
            self._begin_stop("burst", now)
            return
        if len(text) > self.max_line_chars:
            text = text[:self.max_line_chars] + " ... [line truncated]"
        if not self._batch:
            self._batch_due = now + self.batch_window
        self._batch.append(text)

    def _flush(self) -> None:
        lines, self._batch = self._batch, []
        self.events += 1
        self.tasks.notify(self.recipient, monitor_event(self.id, self.label, "\n".join(lines)))

    def _finish(self) -> None:
        try:
            returncode = self._process.wait()
        except Exception:  # noqa: BLE001
            returncode = -signal.SIGKILL
        if self.end_reason and self.mark:  # stopped: what left its group goes too
            keeper.sweep(self.mark)
        with self.lock:
            for fd in (self._pipe_r, self._wake_r, self._wake_w, self._pidfd):
                if fd is not None and fd >= 0:
                    os.close(fd)
            self._pipe_r = self._wake_r = self._wake_w = -1
            self._pidfd = None
        self.exit_code = exit_code_of(returncode)
        status, text, report = self._final()
        with self.lock:
            self.status = status
        try:
            self.tasks.finish(self.id, status, report=report, notification=text)
        except LookupError:
            self.tasks.notify(self.recipient, text)
        finally:
            self.done.set_result(status)

    def _final(self) -> tuple[str, str, str]:
        """The end status, the final notification and the report for the registry."""
        reason, label = self.end_reason, self.label
        if reason == "timeout":
            text = monitor_event(self.id, label, MONITOR_TIMED_OUT)
            return "completed", text, f"Monitor timed out after {seconds(self.timeout)}"
        if reason == "burst":
            notice = (f"[Monitor stopped: more than {self.burst_limit} lines within "
                      f"{seconds(self.burst_window)}. Narrow the command's output (for example "
                      f"with grep --line-buffered) and re-arm.]")
            return "failed", monitor_event(self.id, label, notice), notice.strip("[]")
        if reason == "killed":
            summary = f'Monitor "{label}" was stopped'
            return "killed", task_notification(self.id, tool_use_id=self.call, status="killed",
                                               summary=summary), summary
        if self.exit_code == 0:
            status, summary = "completed", "Monitor stream ended"
        else:
            status, summary = "failed", f"Monitor stream ended (exit code {self.exit_code})"
        return status, task_notification(self.id, tool_use_id=self.call, status=status,
                                         summary=summary), summary
