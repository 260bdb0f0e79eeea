"""``raider-sync gateway --workers N``: N waitress processes on one listening socket, under
gunicorn's master.

gunicorn (the ``gateway`` extra, imported only here) binds the address once, forks N workers
and supervises them: a worker that dies is replaced, SIGTERM and SIGINT stop them all, and the
master reaps them. Each worker is a :class:`WaitressWorker`: it loads the config itself after
the fork and serves its own :class:`~raider_sync.gateway.relay.Relay` with waitress
(:class:`~raider_sync.gateway.serving.Serving`) on the inherited socket, so every worker
accepts from the one socket and the workers share nothing else; the relay keeps no session
state (session ids are sealed, see :mod:`raider_sync.gateway.sessions`), so any worker serves
any request.

Why waitress in the workers rather than gunicorn's own ``gthread``: waitress reads a whole
request in its event loop before a thread sees it, so a client that trickles its request
costs a socket; gthread reads the request in one of its threads, so a few dozen such clients
hold every thread (300 of them stopped two gthread workers of 16 threads; two waitress
workers hold 500 with legitimate requests still served in milliseconds, see docs/gateway.md).
waitress also tells the relay when a client left a silent stream, which frees that key's
stream slot within a fraction of a second, where under gthread only the next write to the
gone client did. Everything one waitress process does holds in every worker: the header
deadline, the refusal of ``Content-Length`` with ``Transfer-Encoding``, the connection limit.

SIGHUP to the master is passed on to every worker, which re-reads its keys
(:meth:`~raider_sync.gateway.relay.Relay.reload_keys`) without dropping a connection, instead
of gunicorn's own restart of all workers. The same worker serves gunicorn run by hand::

    gunicorn -k raider_sync.gateway.workers.WaitressWorker --threads 32 ...
"""
from __future__ import annotations

import os
import shutil
import signal
import tempfile
from typing import Any, Optional

from gunicorn.workers.base import Worker

from .config import GatewayConfig
from .metrics import MULTIPROC_ENV, mark_dead
from .relay import Relay
from .serving import HEADER_TIMEOUT, Serving, connection_limit, relay_reloading_keys

GRACEFUL_TIMEOUT = 10
WORKER_CLASS = "raider_sync.gateway.workers.WaitressWorker"


class _Stop(Exception):
    """Raised in a worker's event loop to leave it (see :meth:`WaitressWorker.run`)."""


class WaitressWorker(Worker):
    """A gunicorn worker that serves its WSGI app with waitress on the master's listening
    socket: ``--threads`` threads, at most ``--worker-connections`` connections, a request's
    headers within ``header_timeout`` seconds.

    The heartbeat the master expects is sent from waitress's event loop (once a second, from
    its maintenance), so a loop that hangs gets the worker replaced. SIGTERM, SIGINT or SIGQUIT,
    or a master that went away, make the loop stop within a second; the app's ``close()`` (the
    relay's: its streams end) is called, then every connection is closed and the threads are
    joined, each bounded by a few seconds. Serves one listening address: a second ``--bind``
    fails the worker's boot.
    """

    header_timeout = HEADER_TIMEOUT

    def run(self) -> None:
        if len(self.sockets) != 1:
            raise RuntimeError(f"{type(self).__name__} serves one address, "
                               f"not {len(self.sockets)} (one --bind)")
        # gunicorn's listeners (gunicorn.sock.BaseSocket) hold the socket; its stubs say socket
        listener = self.sockets[0].sock  # type: ignore[attr-defined]
        serving = Serving(self.wsgi, threads=self.cfg.threads,
                          connection_limit=self.cfg.worker_connections,
                          header_timeout=self.header_timeout, sock=listener)
        tick = serving.server.maintenance

        def heartbeat(now: float) -> None:
            tick(now)  # type: ignore[arg-type]  # waitress passes time.time(); its stubs say int
            if not self.alive or os.getppid() != self.ppid:
                raise _Stop  # out of the loop: Serving.run() lets it through
            self.notify()

        # waitress's loop calls this server's maintenance(now): a hook per server, as _strict sets
        serving.server.maintenance = heartbeat  # type: ignore[method-assign]
        try:
            serving.run()
        except _Stop:
            pass
        finally:
            close = getattr(self.wsgi, "close", None)
            if callable(close):
                close()  # ends relayed streams, so their threads can finish
            serving.stop(timeout=max(1.0, min(5.0, self.cfg.graceful_timeout / 2)))

    def handle_quit(self, sig, frame) -> None:
        # gunicorn's own exits from the signal handler, in the middle of the event loop,
        # where waitress would wait for the threads of open streams first
        self.alive = False


def gunicorn_settings(bind: str, workers: int, threads: int,
                      connections: Optional[int] = None) -> dict[str, Any]:
    """gunicorn's settings for ``--workers``: N :class:`WaitressWorker` processes, each with
    ``threads`` threads and at most ``connections`` connections (default
    :func:`~raider_sync.gateway.serving.connection_limit`)."""
    return {
        "bind": [bind], "workers": max(1, workers), "worker_class": WORKER_CLASS,
        "threads": max(1, threads), "worker_connections": connections or connection_limit(threads),
        "timeout": 60,  # the heartbeat of a worker process, not the length of a request
        "graceful_timeout": GRACEFUL_TIMEOUT, "backlog": 2048,
        "accesslog": None, "errorlog": "-", "loglevel": "warning",
        "proc_name": "raider-sync-gateway",
        # gunicorn's control socket is one path in the home directory, which a second
        # gateway on the machine would take over; nothing here uses it
        "control_socket_disable": True,
    }


def serve(config_path: str, bind: str, workers: int, threads: int,
          usage_log: Optional[str] = None, connections: Optional[int] = None,
          header_timeout: float = HEADER_TIMEOUT) -> None:
    """Run gunicorn's master in this process until SIGINT/SIGTERM; blocks. A bad config makes
    every worker fail to boot, and gunicorn exits. ``header_timeout``: see
    :class:`WaitressWorker`. Without ``$PROMETHEUS_MULTIPROC_DIR``, a temporary one is made
    for the workers' metrics and removed on the way out."""
    from gunicorn.app.base import BaseApplication
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

    class GatewayWorker(WaitressWorker):
        pass

    GatewayWorker.header_timeout = header_timeout

    class Application(BaseApplication):
        def load_config(self):
            for name, value in gunicorn_settings(bind, workers, threads, connections).items():
                self.cfg.set(name, value)
            self.cfg.set("worker_class", GatewayWorker)
            # a worker that exited leaves its live gauges (the open streams) behind
            self.cfg.set("child_exit", lambda arbiter, worker: mark_dead(worker.pid))

        def load(self):
            # the worker's main thread loads the app, a SIGHUP while it does included
            return relay_reloading_keys(lambda: Relay(GatewayConfig.load(config_path),
                                                      usage_log=usage_log, threads=threads))

        def run(self):
            KeysArbiter(self).run()

    # the workers' metrics (when the config has them) are summed from files in one directory,
    # named before the fork; the operator's own directory is used as it is
    master, folder = os.getpid(), None
    if not os.environ.get(MULTIPROC_ENV):
        folder = tempfile.mkdtemp(prefix="raider-gateway-metrics-")
        os.environ[MULTIPROC_ENV] = folder
    try:
        Application().run()
    finally:
        if folder is not None and os.getpid() == master:  # a worker leaves through here too
            os.environ.pop(MULTIPROC_ENV, None)
            shutil.rmtree(folder, ignore_errors=True)
