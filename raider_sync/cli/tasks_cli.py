"""``raider-sync tasks resume|status|cancel FILE``: a task saved by ``call --task-handle FILE``.

Each starts only the server the handle names (from the config, as ``call`` starts only the
tool's server). Exit codes as ``call``'s: 0 done, 1 a tool error, a failed task or one that
cannot be resumed (expired, another server's), 2 bad usage (a handle file that cannot be
read names the file and the field).
"""
from __future__ import annotations

import argparse
import dataclasses
import sys

from ..client.notebook import ProgressBar
from ..client.server import McpServer
from ..client.tasks import TaskFuture, TaskHandle, TaskStatus
from ..errors import ConfigError, McpError, NotConnected, ToolTimeout
from .common import EXIT_FAILED, EXIT_OK, guard, positive_seconds, print_json
from .started import CANCEL_DRAIN_S, StartedServers, interactive
from .tool_results import print_result


def register(sub: argparse._SubParsersAction) -> None:
    group = sub.add_parser("tasks", help="resume, look at or cancel a task saved by "
                                         "'call --task-handle FILE'",
                           description="A task saved by 'call --task-handle FILE'.")
    commands = group.add_subparsers(dest="tasks_command", metavar="COMMAND")
    commands.required = True
    for name, run, text in (
            ("resume", run_resume, "follow the task until it ends and print its result, as "
                                   "'call' does (Ctrl-C lets go of it: it runs on)"),
            ("status", run_status, "ask the server once how the task is"),
            ("cancel", run_cancel, "ask the server to cancel the task")):
        parser = commands.add_parser(name, help=text, description=text)
        parser.add_argument("file", metavar="FILE", help="the task's handle (JSON)")
        parser.add_argument("--config", metavar="FILE",
                            help="an .mcp.json (default ./.mcp.json) that names the handle's "
                                 "server")
        parser.add_argument("--json", action="store_true", help="print JSON for scripts")
        parser.set_defaults(run=run)
        if name == "resume":
            parser.add_argument("--timeout", type=positive_seconds, metavar="S",
                                help="seconds the task may still run (then it is cancelled)")


def read_handle(path: str) -> TaskHandle:
    """The handle saved in ``path``. Raises ConfigError naming the file (and the field)."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the task handle: "
                          f"{getattr(exc, 'strerror', None) or exc}") from None
    try:
        return TaskHandle.from_json(text)
    except ValueError as exc:
        raise ConfigError(f"{path}: {exc}") from None


@guard
def run_resume(args) -> int:
    handle = read_handle(args.file)
    with StartedServers(args, handle.server) as (server,):
        bar = ProgressBar(handle.tool or handle.task_id) if interactive(args) else None
        try:
            result = server.resume_task(handle, task_timeout=args.timeout,
                                        on_status=bar.on_status if bar is not None else None)
        except ToolTimeout:  # the task was cancelled: that reaches the server before the end
            server.stop(drain=CANCEL_DRAIN_S)
            raise
        finally:
            if bar is not None:
                bar.close()
    return print_result(args, result)


@guard
def run_status(args) -> int:
    handle = read_handle(args.file)
    with StartedServers(args, handle.server) as (server,):
        future, status = _look(server, handle)
        future.detach()
    if args.json:
        print_json(_record(status))
    else:
        message = f" ({status.status_message})" if status.status_message else ""
        print(f"task {status.task_id} of {handle.tool or handle.server}: {status.status}"
              f"{message}")
    return EXIT_OK


@guard
def run_cancel(args) -> int:
    handle = read_handle(args.file)
    with StartedServers(args, handle.server) as (server,):
        future, status = _look(server, handle)
        if status.terminal or not future.cancel():  # cancel(): tasks/cancel
            future.detach()
            print(f"raider-sync: task {status.task_id} has ended already; nothing to cancel",
                  file=sys.stderr)
            return EXIT_FAILED
        server.stop(drain=server.call_timeout)  # its answer comes before the process ends
    if args.json:
        print_json({"task_id": status.task_id, "cancelled": True})
    else:
        print(f"task {status.task_id}: cancel sent")
    return EXIT_OK


def _look(server: McpServer, handle: TaskHandle) -> tuple[TaskFuture, TaskStatus]:
    """The task resumed and asked once (tasks/get): its future, which follows it until
    detached or cancelled, and the status. Raises TaskNotResumable, TaskExpired (the
    server does not know the task), McpError, NotConnected."""
    future = server.resume_task_f(handle)
    try:
        status = future.poll()  # None when the resume failed at once: the future says why
    except McpError:
        error = future.exception() if future.done() else None
        if error is None:
            raise
        raise error from None  # TaskExpired, for a task the server no longer knows
    if status is None:
        raise future.exception(server.call_timeout) or NotConnected(
            f"task {handle.task_id} could not be resumed")
    return future, status


def _record(status: TaskStatus) -> dict:
    """A status as ``tasks status --json`` prints it: the record without what was sent."""
    record = dataclasses.asdict(status)
    record.pop("raw")
    return record
