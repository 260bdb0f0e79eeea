"""``raider-sync gateway --config FILE --listen HOST:PORT``: serve the relay with waitress, or
with ``--workers N`` in N waitress processes under gunicorn's master (see
:mod:`raider_sync.gateway.workers`), or with ``--server granian`` in granian's worker
processes (see :mod:`raider_sync.gateway.engines`).

waitress and gunicorn (the ``gateway`` extra) and granian (``gateway-granian``) are imported
only when serving. The relay keeps
no session state, so any number of processes and machines can serve behind a load balancer
(see :mod:`raider_sync.gateway.relay` and ``docs/gateway.md``); gunicorn by hand, with the
waitress workers ``--workers`` runs::

    RAIDER_GATEWAY_CONFIG=gateway.json gunicorn -w 4 --threads 32 -b 0.0.0.0:8080 \\
        -k raider_sync.gateway.workers.WaitressWorker --no-control-socket \\
        'raider_sync.gateway.relay:app_from_env(threads=32)'
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading

from ..errors import ConfigError
from . import audit
from .config import GatewayConfig
from .engines import ENGINES
from .relay import Relay
from .serving import HEADER_TIMEOUT, Serving, reload_keys_on_sighup


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="FILE",
                        help="the gateway config (JSON; .toml on Python 3.11+); required to serve")
    parser.add_argument("--listen", default="127.0.0.1:8080", metavar="HOST:PORT",
                        help="address to serve on (default 127.0.0.1:8080; port 0 picks one)")
    parser.add_argument("--server", choices=ENGINES, default="waitress",
                        help="the serving engine (default waitress; granian: the "
                             "gateway-granian extra, see docs/gateway.md for how they differ)")
    parser.add_argument("--threads", type=int, default=16, metavar="N",
                        help="worker threads: requests served at once, SSE streams included "
                             "(default 16)")
    parser.add_argument("--workers", type=int, default=0, metavar="N",
                        help="serve with N waitress processes of --threads threads each on one "
                             "socket, supervised by gunicorn (default 0: one waitress process); "
                             "with --server granian, N granian worker processes (default 1)")
    parser.add_argument("--connection-limit", type=int, metavar="N",
                        help="connections held at once, slow ones included (default: from the "
                             "open-file limit, at most 10000); with --server granian, the "
                             "requests taken at once by each worker")
    parser.add_argument("--header-timeout", type=float, default=HEADER_TIMEOUT, metavar="SECONDS",
                        help="close a connection that has not sent its request headers within "
                             f"this many seconds (default {HEADER_TIMEOUT:g})")
    parser.add_argument("--usage-log", metavar="FILE",
                        help="append usage events as JSON lines here (overrides the config)")
    parser.add_argument("--check", action="store_true",
                        help="only check the config: list every problem, exit 2 if any")
    parser.add_argument("--json", action="store_true",
                        help="with --check: print the outcome as JSON for scripts")
    audit.register(parser)  # raider-sync gateway audit verify FILE


def register(subparsers) -> None:
    """Add the ``gateway`` subcommand to raider-sync's command line."""
    parser = subparsers.add_parser(
        "gateway", help="serve MCP servers behind one URL, reached with customer keys",
        description="Relay MCP Streamable HTTP to the configured servers, per customer key.")
    _add_arguments(parser)
    parser.set_defaults(run=run)


def _listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"--listen wants HOST:PORT, got {text!r}")
    host = host.strip("[]") or "127.0.0.1"
    return host, int(port)


def run(args: argparse.Namespace) -> int:
    """Serve until SIGINT/SIGTERM. Exit codes as every raider-sync command: 0 after a clean
    stop (or a config that checks), 1 for a missing waitress or an address in use, 2 for a
    bad config or a bad ``--listen``."""
    if args.config is None:  # optional for argparse only so that ``gateway audit`` needs none
        print("raider-sync gateway: the following arguments are required: --config",
              file=sys.stderr)
        return 2
    try:
        host, port = _listen(args.listen)
    except ValueError as exc:
        print(f"raider-sync gateway: {exc}", file=sys.stderr)
        return 2
    try:
        config = GatewayConfig.load(args.config)
    except ConfigError as exc:
        if args.check and args.json:
            print(json.dumps({"config": args.config, "ok": False, "problems": exc.problems}))
            return 2
        print(f"raider-sync gateway: the config {args.config} has problems:", file=sys.stderr)
        for problem in exc.problems:
            print(f"  - {problem}", file=sys.stderr)
        return 2
    if args.check:
        if args.json:
            print(json.dumps({"config": args.config, "ok": True, "problems": [],
                              "servers": len(config.servers), "keys": len(config.keys)}))
        else:
            print(f"{args.config}: ok ({len(config.servers)} servers, {len(config.keys)} keys)")
        return 0
    threads = max(1, args.threads)
    if args.server == "granian":
        return _run_granian(args, host, port, threads)
    if args.workers > 0:
        return _run_workers(args, host, port, threads)
    relay = Relay(config, usage_log=args.usage_log, threads=threads)
    try:
        serving = Serving(relay, host, port, threads=threads,
                          connection_limit=args.connection_limit,
                          header_timeout=args.header_timeout)
    except ImportError:
        relay.close()
        print("raider-sync gateway: waitress is not installed "
              "(pip install 'raider_sync[gateway]')", file=sys.stderr)
        return 1
    except OSError as exc:
        relay.close()
        print(f"raider-sync gateway: cannot listen on {args.listen}: {exc.strerror or exc}",
              file=sys.stderr)
        return 1
    previous = hup = None
    if threading.current_thread() is threading.main_thread():
        def terminate(signum, frame):
            raise KeyboardInterrupt
        previous = signal.signal(signal.SIGTERM, terminate)
        hup = reload_keys_on_sighup(relay)
    print(f"raider-sync gateway: serving {len(config.servers)} servers on {serving.url}",
          flush=True)
    try:
        serving.run()
    except KeyboardInterrupt:
        pass
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        if hup is not None:
            signal.signal(signal.SIGHUP, hup)
        relay.close()  # ends relayed streams, so the workers can finish
        serving.stop()
    return 0


def _run_workers(args: argparse.Namespace, host: str, port: int, threads: int) -> int:
    """``--workers`` waitress processes under gunicorn's master until SIGINT/SIGTERM (see
    :mod:`.workers`)."""
    try:
        import gunicorn  # noqa: F401

        from .workers import serve
    except ImportError:
        print("raider-sync gateway: --workers needs gunicorn "
              "(pip install 'raider_sync[gateway]')", file=sys.stderr)
        return 1
    bind = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    print(f"raider-sync gateway: serving on http://{bind} with {args.workers} worker processes",
          flush=True)
    serve(os.path.abspath(args.config), bind, args.workers, threads, args.usage_log,
          args.connection_limit, args.header_timeout)
    return 0


def _run_granian(args: argparse.Namespace, host: str, port: int, threads: int) -> int:
    """granian's master and ``--workers`` worker processes (at least one) until SIGINT/SIGTERM
    (see :mod:`.engines`)."""
    try:
        import granian  # noqa: F401

        from .engines import serve_granian
    except ImportError:
        print("raider-sync gateway: --server granian needs granian "
              "(pip install 'raider_sync[gateway-granian]')", file=sys.stderr)
        return 1
    workers = max(1, args.workers)

    def ready(url: str) -> None:
        print(f"raider-sync gateway: serving {url} with granian, {workers} worker processes",
              flush=True)

    try:
        serve_granian(os.path.abspath(args.config), host, port, threads, workers,
                      args.usage_log, args.connection_limit, args.header_timeout, ready)
    except OSError as exc:
        print(f"raider-sync gateway: cannot listen on {args.listen}: {exc.strerror or exc}",
              file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m raider_sync.gateway ...``: the gateway command alone."""
    parser = argparse.ArgumentParser(prog="raider-sync gateway",
                                     description="Relay MCP Streamable HTTP per customer key.")
    _add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
