"""The client's subcommands: servers, tools, call, prompt, resources, templates, read, serve,
config, demo. This module registers them all and runs those that list or read what the servers
offer; ``call`` is :mod:`.call_cli`'s, the servers a command starts :mod:`.started`'s.

Config comes from ``--config FILE``, else ``./.mcp.json``, else the embedded default (the demo
server shipped in the package, started with the current Python). ``--json`` prints machine-
readable output. Exit codes: 0 done, 1 a server failed or a tool answered with an error,
2 bad usage or configuration.
"""
from __future__ import annotations

import argparse
import sys

from .call_cli import run_call
from .common import (  # noqa: F401 - importable from here as before
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    default_config,
    guard,
    json_arg,
    load_config,
    positive_int,
    positive_seconds,
    print_json,
    write_file,
)
from .config_cli import register as register_config
from .serve_cli import register as register_serve
from .started import (  # noqa: F401 - importable from here as before
    CANCEL_DRAIN_S,
    START_TIMEOUT_S,
    StartedServers,
    StatusLine,
    owner_of_tool,
    server_row,
)
from .tool_results import print_result, save_blocks  # noqa: F401 - importable from here as before

TOOL_FORMATS = ("openai", "openai-responses", "anthropic")
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
    parser.add_argument("--timeout", type=positive_seconds, metavar="S",
                        help="seconds the call may take (more than 0)")
    parser.add_argument("--save", metavar="DIR",
                        help="write the result's image, audio and resource blocks to files in DIR")
    parser.add_argument("--max-tokens", type=positive_int, metavar="N",
                        help="tokens of result text passed on (default MAX_MCP_OUTPUT_TOKENS, "
                             "else 25000)")
    parser.add_argument("--task-timeout", type=positive_seconds, metavar="S",
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
    register_serve(sub, guard)
    register_config(sub, guard)
    command("demo", run_demo, "show the whole library on the configured (or embedded demo) servers")


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


# -- commands --------------------------------------------------------------------------------

@guard
def run_servers(args) -> int:
    with StartedServers(args) as servers:
        rows = [server_row(s) for s in servers]
    if args.json:
        print_json(rows)
    else:
        _table([["NAME", "TRANSPORT", "STATUS", "TOOLS", "REASON"]] +
               [[r["name"], r["transport"], r["status"], str(r["tools"]),
                 _cell(r["reason"], REASON_CELL_CHARS)] for r in rows])
    return EXIT_OK if all(r["status"] == "connected" for r in rows) else EXIT_FAILED


@guard
def run_tools(args) -> int:
    with StartedServers(args, args.server) as servers:
        tools = [tool for server in servers for tool in server.list_tools()]
        failed = [s for s in servers if s.status != "connected"]
    if args.format:
        print_json(_tool_definitions(tools, args.format, args.strict))
    elif args.json:
        print_json(tools)
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


@guard
def run_prompt(args) -> int:
    arguments = json_arg(args.args, "--args")
    with StartedServers(args, args.server) as (server,):
        prompt = server.get_prompt(args.name, arguments)
    if args.json:
        print_json(prompt)
    else:
        for message in prompt.get("messages", []):
            content = message.get("content", {})
            print(f"{message.get('role')}: {content.get('text', content)}")
    return EXIT_OK


@guard
def run_resources(args) -> int:
    with StartedServers(args, args.server) as servers:
        rows = [{"server": s.name, **r} for s in servers for r in s.list_resources()]
        failed = [s for s in servers if s.status != "connected"]
    if args.json:
        print_json(rows)
    else:
        _table([["SERVER", "URI", "NAME", "TYPE"]] +
               [[r["server"], r.get("uri", ""), r.get("name", ""), r.get("mimeType") or ""]
                for r in rows])
    for server in failed:
        print(f"raider-sync: {server.name}: {server.status}: {server.reason}", file=sys.stderr)
    return EXIT_FAILED if failed else EXIT_OK


@guard
def run_templates(args) -> int:
    with StartedServers(args, args.server) as (server,):
        if server.status != "connected":
            print(f"raider-sync: {server.name}: {server.status}: {server.reason}", file=sys.stderr)
            return EXIT_FAILED
        templates = server.list_resource_templates()
    if args.json:
        print_json(templates)
    elif templates:
        _table([["URI TEMPLATE", "NAME", "TYPE"]] +
               [[t.get("uriTemplate", ""), t.get("name", ""), t.get("mimeType") or ""]
                for t in templates])
    else:
        print(f"{server.name} has no resource templates")
    return EXIT_OK


@guard
def run_read(args) -> int:
    with StartedServers(args, args.server) as (server,):
        contents = server.read_resource(args.uri)
    if args.json:
        print_json(contents)
    else:
        for item in contents:
            print(item["text"] if "text" in item else
                  f"[binary {item.get('mimeType', '')}, {len(item.get('blob', '')) * 3 // 4} bytes]")
    return EXIT_OK


@guard
def run_demo(args) -> int:
    from .demo_run import demo
    return demo(args)
