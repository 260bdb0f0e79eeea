"""The client's subcommands: servers, tools, call, prompt, resources, templates, read, serve,
config, demo.

Config comes from ``--config FILE``, else ``./.mcp.json``, else the embedded default (the demo
server shipped in the package, started with the current Python). ``--json`` prints machine-
readable output. Exit codes: 0 done, 1 a server failed or a tool answered with an error,
2 bad usage or configuration.
"""
from __future__ import annotations

import argparse
import base64
import binascii
import json
import mimetypes
import os
import re
import sys
import threading
import time
from concurrent.futures import wait
from typing import Any
from urllib.parse import urlsplit

from ..client.notebook import ProgressBar
from ..client.server import DEFAULT_MAX_TOTAL, McpServer
from ..client.tasks import TaskHandle, TaskStatus
from ..config import McpConfig, ServerSpec
from ..errors import ConfigError, McpError, NotConnected, RaiderError, ToolTimeout
from .common import (  # noqa: F401
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    default_config,
    load_config,
    write_file,
)
from .config_cli import register as register_config
from .serve_cli import register as register_serve

TOOL_FORMATS = ("openai", "openai-responses", "anthropic")
START_TIMEOUT_S = 60.0
#: the most seconds an interrupted call's cancel is given to reach the server
CANCEL_DRAIN_S = 5.0
#: the most characters of a reason a row of the ``servers`` table shows (``--json`` shows it
#: whole; a quoted stderr line in it is bounded already, see errors.STDERR_QUOTE_CHARS)
REASON_CELL_CHARS = 120


def register(sub: argparse._SubParsersAction) -> None:
    def command(name: str, run, help_text: str) -> argparse.ArgumentParser:
        parser = sub.add_parser(name, help=help_text, description=help_text)
        parser.add_argument("--config", metavar="FILE",
                            help="an .mcp.json (default ./.mcp.json, else the embedded demo server)")
        parser.add_argument("--json", action="store_true", help="print JSON for scripts")
        parser.set_defaults(run=run)
        return parser

    command("servers", run_servers, "start every configured server and show its status")
    parser = command("tools", run_tools, "list the tools of the configured servers")
    parser.add_argument("server", nargs="?", help="only this server")
    parser.add_argument("--format", choices=TOOL_FORMATS, default=None,
                        help="print the tools as a model API's tool definitions (JSON)")
    parser.add_argument("--strict", action=argparse.BooleanOptionalAction, default=True,
                        help="OpenAI strict mode where the schema allows it (default: on)")
    parser = command("call", run_call, "call a tool by its mcp__SERVER__TOOL name (starts only "
                                       "that server)")
    parser.add_argument("tool")
    parser.add_argument("--args", default="{}", metavar="JSON", help="the arguments, a JSON object")
    parser.add_argument("--timeout", type=_positive_seconds, metavar="S",
                        help="seconds the call may take (more than 0)")
    parser.add_argument("--save", metavar="DIR",
                        help="write the result's image, audio and resource blocks to files in DIR")
    parser.add_argument("--max-tokens", type=_positive_int, metavar="N",
                        help="tokens of result text passed on (default MAX_MCP_OUTPUT_TOKENS, "
                             "else 25000)")
    parser.add_argument("--task-timeout", type=_positive_seconds, metavar="S",
                        help="seconds a call that became a task may run (then it is cancelled)")
    parser.add_argument("--task-handle", metavar="FILE",
                        help="when the call becomes a task, write its handle (JSON) to FILE "
                             "(for 'raider-sync tasks resume FILE')")
    parser.add_argument("--detach", action="store_true",
                        help="with --task-handle: return once the call is a task, leaving it "
                             "running on the server")
    parser.epilog = ("Ctrl-C cancels the call on the server (a task with tasks/cancel); "
                     "--detach is the way to leave a task running.")
    parser = command("prompt", run_prompt, "render a prompt of a server")
    parser.add_argument("server")
    parser.add_argument("name")
    parser.add_argument("--args", default="{}", metavar="JSON")
    parser = command("resources", run_resources, "list the resources of the configured servers")
    parser.add_argument("server", nargs="?", help="only this server")
    parser = command("templates", run_templates, "list the resource templates of a server")
    parser.add_argument("server")
    parser = command("read", run_read, "read a resource of a server")
    parser.add_argument("server")
    parser.add_argument("uri")
    register_serve(sub, _guard)
    register_config(sub, _guard)
    command("demo", run_demo, "show the whole library on the configured (or embedded demo) servers")


# -- helpers ---------------------------------------------------------------------------------

class _Servers:
    """The configured servers of one command, started in parallel, stopped on exit.

    On a terminal (and without --json) a live status line on stderr shows each server's
    progress while they start.
    """

    def __init__(self, args, only: str | None = None, tool: str | None = None, **options: Any):
        config = load_config(args.config)
        if only:
            specs = [config.server(only)]
        else:
            owner = owner_of_tool(config, tool) if tool else None
            specs = [owner] if owner is not None else config.servers
        self.line = StatusLine() if _interactive(args) else None
        on_status = self.line.changed if self.line else None
        self.servers = [McpServer(spec, on_status=on_status, **options) for spec in specs]
        self.warnings = config.warnings
        for warning in self.warnings:
            print(f"raider-sync: warning: {warning}", file=sys.stderr)

    def __enter__(self) -> list[McpServer]:
        if self.line:
            self.line.show(self.servers)
        wait([server.start_f() for server in self.servers], timeout=START_TIMEOUT_S)
        if self.line:
            self.line.clear()
        return self.servers

    def __exit__(self, *exc) -> None:
        wait([server.stop_f() for server in self.servers], timeout=START_TIMEOUT_S)


def owner_of_tool(config: McpConfig, tool: str) -> ServerSpec | None:
    """The configured server a tool name ``mcp__KEY__TOOL`` belongs to (the longest key that
    fits, as keys may hold ``__``), else None."""
    owners = [spec for spec in config.servers if tool.startswith(f"mcp__{spec.key}__")]
    return max(owners, key=lambda spec: len(spec.key)) if owners else None


class StatusLine:
    """One line on stderr, rewritten as servers change status: ``starting: a ✓ b … c ✗``."""

    MARKS = {"connected": "✓", "failed": "✗", "starting": "…", "configured": "·", "stopped": "-"}

    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        self.servers: list[McpServer] = []
        self.started = time.monotonic()
        self.done = False
        self._lock = threading.Lock()

    def show(self, servers: list[McpServer]) -> None:
        self.servers = servers
        self._draw()

    def changed(self, _server: McpServer) -> None:
        self._draw()

    def clear(self) -> None:
        """Erase the line; later status changes (the stop) draw nothing."""
        with self._lock:
            self.done = True
            self.stream.write("\r\x1b[K")
            self.stream.flush()

    def _draw(self) -> None:
        with self._lock:
            if self.done:
                return
            marks = " ".join(f"{s.name} {self.MARKS.get(s.status, '?')}" for s in self.servers)
            elapsed = time.monotonic() - self.started
            self.stream.write(f"\r\x1b[Kstarting: {marks} ({elapsed:.1f} s)")
            self.stream.flush()


def _interactive(args) -> bool:
    """Whether to draw on stderr: a terminal, and no --json."""
    return sys.stderr.isatty() and not getattr(args, "json", False)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, not {value}")
    return value


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, not {text}")
    return value


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


def _table(rows: list[list[str]]) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())


def _cell(text: str, limit: int) -> str:
    """``text`` on one line of at most ``limit`` characters: when cut, its start (what
    happened) and its end (the server's last words), with "…" between them."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    head = limit // 3
    return f"{text[:head]}…{text[len(text) - (limit - head - 1):]}"


def _guard(run):
    """Turn raider_sync's errors into a message on stderr and an exit code; with --json also
    into ``{"error": {"type", "message"[, "code", "data"]}}`` on stdout, for scripts."""
    def guarded(args) -> int:
        try:
            return run(args)
        except ConfigError as exc:
            return _report(args, exc, EXIT_USAGE)
        except (RaiderError, TimeoutError) as exc:
            return _report(args, exc, EXIT_FAILED)
    guarded.__name__ = run.__name__
    return guarded


def _report(args, exc: BaseException, code: int, **details: Any) -> int:
    """Tell of ``exc`` (on stdout too, as JSON with ``details``, under --json); ``code``."""
    print(f"raider-sync: {exc}", file=sys.stderr)
    if getattr(args, "json", False):
        error: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)}
        if isinstance(exc, McpError):
            error.update(code=exc.code, message=exc.message)
            if exc.data is not None:
                error["data"] = exc.data
        _print_json({"error": {**error, **details}})
    return code


def _row(server: McpServer) -> dict:
    """A server as ``servers --json`` shows it."""
    return {"name": server.name, "transport": server.transport, "status": server.status,
            "tools": len(server.tool_names), "reason": server.reason or ""}


def _json_arg(text: str, what: str) -> dict:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{what}: not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{what}: expected a JSON object")
    return value


def _text_of(result: dict, saved: dict[int, str] | None = None) -> str:
    parts = []
    for index, block in enumerate(result.get("content") or []):
        if block.get("type") == "text":
            parts.append(block.get("text", ""))
        elif saved and index in saved:
            parts.append(f"[{block.get('type')} block saved to {saved[index]}]")
        else:
            parts.append(f"[{block.get('type')} block]")
    return "\n".join(parts)


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


# -- commands --------------------------------------------------------------------------------

@_guard
def run_servers(args) -> int:
    with _Servers(args) as servers:
        rows = [_row(s) for s in servers]
    if args.json:
        _print_json(rows)
    else:
        _table([["NAME", "TRANSPORT", "STATUS", "TOOLS", "REASON"]] +
               [[r["name"], r["transport"], r["status"], str(r["tools"]),
                 _cell(r["reason"], REASON_CELL_CHARS)] for r in rows])
    return EXIT_OK if all(r["status"] == "connected" for r in rows) else EXIT_FAILED


@_guard
def run_tools(args) -> int:
    with _Servers(args, args.server) as servers:
        tools = [tool for server in servers for tool in server.list_tools()]
        failed = [s for s in servers if s.status != "connected"]
    if args.format:
        _print_json(_tool_definitions(tools, args.format, args.strict))
    elif args.json:
        _print_json(tools)
    else:
        _table([["TOOL", "DESCRIPTION"]] +
               [[t["name"], (t.get("description") or "").strip().splitlines()[0][:70]
                 if t.get("description") else ""] for t in tools])
    for server in failed:
        print(f"raider-sync: {server.name}: {server.status}: {server.reason}", file=sys.stderr)
    return EXIT_FAILED if failed else EXIT_OK


def _tool_definitions(tools: list[dict], kind: str, strict: bool) -> list[dict]:
    from ..llm import to_anthropic, to_openai
    if kind == "anthropic":
        return to_anthropic(tools)
    return to_openai(tools, strict=strict, api="responses" if kind == "openai-responses" else "chat")


@_guard
def run_call(args) -> int:
    arguments = _json_arg(args.args, "--args")
    if args.detach and not args.task_handle:
        raise ConfigError("--detach needs --task-handle FILE (the handle resumes the task)")
    options = {"max_output_tokens": args.max_tokens} if args.max_tokens else {}
    with _Servers(args, tool=args.tool, **options) as servers:  # only the tool's server, when named
        try:
            server = _server_for_tool(servers, args.tool)
        except NotConnected as exc:  # the servers that failed, and why, for scripts too
            return _report(args, exc, EXIT_FAILED, servers=[
                _row(s) for s in servers if s.status != "connected"])
        bar = ProgressBar(args.tool, stream=sys.stderr) if _interactive(args) else None
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
        _print_json({"task_id": handle.task_id, "server": handle.server,
                     "task_handle": args.task_handle})
    else:
        print(f"task {handle.task_id} runs on; its handle is in {args.task_handle} "
              f"(raider-sync tasks resume {args.task_handle})")


def print_result(args, result: dict, save: str | None = None) -> int:
    """Print a tool's result as text (or JSON under --json), its blocks saved to ``save``
    first; the exit code: 1 for an error result, else 0."""
    saved = save_blocks(result, save) if save else {}
    for path in saved.values():
        print(f"raider-sync: saved {path}", file=sys.stderr)
    if args.json:
        _print_json(result)
    else:
        print(_text_of(result, saved))
    return EXIT_FAILED if result.get("isError") else EXIT_OK


def save_blocks(result: dict, folder: str) -> dict[int, str]:
    """Write the image, audio and embedded resource blocks of ``result`` to files in
    ``folder`` (made if missing); ``{block index: path}``. A file is named after its block's
    index and the resource's last path segment, or its MIME type: never outside ``folder``.
    Raises ConfigError when the folder cannot be written or a block's base64 is invalid."""
    saved: dict[int, str] = {}
    for index, block in enumerate(result.get("content") or []):
        found = _block_file(block)
        if found is None:
            continue
        stem, mime, data = found
        name = f"{index}-{stem}{'' if os.path.splitext(stem)[1] else _extension(mime)}"
        path = os.path.join(folder, name)
        try:
            os.makedirs(folder, exist_ok=True)
            with open(path, "wb") as fh:
                fh.write(data)
        except OSError as exc:
            raise ConfigError(f"--save: cannot write {path}: {exc.strerror or exc}") from exc
        saved[index] = path
    return saved


def _block_file(block: Any) -> tuple[str, str, bytes] | None:
    """(name stem, MIME type, bytes) of a block worth a file, else None."""
    if not isinstance(block, dict):
        return None
    kind = block.get("type")
    if kind in ("image", "audio") and isinstance(block.get("data"), str):
        return kind, str(block.get("mimeType") or ""), _b64(block["data"])
    resource = block.get("resource")
    if kind != "resource" or not isinstance(resource, dict):
        return None
    segment = urlsplit(str(resource.get("uri", ""))).path.rstrip("/").rsplit("/", 1)[-1]
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", segment).lstrip(".") or "resource"
    mime = str(resource.get("mimeType") or "")
    if isinstance(resource.get("blob"), str):
        return stem, mime, _b64(resource["blob"])
    if isinstance(resource.get("text"), str):
        return stem, mime or "text/plain", resource["text"].encode()
    return None


def _b64(data: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (ValueError, binascii.Error) as exc:
        raise ConfigError(f"--save: a block's base64 data is invalid: {exc}") from None


def _extension(mime: str) -> str:
    return mimetypes.guess_extension(mime.split(";")[0].strip()) or ".bin"


@_guard
def run_prompt(args) -> int:
    arguments = _json_arg(args.args, "--args")
    with _Servers(args, args.server) as (server,):
        prompt = server.get_prompt(args.name, arguments)
    if args.json:
        _print_json(prompt)
    else:
        for message in prompt.get("messages", []):
            content = message.get("content", {})
            print(f"{message.get('role')}: {content.get('text', content)}")
    return EXIT_OK


@_guard
def run_resources(args) -> int:
    with _Servers(args, args.server) as servers:
        rows = [{"server": s.name, **r} for s in servers for r in s.list_resources()]
        failed = [s for s in servers if s.status != "connected"]
    if args.json:
        _print_json(rows)
    else:
        _table([["SERVER", "URI", "NAME", "TYPE"]] +
               [[r["server"], r.get("uri", ""), r.get("name", ""), r.get("mimeType") or ""]
                for r in rows])
    for server in failed:
        print(f"raider-sync: {server.name}: {server.status}: {server.reason}", file=sys.stderr)
    return EXIT_FAILED if failed else EXIT_OK


@_guard
def run_templates(args) -> int:
    with _Servers(args, args.server) as (server,):
        if server.status != "connected":
            print(f"raider-sync: {server.name}: {server.status}: {server.reason}", file=sys.stderr)
            return EXIT_FAILED
        templates = server.list_resource_templates()
    if args.json:
        _print_json(templates)
    elif templates:
        _table([["URI TEMPLATE", "NAME", "TYPE"]] +
               [[t.get("uriTemplate", ""), t.get("name", ""), t.get("mimeType") or ""]
                for t in templates])
    else:
        print(f"{server.name} has no resource templates")
    return EXIT_OK


@_guard
def run_read(args) -> int:
    with _Servers(args, args.server) as (server,):
        contents = server.read_resource(args.uri)
    if args.json:
        _print_json(contents)
    else:
        for item in contents:
            print(item["text"] if "text" in item else
                  f"[binary {item.get('mimeType', '')}, {len(item.get('blob', '')) * 3 // 4} bytes]")
    return EXIT_OK


@_guard
def run_demo(args) -> int:
    from .demo_run import demo
    return demo(args)
