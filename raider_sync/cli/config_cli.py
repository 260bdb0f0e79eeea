"""``raider-sync config import|export``: other clients' configuration files to ``.mcp.json``
and back (see :mod:`raider_sync.config.dialects`); ``raider-sync add``: the servers a domain,
a server card or a registry server.json publishes (see :mod:`raider_sync.config.discovery`).

Both print the converted file on stdout and a warning per field left out on stderr; nothing is
written unless ``--write PATH`` says where. Variables stay references: a ``${TOKEN}`` is never
expanded into the file written.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Callable

from ..config import McpConfig, dialects
from ..errors import ConfigError
from .common import EXIT_OK, write_file


def register(sub: argparse._SubParsersAction, guard: Callable) -> None:
    config = sub.add_parser("config", help="convert other clients' MCP configuration files",
                            description="Convert between .mcp.json and other clients' files: "
                                        + ", ".join(dialects.FORMATS) + ".")
    verbs = config.add_subparsers(dest="verb", metavar="VERB")
    verbs.required = True
    text = "read another client's file as .mcp.json (the format is guessed unless given)"
    parser = verbs.add_parser("import", help=text, description=text)
    parser.add_argument("file")
    parser.add_argument("--format", choices=dialects.FORMATS, help="the file's format")
    parser.add_argument("--write", metavar="PATH", help="add its servers to this .mcp.json "
                                                        "(servers already there are kept)")
    parser.set_defaults(run=guard(run_import))
    text = "write the configured servers in another client's format"
    parser = verbs.add_parser("export", help=text, description=text)
    parser.add_argument("--format", choices=dialects.FORMATS, required=True)
    parser.add_argument("--config", metavar="FILE", default=".mcp.json",
                        help="the file to convert (default ./.mcp.json)")
    parser.add_argument("--write", metavar="PATH", help="write it to this new file")
    parser.set_defaults(run=guard(run_export))
    text = ("find the servers a domain (its AI catalog), an MCP URL (its server card) or a "
            "registry server.json publishes, and show them as .mcp.json entries")
    parser = sub.add_parser("add", help=text, description=text)
    parser.add_argument("target", help="example.com, https://example.com/mcp, or a "
                                       "server.json file with --server-json")
    parser.add_argument("--server-json", action="store_true",
                        help="TARGET is a registry server.json file")
    parser.add_argument("--prefer", choices=("remote", "package"), default="remote",
                        help="for a server.json: its remote (default) or its package")
    parser.add_argument("--var", action="append", default=[], metavar="NAME=VALUE",
                        help="a value for a URL variable of a card (repeatable)")
    parser.add_argument("--write", metavar="PATH", help="add the servers to this .mcp.json "
                                                        "(servers already there are kept)")
    parser.set_defaults(run=guard(run_add))


def run_import(args) -> int:
    text = _read(args.file)
    format = args.format or dialects.detect(text, args.file)
    document, warnings = dialects.to_native(dialects.parse(text, format, args.file), format,
                                            args.file)
    checked = McpConfig.from_dict(document, source=args.file)  # ConfigError names the field
    _warn(warnings + checked.warnings)
    return _show_or_add(document, args.write)


def run_add(args) -> int:
    variables = {}
    for item in args.var:
        name, eq, value = item.partition("=")
        if not eq or not name:
            raise ConfigError(f"--var: expected NAME=VALUE, not {item!r}")
        variables[name] = value
    if args.server_json:
        document = dialects.parse(_read(args.target), "claude", args.target)
        found = McpConfig.from_server_json(document, prefer=args.prefer, variables=variables)
    else:
        found = McpConfig.discover(args.target, variables=variables)
    _warn(found.notes)
    for server in found.servers:
        for need in server.needs:
            print(f"raider-sync: {server.name} needs {need}", file=sys.stderr)
    if not found.servers:
        raise ConfigError(f"{args.target}: no server found that this client can reach")
    McpConfig.from_dict(found.document(), env={}, source=args.target)  # names a bad field
    return _show_or_add(found.document(), args.write)


def _show_or_add(document: dict, path: str | None) -> int:
    """Print ``document`` (``.mcp.json``), or with ``path`` add its servers to that file,
    keeping the servers it has."""
    if not path:
        print(dialects.render(document, "claude"), end="")
        return EXIT_OK
    merged: dict = {"mcpServers": {}}
    if os.path.exists(path):
        merged = dialects.parse(_read(path), "claude", path)
        if not isinstance(merged.setdefault("mcpServers", {}), dict):
            raise ConfigError(f"{path}: mcpServers: expected an object")
    added = []
    for name, entry in document["mcpServers"].items():
        if name in merged["mcpServers"]:
            _warn([f"{name}: already in {path}; kept as it is there"])
            continue
        merged["mcpServers"][name] = entry
        added.append(name)
    write_file(path, dialects.render(merged, "claude"), replace=True, option="--write")
    print(f"raider-sync: {path}: added {', '.join(added) or 'no servers'}", file=sys.stderr)
    return EXIT_OK


def run_export(args) -> int:
    text = _read(args.config)
    source = dialects.detect(text, args.config)
    document = dialects.parse(text, source, args.config)
    if source != "claude":
        document, warnings = dialects.to_native(document, source, args.config)
        _warn(warnings)
    converted, warnings = dialects.from_native(document, args.format, args.config)
    _warn(warnings)
    rendered = dialects.render(converted, args.format)
    if args.write:
        write_file(args.write, rendered, replace=False, option="--write")
        print(f"raider-sync: wrote {args.write}", file=sys.stderr)
    else:
        print(rendered, end="")
    return EXIT_OK


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8-sig") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}"
                          ) from None


def _warn(warnings: list[str]) -> None:
    for warning in warnings:
        print(f"raider-sync: warning: {warning}", file=sys.stderr)

