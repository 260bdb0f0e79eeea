"""``raider-sync gateway --workers N``: the relay under gunicorn, N processes of threads.

gunicorn (the ``gateway`` extra) is imported only here. Each worker process loads the config
itself after the fork and holds its own :class:`~raider_sync.gateway.relay.Relay`, so the
workers share nothing; the relay keeps no session state (session ids are sealed, see
:mod:`raider_sync.gateway.sessions`), so any worker serves any request. The settings are the
ones :func:`gunicorn_settings` returns and docs/gateway.md lists.

SIGHUP to the gunicorn master is passed on to every worker, which re-reads its keys
(:meth:`~raider_sync.gateway.relay.Relay.reload_keys`) without dropping a connection, instead
of gunicorn's own restart of all workers.
"""
from __future__ import annotations

import os
import signal
from typing import Any, Optional

from .config import GatewayConfig
from .relay import Relay
from .serving import CHANNEL_TIMEOUT, connection_limit, reload_keys_on_sighup

GRACEFUL_TIMEOUT = 10


def gunicorn_settings(bind: str, workers: int, threads: int,
                      connections: Optional[int] = None) -> dict[str, Any]:
    """gunicorn's settings for the relay: ``gthread`` workers (a sync worker would be held by
    one SSE stream and killed by ``timeout`` in the middle of it), each with ``threads``
    threads and at most :func:`~raider_sync.gateway.serving.connection_limit` connections;
    request line and header limits; idle keep-alive connections closed after 60 seconds."""
    return {
        "bind": [bind], "workers": max(1, workers), "worker_class": "gthread",
        "threads": max(1, threads), "worker_connections": connections or connection_limit(threads),
        "timeout": 60,  # the heartbeat of a worker process, not the length of a request
        "graceful_timeout": GRACEFUL_TIMEOUT, "keepalive": CHANNEL_TIMEOUT,
        "limit_request_line": 8190, "limit_request_fields": 100,
        "limit_request_field_size": 8190, "backlog": 2048,
        "accesslog": None, "errorlog": "-", "loglevel": "warning",
        "proc_name": "raider-sync-gateway",
    }


def serve(config_path: str, bind: str, workers: int, threads: int,
          usage_log: Optional[str] = None, connections: Optional[int] = None) -> None:
    """Run gunicorn in this process (the arbiter) until SIGINT/SIGTERM; blocks. Raises
    ImportError when gunicorn is not installed. A bad config makes every worker fail to boot,
    and gunicorn exits."""
    from gunicorn.app.base import BaseApplication  # lazily: only --workers needs it
    from gunicorn.arbiter import Arbiter

    class KeysArbiter(Arbiter):
        def handle_hup(self):
            # gunicorn would replace every worker, cutting the open streams at its graceful
            # timeout; the workers re-read the keys instead and keep their connections
            for pid in list(self.WORKERS):
                try:
                    os.kill(pid, signal.SIGHUP)
                except OSError:
                    pass

    class Application(BaseApplication):
        def load_config(self):
            for name, value in gunicorn_settings(bind, workers, threads, connections).items():
                self.cfg.set(name, value)

        def load(self):
            relay = Relay(GatewayConfig.load(config_path), usage_log=usage_log, threads=threads)
            reload_keys_on_sighup(relay)  # the worker's main thread loads the app
            return relay

        def run(self):
            KeysArbiter(self).run()

    Application().run()
