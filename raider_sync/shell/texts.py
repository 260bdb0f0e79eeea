"""The texts of the shell tools, in one place (Claude Code's wording where it has one)."""
from __future__ import annotations

from .tasks import RUNNING, TaskEntry, task_notification

NO_OUTPUT = "(Bash completed with no output)"
NOTIFIED = " You will be notified when it completes."
READ_LATER = " Read its output with bash_output."
MONITOR_TIMED_OUT = "[Monitor timed out \u2014 re-arm if needed.]"


def seconds(value: float) -> str:
    """``120s``, ``0.5s``."""
    return f"{value:g}s"


def duration(value: float) -> str:
    """``5m`` for whole minutes, else ``90s``/``0.5s``."""
    if value >= 60 and float(value) % 60 == 0:
        return f"{int(value // 60)}m"
    return seconds(value)


def unknown(task_id: str) -> str:
    return f"No task found with ID: {task_id}"


def not_running(task_id: str, status: str) -> str:
    return f"Task {task_id} is not running, so cannot be killed (status: {status})"


def stopped(task_id: str, what: str) -> str:
    return f"Successfully stopped task: {task_id} ({what})"


def command_result(exit_code: int, text: str) -> tuple[str, bool]:
    """A finished foreground command: its output, or ``Exit code N`` and its output."""
    text = text.rstrip("\n")
    if exit_code == 0:
        return (text or NO_OUTPUT), False
    return (f"Exit code {exit_code}\n{text}" if text else f"Exit code {exit_code}"), True


def started_in_background(task_id: str, notified: bool) -> str:
    return f"Command running in background with ID: {task_id}." + (NOTIFIED if notified else READ_LATER)


def moved_to_background(task_id: str, timeout: float, notified: bool) -> str:
    return (f"Command did not complete within its {seconds(timeout)} timeout and was moved to the "
            f"background with ID: {task_id}." + (NOTIFIED if notified else READ_LATER))


def monitor_started(task_id: str, timeout: float) -> str:
    return (f"Monitor started (task {task_id}, expires in {duration(timeout)} unless the source "
            f"ends first). You will be notified on each event.")


def shell_notification(task_id: str, label: str, status: str, exit_code: int | None,
                       call: str | None = None, why: str | None = None) -> tuple[str, str]:
    """The ``<task-notification>`` of a background shell that ended, and its summary line."""
    if status == "completed":
        summary = f'Background command "{label}" completed (exit code {exit_code})'
    elif status == "failed":
        summary = f'Background command "{label}" failed with exit code {exit_code}'
    else:
        summary = f'Background command "{label}" was stopped' + (f": {why}" if why else "")
    return task_notification(task_id, tool_use_id=call, status=status, summary=summary), summary


def monitor_event(task_id: str, description: str, lines: str) -> str:
    return task_notification(task_id, summary=f'Monitor event: "{description}"', event=lines)


def output_status(status: str, exit_code: int | None, stdout: str) -> str:
    """bash_output's answer for a shell: status, exit code once ended, new output if any."""
    parts = [f"<status>{status}</status>"]
    if status != RUNNING and exit_code is not None:
        parts.append(f"<exit_code>{exit_code}</exit_code>")
    stdout = stdout.rstrip("\n")
    if stdout:
        parts.append(f"<stdout>\n{stdout}\n</stdout>")
    return "\n".join(parts)


def entry_status(entry: TaskEntry, report: str | None) -> str:
    """bash_output's answer for another registry entry: status and, once ended, its report."""
    parts = [f"<status>{entry.status}</status>"]
    if not entry.running and report:
        parts.append(f"<output>\n{report}\n</output>")
    return "\n".join(parts)
