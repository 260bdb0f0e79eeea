"""bash_output and kill_shell: reading and stopping what runs in the background.

:class:`Background` is the part of a :class:`~raider_sync.shell.BashTools` that answers these
two tools over its shells and monitors (its :class:`~raider_sync.shell.shells.Runtime`) and
the other tasks of its registry (an agent's, say): the new output of a shell or monitor since
the last read (filtered by a regular expression, clipped), or a task's status and report; and
a stop, SIGTERM to a shell's process group, ``kill_grace``, SIGKILL, or a task asked to stop.

Nothing here blocks a thread: each answer is a future, resolved at once or, for a blocking
read and a stop, when the target ends or the timeout passes (on the runtime's timer). Nothing
is raised: a bad id, a bad filter or a task that cannot stop is an error result
``(text, True)``.
"""
from __future__ import annotations

import re
from concurrent.futures import Future

from ..threads.futures import resolved
from .monitor import Monitor
from .output import MAX_CHAR_BYTES, Clip
from .shells import STOP_SLACK, Runtime, Shell
from .tasks import RUNNING, TaskEntry, Tasks
from .texts import entry_status, not_running, output_status, stopped, unknown

Result = tuple[str, bool]


class Background:
    """The background shells and monitors of ``runtime``, as bash_output and kill_shell see
    them. The tools' options (the task registry, the timeout, the output limit, the grace)
    are given at each call: the owner's settings, as they are then."""

    def __init__(self, runtime: Runtime):
        self.runtime = runtime

    def find(self, task_id: str) -> Shell | Monitor | None:
        """The shell or monitor of ``task_id``, running or ended (None: no such one)."""
        with self.runtime.lock:
            return self.runtime.shells.get(task_id) or self.runtime.monitors.get(task_id)

    def output_f(self, inp: dict, tasks: Tasks | None, *, timeout: float, limit: int) -> Future:
        """bash_output: the new output of the shell or monitor ``inp["bash_id"]``, else the
        status and report of that task; with ``block``, once it ends or ``timeout`` s pass."""
        task_id = str(inp.get("bash_id") or "")
        target = self.find(task_id)
        entry = None
        if target is None:
            entry = tasks.get(task_id) if tasks is not None else None
            if entry is None:
                return resolved((unknown(task_id), True))
        pattern = None
        if inp.get("filter"):
            try:
                pattern = re.compile(str(inp["filter"]))
            except re.error as exc:
                return resolved((f"Invalid filter regular expression: {exc}", True))
        block = bool(inp.get("block", False))
        if target is not None:
            def answer() -> Result:
                return read_new(target, pattern, limit), False
            done = target.done
        else:
            assert entry is not None  # found above: no shell or monitor has that id
            def answer() -> Result:
                return entry_status(entry, clip_text(entry_report(entry), limit)), False
            done = entry.done
        if block and not done.done():
            return self.runtime.after(done, timeout, answer)
        return resolved(answer())

    def kill_f(self, inp: dict, tasks: Tasks | None, *, kill_grace: float) -> Future:
        """kill_shell: stop the shell or monitor ``inp["shell_id"]`` and answer once it ended
        (or ``kill_grace`` and a little more passed), or ask that task to stop."""
        task_id = str(inp.get("shell_id") or "")
        target = self.find(task_id)
        if target is not None:
            if not target.running:
                return resolved((not_running(task_id, target.status), True))
            if isinstance(target, Monitor):
                target.stop()
            else:
                self.runtime.request_stop(target)
            command = target.command

            def answer() -> Result:
                if target.done.done():
                    return stopped(task_id, command), False
                return f"Error: task {task_id} did not stop", True
            return self.runtime.after(target.done, kill_grace + STOP_SLACK, answer)
        entry = tasks.get(task_id) if tasks is not None else None
        if tasks is None or entry is None:
            return resolved((unknown(task_id), True))
        if not entry.running:
            return resolved((not_running(entry.id, entry.status), True))
        if not tasks.stop(entry.id):
            return resolved((f"Error: task {entry.id} cannot be stopped", True))
        return resolved((stopped(entry.id, entry.description), False))


def read_new(target: Shell | Monitor, pattern: re.Pattern | None, limit: int) -> str:
    """bash_output's answer for a shell or monitor: what it wrote since the last read
    (only lines ``pattern`` finds something in, when given). A read that reaches the end
    of an ended shell releases its output file."""
    with target.read_lock:
        status, exit_code = target.status, target.exit_code
        output = target.output
        if output is None or output.closed:
            return output_status(status, exit_code, "")
        size = output.size()
        start = target.read_offset
        ended = status != RUNNING
        if pattern is None:
            end = size
            text = output.clip(start, end, limit)
        else:
            end = size if ended else output.last_newline(start, size)
            if end == start and size - start > MAX_CHAR_BYTES * limit:
                end = size  # a huge line without a newline yet: do not hold it back forever
            text = output.filtered(start, end, pattern, limit)
        target.read_offset = end
        if ended and end >= size:
            output.close()
    return output_status(status, exit_code, text)


def entry_report(entry: TaskEntry) -> str | None:
    if entry.status == "failed" and entry.error:
        return entry.error
    return entry.report


def clip_text(text: str | None, limit: int) -> str | None:
    if text is None or len(text) <= limit:
        return text
    clip = Clip(limit)
    clip.add(text)
    return clip.text()
