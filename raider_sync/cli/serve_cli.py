"""``raider-sync serve [MODULE:ATTR] [--http HOST:PORT [--sessions] [--allow-host NAME]]
[--app-dir DIR]``: serve a ToolServer.

Over stdio by default; with ``--http`` over Streamable HTTP under waitress (the ``gateway``
extra) until SIGINT or SIGTERM. The target is imported the way uvicorn and flask import an
app: the current folder (or ``--app-dir``) comes first on ``sys.path``, so
``raider-sync serve my_tools:build`` finds ``./my_tools.py`` as ``python -m`` would.
"""
from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Iterator

from ..errors import ConfigError

DEFAULT_TARGET = "raider_sync.cli.demo:build"
DESCRIPTION = """\
Serve a ToolServer as an MCP server: over stdio (the default, for a client that starts this
command), or over Streamable HTTP with --http HOST:PORT (port 0 picks a free one; the address
is printed on stderr as "serving NAME on http://HOST:PORT/mcp") until SIGINT or SIGTERM.
TARGET is MODULE:ATTR naming a ToolServer or a function returning one (ATTR defaults to
build); MODULE is imported from the current folder first, or from --app-dir."""
EXIT_OK, EXIT_FAILED = 0, 1
NO_WAITRESS = ("--http needs waitress, which is in the gateway extra: "
               "pip install 'raider_sync[gateway]'")


def register(sub: argparse._SubParsersAction, guard) -> None:
    """Add ``serve`` to the subcommands; ``guard`` maps raider_sync's errors to exit codes."""
    serve = sub.add_parser("serve", help="serve a ToolServer over stdio or HTTP (default: the "
                                         "demo server)", description=DESCRIPTION)
    serve.add_argument("target", nargs="?", default=DEFAULT_TARGET, metavar="TARGET",
                       help=f"MODULE:ATTR naming a ToolServer or a function returning one "
                            f"(default {DEFAULT_TARGET})")
    serve.add_argument("--http", type=host_port, metavar="HOST:PORT",
                       help="serve over Streamable HTTP on this address instead of stdio")
    serve.add_argument("--path", type=url_path, default="/mcp",
                       help="with --http: the URL path the server answers at (default /mcp)")
    serve.add_argument("--sessions", action="store_true",
                       help="with --http: give clients of the handshake era sessions "
                            "(Mcp-Session-Id, resumable streams; kept in this process)")
    serve.add_argument("--allow-host", action="append", metavar="NAME", dest="allowed_hosts",
                       help="with --http: a Host the server answers besides the loopback "
                            "names (repeatable; '*' for any); on a non-loopback address "
                            "every host is answered unless this is given")
    serve.add_argument("--app-dir", default=".", metavar="DIR",
                       help="the folder MODULE is imported from first (default: the current "
                            "folder)")
    serve.set_defaults(run=guard(run_serve))


def host_port(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6; an empty host is 127.0.0.1) for argparse."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def url_path(text: str) -> str:
    """A URL path for argparse: it begins with ``/``."""
    if not text.startswith("/"):
        raise argparse.ArgumentTypeError(f"must begin with '/', got {text!r}")
    return text


def load_target(target: str, app_dir: str = "."):
    """The ToolServer ``MODULE:ATTR`` names (ATTR called when it is a function), with
    ``app_dir`` first on ``sys.path``. Raises ConfigError naming the target when it cannot
    be imported or is no ToolServer."""
    folder = os.path.abspath(app_dir)
    if not os.path.isdir(folder):
        raise ConfigError(f"--app-dir: no such folder: {app_dir}")
    sys.path.insert(0, folder)  # as `python -m` does for the current folder
    module_name, _, attr = target.partition(":")
    try:
        found = getattr(importlib.import_module(module_name), attr or "build")
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"cannot load {target}: {exc} (imported from {folder} first; "
                          f"--app-dir names another folder)") from None
    tool_server = found() if callable(found) else found
    if not callable(getattr(tool_server, "serve_stdio", None)):
        raise ConfigError(f"cannot serve {target}: it is a {type(tool_server).__name__}, "
                          f"not a ToolServer")
    return tool_server


def run_serve(args) -> int:
    """Serve until stdin ends (stdio) or SIGINT/SIGTERM (``--http``). Blocks. Exit 1 for a
    missing waitress or an address that cannot be listened on."""
    if args.http is not None and not _has_waitress():  # before the target's code runs
        print(f"raider-sync serve: {NO_WAITRESS}", file=sys.stderr)
        return EXIT_FAILED
    tool_server = load_target(args.target, args.app_dir)
    with tool_server:
        if args.http is None:
            tool_server.serve_stdio()
            return EXIT_OK
        host, port = args.http
        return _serve_http(tool_server, host, port, path=args.path, sessions=args.sessions,
                           allowed_hosts=args.allowed_hosts)


def _serve_http(tool_server, host: str, port: int, path: str, sessions: bool = False,
                allowed_hosts: list[str] | None = None) -> int:
    from ..serve.serving_http import serve_http

    def serving(url: str) -> None:
        print(f"raider-sync serve: serving {tool_server.name} on {url}", file=sys.stderr,
              flush=True)

    try:
        with _sigterm_interrupts():
            serve_http(tool_server, host, port, path=path, on_serving=serving,
                       sessions=sessions, allowed_hosts=allowed_hosts)
    except OSError as exc:
        print(f"raider-sync serve: cannot listen on {host}:{port}: {exc.strerror or exc}",
              file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:  # a signal before serving began: nothing to close yet
        pass
    return EXIT_OK


@contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt, as SIGINT does, so either stops the server the same
    clean way (in the main thread only, where signal handlers live)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _has_waitress() -> bool:
    try:
        import waitress  # noqa: F401
    except ImportError:
        return False
    return True
