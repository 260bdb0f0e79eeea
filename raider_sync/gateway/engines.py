"""``raider-sync gateway --server granian``: the relay served by granian (Rust, WSGI mode), the
engine beside waitress (the default, :mod:`.serving`) and waitress under gunicorn
(:mod:`.workers`).

granian (the ``gateway-granian`` extra, imported only here) parses HTTP/1.1 in Rust (hyper) on
one I/O thread per process and calls the relay in a pool of ``--threads`` Python threads; a
slow client costs a socket, not a thread, as under waitress. Its master process supervises
``--workers`` worker processes (at least one); each listens on the address with
``SO_REUSEPORT`` and serves its own :class:`~raider_sync.gateway.relay.Relay`, built after the
fork (:func:`granian_app`). What :func:`granian_settings` sets for the relay:

- ``blocking_threads``: ``--threads``, the requests served at once per process, SSE streams
  included (a relayed stream holds its thread, as under waitress);
- ``backpressure``: ``--connection-limit`` (default
  :func:`~raider_sync.gateway.serving.connection_limit`), the requests taken at once;
- ``http1_settings``: a request's headers within ``--header-timeout`` seconds, however slowly
  they trickle (an idle keep-alive connection is closed after as long), headers of at most
  ``HEADER_BYTES`` bytes (431 past them, as waitress's own limit);
- HTTP/1.1 only and no WebSockets (nothing the relay serves), no access log (the relay writes
  its usage events).

Where granian differs from waitress (docs/gateway.md "Deploying" has the table):

- a chunked request body is not read: hyper ends a malformed or cut-short chunked body as if
  it were complete, so the relay could not tell a truncated body from a whole one. Under
  granian every request with ``Transfer-Encoding`` gets a body that raises
  :class:`~raider_sync.gateway.serving.BodyCut` (:class:`GranianApp`): the relay answers
  400 in its own shape, the key checked first, and nothing reaches the upstream. MCP clients
  send their JSON with ``Content-Length``. ``Content-Length`` with ``Transfer-Encoding`` is
  refused the same way, and hyper closes the connection after the answer;
- ``Transfer-Encoding`` in an HTTP/1.0 request is answered 400 by hyper before the relay
  (closed, no usage event);
- granian does not tell the relay that a client left a silent stream: its key's stream slot is
  freed at the stream's next event, or when the upstream ends it;
- SIGHUP to the master is passed on to every worker, which re-reads its keys
  (:meth:`~raider_sync.gateway.relay.Relay.reload_keys`) without dropping a connection,
  instead of granian's own respawn of every worker;
- SIGTERM ends the relayed streams before granian waits for the answers in progress, and a
  request's environ holds the request alone, not a copy of the process environment as
  granian's own WSGI callback makes it (:func:`_hook_worker`);
- the master and every worker take SIGHUP, SIGINT and SIGTERM on a thread of their own
  (:class:`~raider_sync.gateway.serving.SignalTaker`), blocked from the master's start on and
  so in each worker from its fork on: a signal that comes while a worker starts waits for it
  (:class:`_WorkerStop`), instead of being lost until granian's kill.
"""
from __future__ import annotations

import functools
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import weakref
from typing import Any, Callable, Optional

from .config import GatewayConfig
from .metrics import MULTIPROC_ENV, mark_dead
from .relay import Relay
from .serving import (
    HEADER_TIMEOUT,
    BodyCut,
    SignalTaker,
    connection_limit,
    relay_reloading_keys,
)

ENGINES = ("waitress", "granian")
HEADER_BYTES = 256 * 1024  # waitress's max_request_header_size
GRACEFUL_TIMEOUT = 10  # seconds a worker has to end after SIGTERM before it is killed
_REFUSED = "a chunked request body is not read by this server: send Content-Length"


class _Refused:
    """The ``wsgi.input`` of a request whose body is not read: every read raises BodyCut."""

    def read(self, size: Optional[int] = -1) -> bytes:
        raise BodyCut(_REFUSED)

    readline = read

    def readlines(self, hint: int = -1) -> list[bytes]:
        raise BodyCut(_REFUSED)

    def __iter__(self):
        raise BodyCut(_REFUSED)


def _write(data: bytes) -> None:
    """The ``write()`` that ``start_response`` returns (PEP 3333 wants one; granian's own
    returns nothing): an empty write, which the relay makes to send a stream's head at once, is
    nothing to do, as granian sends the head of an iterated answer without waiting for its
    first piece."""
    if data:
        raise NotImplementedError("under granian an answer's body comes from its iterable")


class _Started:
    """``start_response`` for one request: keeps the status and headers for granian."""

    __slots__ = ("status", "headers")

    def __init__(self) -> None:
        self.status: int = 200
        self.headers: list[tuple[str, str]] = []

    def __call__(self, status: str, headers: list, exc_info: Any = None) -> Callable:
        self.status, self.headers = int(status.split(" ", 1)[0]), headers
        return _write


class _Iterated:
    """An answer's iterable as granian's Rust side reads it: ``__next__`` and ``close``."""

    __slots__ = ("inner", "__next__")

    def __init__(self, inner) -> None:
        self.inner = inner
        self.__next__ = iter(inner).__next__

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()


def _callback(app: Callable, scope_opts: Any = None, access_log_fmt: Any = None) -> Callable:
    """What granian calls for each request (in place of ``granian.wsgi._callback_wrapper``,
    whose environ starts from a copy of ``os.environ``: a variable of the gateway's process
    named like a header, ``HTTP_X_API_KEY`` or ``HTTP_AUTHORIZATION``, would then be every
    request's header when the client sent none). The environ here is the request's alone.
    ``scope_opts`` and ``access_log_fmt`` (granian's URL prefix and access log) are not used:
    the gateway sets neither."""
    base = {"GATEWAY_INTERFACE": "CGI/1.1", "SCRIPT_NAME": "", "SERVER_SOFTWARE": "granian",
            "wsgi.errors": sys.stderr, "wsgi.input_terminated": True,
            "wsgi.multiprocess": False, "wsgi.multithread": True, "wsgi.run_once": False,
            "wsgi.version": (1, 0)}

    def run(proto, scope: dict) -> int:
        started = _Started()
        body = app(base | scope, started)
        if isinstance(body, list):
            proto.response_bytes(started.status, started.headers, b"".join(body))
        else:
            proto.response_iter(started.status, started.headers, _Iterated(body))
        return started.status

    return run


class GranianApp:
    """A WSGI app in front of ``app`` (the relay) for granian: a request with
    ``Transfer-Encoding`` gets a body that raises
    :class:`~raider_sync.gateway.serving.BodyCut` when read (see the module's docstring).
    :meth:`close` closes ``app`` and ends the streams it is relaying, which granian cannot tell
    have lost their client. Everything else, ``reload_keys()`` included, is ``app``'s."""

    def __init__(self, app: Callable):
        self.app = app
        self._lock = threading.Lock()
        self._streams: weakref.WeakSet = weakref.WeakSet()  # a stream leaves once granian drops it

    def __call__(self, environ: dict, start_response) -> Any:
        if environ.get("HTTP_TRANSFER_ENCODING"):
            environ["wsgi.input"] = _Refused()
        answer = self.app(environ, start_response)
        if callable(getattr(answer, "abort", None)):  # a relayed stream (streaming.Stream)
            with self._lock:
                self._streams.add(answer)
        return answer

    def close(self) -> None:
        """Close the app, then abort every stream it still relays (a blocked read of its
        upstream returns, and the stream ends). May be called twice."""
        close = getattr(self.app, "close", None)
        if callable(close):
            close()
        with self._lock:
            streams = list(self._streams)
        for stream in streams:
            stream.abort()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.app, name)


def granian_settings(threads: int, header_timeout: float = HEADER_TIMEOUT,
                     connections: Optional[int] = None, workers: int = 1) -> dict[str, Any]:
    """The keyword arguments of granian's server for the relay (without the address and the
    app): see the module's docstring."""
    from granian.constants import HTTPModes, Interfaces
    from granian.http import HTTP1Settings
    from granian.log import LogLevels

    return {
        "interface": Interfaces.WSGI, "workers": max(1, workers),
        "blocking_threads": max(1, threads), "runtime_threads": 1,
        "backpressure": connections or connection_limit(threads), "backlog": 2048,
        "http": HTTPModes.http1, "websockets": False,
        "http1_settings": HTTP1Settings(header_read_timeout=max(1, int(header_timeout * 1000)),
                                        max_buffer_size=HEADER_BYTES),
        "log_level": LogLevels.warning, "log_access": False,
        "respawn_failed_workers": True, "workers_kill_timeout": GRACEFUL_TIMEOUT,
    }


def granian_app(config_path: str, threads: int, usage_log: Optional[str] = None) -> Callable:
    """The app of one granian worker, built in it after the fork: the relay for the config at
    ``config_path`` behind :class:`GranianApp`, its keys reloaded on SIGHUP (the
    worker's main thread loads it, a SIGHUP while it does included). Raises ConfigError for a
    bad config."""
    stopping = _WorkerStop()
    # SIGINT and SIGTERM are blocked from the fork on (the master blocks them, see
    # serve_granian): one sent while the worker starts waits for this taker
    taker = SignalTaker({signal.SIGINT, signal.SIGTERM}, stopping.request,
                        "raider-gateway-stop").start()
    try:
        relay = relay_reloading_keys(lambda: Relay(GatewayConfig.load(config_path),
                                                   usage_log=usage_log, threads=threads))
    except BaseException:
        taker.stop()
        raise
    app = GranianApp(relay)
    _hook_worker(app, stopping)
    return app


def _hook_worker(app: GranianApp, stopping: Optional["_WorkerStop"] = None) -> None:
    """Two changes to the granian worker this runs in (granian 2.8, pinned; both made where
    its worker looks them up after loading the app): requests are called through
    :func:`_callback`, and SIGTERM and SIGINT close ``app`` (its streams end) before granian's
    own handler stops the worker. granian waits for every answer in progress before a worker
    exits, and a relayed stream has no end of its own: without this its worker would be killed
    after ``GRACEFUL_TIMEOUT`` seconds. ``stopping`` (a :class:`_WorkerStop`; a new one by
    default) is told of granian's handlers, and decides what each signal does."""
    from granian import _signals
    from granian.server import mp

    if not (hasattr(mp, "_wsgi_call_wrap") and hasattr(_signals, "set_sync_signals")):
        # without the callback a request's environ would start from the process environment,
        # where a variable such as HTTP_X_API_KEY would pass for a key: refuse to serve
        raise RuntimeError("this granian is not the one the gateway's engine is made for "
                           "(granian==2.8.7, the gateway-granian extra)")
    mp._wsgi_call_wrap = _callback  # type: ignore[assignment]

    installed = _signals.set_sync_signals
    stopping = stopping if stopping is not None else _WorkerStop()

    def set_sync_signals():
        event = installed()
        granians = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
        granians = {sig: stop for sig, stop in granians.items() if callable(stop)}
        for sig in granians:  # a signal taken by a handler (not blocked) goes the same way
            signal.signal(sig, lambda signum, frame: stopping.request(signum))
        stopping.attach(app, granians)
        return event

    _signals.set_sync_signals = set_sync_signals


class _WorkerStop:
    """What SIGINT and SIGTERM do in a granian worker, wherever they are taken (the worker's
    :class:`~raider_sync.gateway.serving.SignalTaker` thread, or a handler): the first closes
    the app, so its streams end, then has granian stop the worker; a later one only has granian
    stop it. A signal that comes before granian's handlers are known (the worker is still
    being built) is kept, and acted on once they are (:meth:`attach`). Thread-safe; never
    holds its lock while the app closes.

    A second signal often comes while the first one closes (Ctrl-C reaches the master and its
    workers, and the master then stops each worker); run in a handler it runs on the same
    thread, inside close(), and closing again there would wait forever on a lock the
    interrupted close() holds."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._app: Optional[GranianApp] = None
        self._granians: Optional[dict] = None  # signal -> granian's handler, once known
        self._pending: Optional[int] = None
        self._closing = False

    def request(self, signum: int) -> None:
        """Stop the worker for ``signum``; before :meth:`attach`, once it is called."""
        with self._lock:
            granians = self._granians
            if granians is None:
                if self._pending is None:
                    self._pending = signum
                return
        self._act(signum, granians)

    def attach(self, app: GranianApp, granians: dict) -> None:
        """granian's handlers are set (``{signal: handler}``): a kept signal is acted on now."""
        with self._lock:
            self._app, self._granians = app, granians
            pending, self._pending = self._pending, None
        if pending is not None:
            self._act(pending, granians)

    def _act(self, signum: int, granians: dict) -> None:
        with self._lock:
            first, self._closing = not self._closing, True
        if first and self._app is not None:
            self._app.close()  # quick: shuts the upstreams, joins the watcher (bounded)
        stop = granians.get(signum)
        if stop is not None:
            stop(signum, None)


def _master_signal(server: Any, signum: int) -> None:
    """What a signal to granian's master does, as granian's own handlers would: SIGHUP reloads
    (see ``Master._reload``), SIGINT and SIGTERM stop every worker, then the master."""
    if signum == signal.SIGHUP:
        server.signal_handler_reload()
    else:
        server.signal_handler_interrupt()


def check_address(host: str, port: int) -> int:
    """The port to give granian for ``host:port``: ``port``, or a free one for 0. Raises
    OSError when the address is taken, which granian's ``SO_REUSEPORT`` listeners would not
    notice when another granian holds it (they would share its connections)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.bind((host, port))
        return probe.getsockname()[1]


def serve_granian(config_path: str, host: str, port: int, threads: int, workers: int = 1,
                  usage_log: Optional[str] = None, connections: Optional[int] = None,
                  header_timeout: float = HEADER_TIMEOUT,
                  ready: Optional[Callable[[str], None]] = None) -> None:
    """Run granian's master in this process until SIGINT/SIGTERM; blocks. ``ready(url)`` is
    called once the address is checked, before the workers start. A bad config makes every
    worker fail to load, and granian exits. Raises ImportError without granian, OSError for
    an address in use. Without ``$PROMETHEUS_MULTIPROC_DIR``, several workers get a temporary
    one for their metrics, removed on the way out."""
    from granian.server import MPServer

    port = check_address(host, port)

    class Master(MPServer):
        def _reload(self, spawn_target, target_loader):
            # granian would respawn every worker, cutting the open streams; the workers
            # re-read the keys instead and keep their connections. Its serve loop calls this
            # for a SIGHUP once the workers it started are listed (its signal handler could
            # run between a worker's start and its listing, and miss that worker)
            self.main_loop_interrupt.clear()
            self.reload_signal = False  # a SIGHUP from here on flags another round
            for worker in list(self.wrks):
                pid = worker.inner.pid
                if pid is not None:
                    try:
                        os.kill(pid, signal.SIGHUP)
                    except OSError:
                        pass

        def _respawn_workers(self, workers, spawn_target, target_loader, delay: float = 0):
            # a worker replaced (it died, or outlived its lifetime) leaves its live gauges
            # in the metrics folder, which every scrape would go on summing: gone with it,
            # as gunicorn's child_exit hook has them gone (.workers)
            replaced = [self.wrks[idx].inner.pid for idx in workers]
            try:
                return super()._respawn_workers(workers, spawn_target, target_loader, delay)
            finally:
                for pid in replaced:
                    if pid is not None:
                        mark_dead(pid)

    server = Master("raider_sync.gateway.relay:Relay", address=host, port=port,
                    **granian_settings(threads, header_timeout, connections, workers))
    loader = functools.partial(granian_app, os.path.abspath(config_path), max(1, threads),
                               usage_log)
    master, folder = os.getpid(), None
    if workers > 1 and not os.environ.get(MULTIPROC_ENV):
        folder = tempfile.mkdtemp(prefix="raider-gateway-metrics-")
        os.environ[MULTIPROC_ENV] = folder
    try:
        if ready is not None:
            ready(f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}")
        # granian's handlers run only in its main thread, asleep in granian's serve loop;
        # and blocked here, the signals are blocked in each worker from its fork on
        with SignalTaker({signal.SIGHUP, signal.SIGINT, signal.SIGTERM},
                         functools.partial(_master_signal, server), "raider-gateway-signals"):
            server.serve(target_loader=loader, wrap_loader=False)
    finally:
        if folder is not None and os.getpid() == master:
            os.environ.pop(MULTIPROC_ENV, None)
            shutil.rmtree(folder, ignore_errors=True)


__all__ = ["ENGINES", "GranianApp", "check_address", "granian_app", "granian_settings",
           "serve_granian"]
