"""``raider-sync config import|export``: other clients' configuration files to ``.mcp.json``
and back (see :mod:`raider_sync.config.dialects`).

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
from .common import EXIT_OK


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


def run_import(args) -> int:
    text = _read(args.file)
    format = args.format or dialects.detect(text, args.file)
    document, warnings = dialects.to_native(dialects.parse(text, format, args.file), format,
                                            args.file)
    checked = McpConfig.from_dict(document, source=args.file)  # ConfigError names the field
    _warn(warnings + checked.warnings)
    if not args.write:
        print(dialects.render(document, "claude"), end="")
        return EXIT_OK
    merged: dict = {"mcpServers": {}}
    if os.path.exists(args.write):
        merged = dialects.parse(_read(args.write), "claude", args.write)
        if not isinstance(merged.setdefault("mcpServers", {}), dict):
            raise ConfigError(f"{args.write}: mcpServers: expected an object")
    added = []
    for name, entry in document["mcpServers"].items():
        if name in merged["mcpServers"]:
            _warn([f"{name}: already in {args.write}; kept as it is there"])
            continue
        merged["mcpServers"][name] = entry
        added.append(name)
    _write(args.write, dialects.render(merged, "claude"), replace=True)
    print(f"raider-sync: {args.write}: added {', '.join(added) or 'no servers'}",
          file=sys.stderr)
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
        _write(args.write, rendered, replace=False)
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


def _write(path: str, text: str, *, replace: bool) -> None:
    """Write ``text`` to ``path`` whole or not at all (a file beside it, then renamed); a
    file that exists is only replaced when ``replace``."""
    if not replace and os.path.exists(path):
        raise ConfigError(f"--write: {path} exists; choose a new path")
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        with open(temporary, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(temporary, path)
    except OSError as exc:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise ConfigError(f"--write: cannot write {path}: {exc.strerror or exc}") from None


def _warn(warnings: list[str]) -> None:
    for warning in warnings:
        print(f"raider-sync: warning: {warning}", file=sys.stderr)

