"""``raider-sync gateway --workers N``: the relay under gunicorn, N processes of threads.

gunicorn (the ``gateway`` extra) is imported only here. Each worker process loads the config
itself after the fork and holds its own :class:`~raider_sync.gateway.relay.Relay`, so the
workers share nothing; the relay keeps no session state (session ids are sealed, see
:mod:`raider_sync.gateway.sessions`), so any worker serves any request. The settings are the
ones :func:`gunicorn_settings` returns and docs/gateway.md lists.

gunicorn's gthread worker reads a request's headers in one of its threads, from a blocking
socket: a client that trickles them would hold that thread for as long as it likes, and a few
dozen such clients every thread. The workers here put a deadline on it: a connection whose
request has not reached the application ``header_timeout`` seconds after its thread took it up
is shut down by a watchdog thread (one per worker, checking every second).

SIGHUP to the gunicorn master is passed on to every worker, which re-reads its keys
(:meth:`~raider_sync.gateway.relay.Relay.reload_keys`) without dropping a connection, instead
of gunicorn's own restart of all workers.
"""
from __future__ import annotations

import os
import signal
import socket
import threading
import time
from typing import Any, Optional

from .config import GatewayConfig
from .relay import Relay
from .serving import CHANNEL_TIMEOUT, HEADER_TIMEOUT, connection_limit, reload_keys_on_sighup

GRACEFUL_TIMEOUT = 10
_reading: dict[socket.socket, float] = {}  # this worker's sockets still reading a request
_reading_lock = threading.Lock()


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


def _reached(relay: Relay):
    """The WSGI app: ``relay``, noting first that the request's headers were read in time."""
    def app(environ, start_response):
        sock = environ.get("gunicorn.socket")
        if sock is not None:
            with _reading_lock:
                _reading.pop(sock, None)
        return relay(environ, start_response)
    app.relay = relay
    return app


def _worker_class(header_timeout: float):
    from gunicorn.workers.gthread import ThreadWorker

    class GatewayWorker(ThreadWorker):
        """gthread with a deadline on reading a request (see the module's docstring)."""

        def init_process(self):
            threading.Thread(target=self._watch, name="raider-gateway-headers",
                             daemon=True).start()
            super().init_process()

        def handle(self, conn):
            with _reading_lock:
                _reading[conn.sock] = time.monotonic() + header_timeout
            try:
                return super().handle(conn)
            finally:
                with _reading_lock:
                    _reading.pop(conn.sock, None)

        def _watch(self):
            while self.alive:
                time.sleep(1.0)  # the deadline's granularity
                now = time.monotonic()
                with _reading_lock:
                    late = [sock for sock, deadline in _reading.items() if deadline < now]
                    for sock in late:
                        del _reading[sock]
                for sock in late:
                    try:
                        sock.shutdown(socket.SHUT_RDWR)  # the blocked read returns at once
                    except OSError:
                        pass

    return GatewayWorker


def serve(config_path: str, bind: str, workers: int, threads: int,
          usage_log: Optional[str] = None, connections: Optional[int] = None,
          header_timeout: float = HEADER_TIMEOUT) -> None:
    """Run gunicorn in this process (the arbiter) until SIGINT/SIGTERM; blocks. Raises
    ImportError when gunicorn is not installed. A bad config makes every worker fail to boot,
    and gunicorn exits. ``header_timeout``: see the module's docstring."""
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
            self.cfg.set("worker_class", _worker_class(header_timeout))

        def load(self):
            relay = Relay(GatewayConfig.load(config_path), usage_log=usage_log, threads=threads)
            reload_keys_on_sighup(relay)  # the worker's main thread loads the app
            return _reached(relay)

        def run(self):
            KeysArbiter(self).run()

    Application().run()
