"""``raider-sync call TOOL``: a tool called by its ``mcp__SERVER__TOOL`` name, on that server
alone, followed to its end or, when it becomes a task, its handle written (``--task-handle``)
and the task left running (``--detach``). Blocks within the call's bounds; Ctrl-C (or the end
of them) cancels the call, or its task, on the server."""
from __future__ import annotations

import sys
import threading

from ..client.notebook import ProgressBar
from ..client.server import DEFAULT_MAX_TOTAL, McpServer
from ..client.tasks import TaskHandle, TaskStatus
from ..errors import ConfigError, NotConnected, ToolTimeout
from .common import EXIT_FAILED, EXIT_OK, guard, json_arg, print_json, report, write_file
from .started import CANCEL_DRAIN_S, StartedServers, interactive, server_row
from .tool_results import print_result


@guard
def run_call(args) -> int:
    arguments = json_arg(args.args, "--args")
    if args.detach and not args.task_handle:
        raise ConfigError("--detach needs --task-handle FILE (the handle resumes the task)")
    options = {"max_output_tokens": args.max_tokens} if args.max_tokens else {}
    with StartedServers(args, tool=args.tool, **options) as servers:  # only the tool's server, when named
        try:
            server = _server_for_tool(servers, args.tool)
        except NotConnected as exc:  # the servers that failed, and why, for scripts too
            return report(args, exc, EXIT_FAILED, servers=[
                server_row(s) for s in servers if s.status != "connected"])
        bar = ProgressBar(args.tool, stream=sys.stderr) if interactive(args) else None
        try:
            result = _call(server, args, arguments, bar)
        finally:
            if bar is not None:
                bar.close()
    if result is None:  # detached
        return EXIT_OK
    return print_result(args, result, args.save)


def _call(server: McpServer, args, arguments: dict, bar: ProgressBar | None) -> dict | None:
    """The tool's result. A call that becomes a task has its handle written to
    ``--task-handle`` once the task exists; with ``--detach`` it is then let go (None is
    returned, the task runs on). Blocks within the call's bounds; Ctrl-C (or the end of
    them: ToolTimeout) cancels the call, or its task, on the server and propagates."""
    moved = threading.Event()  # the call became a task, or ended

    def on_status(status: TaskStatus) -> None:
        moved.set()
        if bar is not None:
            bar.on_status(status)
    future = server.call_tool_f(args.tool, arguments, timeout=args.timeout, on_progress=bar,
                                task_timeout=args.task_timeout, on_status=on_status)
    future.add_done_callback(lambda _: moved.set())
    # the longest the call may take (its server's deadlines end it first), progress or not
    timeout = args.timeout or server.call_timeout
    bound = timeout + (server.max_total or max(timeout, DEFAULT_MAX_TOTAL))
    try:
        if args.task_handle:
            moved.wait(bound)
            handle = future.handle
            if handle is None:
                print("raider-sync: the call did not become a task; no handle written",
                      file=sys.stderr)
            else:
                write_file(args.task_handle, handle.to_json() + "\n", replace=True,
                           option="--task-handle")
                if args.detach and future.detach() is not None:
                    _detached(args, handle)
                    return None
        return future.wait_result(bound)
    except (KeyboardInterrupt, ToolTimeout):
        future.cancel()  # notifications/cancelled, or tasks/cancel (a timeout sent it already)
        server.stop(drain=CANCEL_DRAIN_S)  # the cancel is delivered before the process ends
        raise


def _detached(args, handle: TaskHandle) -> None:
    if args.json:
        print_json({"task_id": handle.task_id, "server": handle.server,
                     "task_handle": args.task_handle})
    else:
        print(f"task {handle.task_id} runs on; its handle is in {args.task_handle} "
              f"(raider-sync tasks resume {args.task_handle})")


def _server_for_tool(servers: list[McpServer], tool: str) -> McpServer:
    """The connected server offering ``tool``. Raises NotConnected naming each server that
    failed to start and why (it may have offered the tool), else ConfigError listing the
    tools there are."""
    for server in servers:
        if tool in server.tool_names:
            return server
    failed = [s for s in servers if s.status != "connected"]
    if failed:
        why = "; ".join(f"{s.name} {s.status}: {s.reason or 'no reason given'}" for s in failed)
        raise NotConnected(f"no connected server offers the tool {tool!r}: {why}")
    names = ", ".join(n for s in servers for n in s.tool_names) or "none"
    raise ConfigError(f"no connected server offers the tool {tool!r} (tools: {names})")
