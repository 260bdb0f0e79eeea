"""raider-sync: the command line. Each part registers its own subcommands here."""
from __future__ import annotations

import argparse
import sys

EPILOG = """\
Servers come from --config FILE, else ./.mcp.json, else the embedded demo server.
--json prints machine-readable output for scripts (an error as {"error": {...}}).

exit codes:
  0  done
  1  a server failed, a tool answered with an error, or the call failed
  2  bad usage or configuration (the message names the field)
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="raider-sync", formatter_class=argparse.RawDescriptionHelpFormatter,
        description=("A synchronous MCP client: start configured servers, list and call their "
                     "tools, serve shell tools, run the gateway."),
        epilog=EPILOG)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for register in _registrars():
        register(sub)
    return parser


def _registrars():
    from .client_cli import register as client
    yield client
    from .tasks_cli import register as tasks
    yield tasks
    from .login_cli import register as auth
    yield auth
    try:
        from ..gateway.cli import register as gateway
    except ImportError:
        pass
    else:
        yield gateway
    try:
        from ..shell.cli import register as shell
    except ImportError:
        pass
    else:
        yield shell


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code (0 ok, 1 failure, 2 usage)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args.run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
