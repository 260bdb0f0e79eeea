"""``raider-sync serve-shell``: the shell tools as an MCP server over stdio."""
from __future__ import annotations

import argparse
import os
import sys

from .bash import BashTools


def register(subparsers) -> None:
    """Add ``serve-shell [--cwd DIR] [--allow WORD ...]`` to the command line."""
    parser = subparsers.add_parser(
        "serve-shell", help="serve bash, bash_output and kill_shell over stdio",
        description="Serve the shell tools (bash, bash_output, kill_shell) as an MCP server "
                    "over stdin/stdout until stdin ends; every shell is stopped then.")
    add_arguments(parser)
    parser.set_defaults(run=run)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cwd", metavar="DIR", default=None,
                        help="the directory commands run in (default: the current one)")
    parser.add_argument("--allow", metavar="WORD", nargs="+", action="extend", default=None,
                        help="the only first words a command may start with (repeatable)")
    parser.add_argument("--timeout", metavar="SECONDS", type=float, default=120,
                        help="default foreground timeout of bash, in seconds (default 120)")


def run(args: argparse.Namespace) -> int:
    """Serve until stdin ends. Blocks; returns the exit code."""
    cwd = args.cwd
    if cwd is not None and not os.path.isdir(cwd):
        print(f"raider-sync serve-shell: no such directory: {cwd}", file=sys.stderr)
        return 2
    with BashTools(working_directory=os.path.abspath(cwd) if cwd else None,
                   allowed_commands=args.allow, default_timeout=args.timeout) as shell:
        shell.server.serve_stdio()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="raider-sync serve-shell", description=(
        "Serve the shell tools over stdio."))
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
