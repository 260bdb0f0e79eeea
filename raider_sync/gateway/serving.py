"""Serving the relay: waitress as :mod:`raider_sync.serve.wsgi_server` sets it up, and SIGHUP
to reload the keys.

The names of :mod:`raider_sync.serve.wsgi_server` are here too, where the gateway has always
imported them from.
"""
from __future__ import annotations

import logging
import os
import signal
import threading
from typing import Any, Callable, Optional, TypeVar

from ..serve.wsgi_server import (
    CHANNEL_TIMEOUT,
    HEADER_TIMEOUT,
    JOIN_LIMIT,
    MAX_CONNECTIONS,
    BodyCut,
    Serving,
    connection_limit,
    waitress_settings,
)

R = TypeVar("R")
log = logging.getLogger("raider_sync.gateway")

__all__ = ["BodyCut", "CHANNEL_TIMEOUT", "HEADER_TIMEOUT", "JOIN_LIMIT", "MAX_CONNECTIONS",
           "Serving", "connection_limit", "relay_reloading_keys", "reload_keys_on_sighup",
           "SighupTaker", "SignalTaker", "waitress_settings"]


def reload_keys_on_sighup(relay) -> Any:
    """Make SIGHUP call ``relay.reload_keys()`` (in the main thread only, where signal handlers
    live); returns the previous handler, or ``None`` when not in the main thread.

    A SIGHUP that comes while a reload runs (a deploy tool sending one per changed file) runs
    on the same thread, inside that reload, where reloading again would wait forever on the
    lock the interrupted reload holds: it asks for one more reload after the running one
    instead, so the last config written is the one loaded."""
    if threading.current_thread() is not threading.main_thread():
        return None
    state = {"running": False, "again": False}  # only the main thread's handler touches it

    def reload(signum, frame) -> None:
        if state["running"]:
            state["again"] = True
            return
        state["running"] = True
        try:
            state["again"] = True
            while state["again"]:
                state["again"] = False
                relay.reload_keys()
        finally:
            state["running"] = False

    return signal.signal(signal.SIGHUP, reload)


class SignalTaker:
    """``signals`` blocked in the main thread, so in every thread started from it after
    :meth:`start` and in its forked children, and each of them taken with ``sigwait`` by a
    thread, ``name``, that calls ``on_signal(signum)`` (what it raises is logged). A signal
    that comes while ``on_signal`` runs stays pending: one more call after it. Outside the
    main thread, :meth:`start` and :meth:`stop` do nothing. Also a context manager: started
    inside, stopped on the way out.

    Why not a handler: a signal handler runs only in the main thread, and only once that
    thread runs Python code. A signal the kernel gives another thread (as it does while the
    main thread starts a thread: thread creation blocks signals in the thread that creates it)
    waits for the next signal when the main thread sleeps, as granian's master and workers do
    until they stop."""

    def __init__(self, signals: "set[int] | frozenset[int]", on_signal: Callable[[int], Any],
                 name: str):
        self._signals = frozenset(signals)
        self._on_signal = on_signal
        self._name = name
        self._stopping = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._mask: Any = None
        self._owner = os.getpid()

    def start(self) -> "SignalTaker":
        """Block the signals in this (the main) thread and start the taking thread."""
        if threading.current_thread() is threading.main_thread():
            self._mask = signal.pthread_sigmask(signal.SIG_BLOCK, self._signals)
            self._thread = threading.Thread(target=self._take, name=self._name, daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop and join the thread (bounded), then put the mask back; only in the process
        that started it (a forked child's copy has no thread to stop)."""
        if self._thread is None or os.getpid() != self._owner:
            return
        self._stopping.set()
        signal.pthread_kill(self._thread.ident, min(self._signals))  # type: ignore[arg-type]
        self._thread.join(5)
        signal.pthread_sigmask(signal.SIG_SETMASK, self._mask)
        self._thread = None

    def _take(self) -> None:
        while True:
            signum = signal.sigwait(self._signals)
            if self._stopping.is_set():
                return
            try:
                self._on_signal(signum)
            except Exception:
                log.exception("gateway: %s not acted on", signal.Signals(signum).name)

    def __enter__(self) -> "SignalTaker":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class SighupTaker(SignalTaker):
    """A :class:`SignalTaker` of SIGHUP alone, calling ``on_sighup()`` in its thread
    ``raider-gateway-sighup``."""

    def __init__(self, on_sighup: Callable[[], Any]):
        super().__init__({signal.SIGHUP}, lambda signum: on_sighup(), "raider-gateway-sighup")


def relay_reloading_keys(build: Callable[[], R]) -> R:
    """``build()``, the relay of a worker process of the gateway's own (granian's or
    gunicorn's), with every SIGHUP to the worker reloading its keys, one that comes while it
    builds included; blocks while it builds. Raises what ``build`` raises, the signal mask as
    it was. Outside the main thread: ``build()`` alone.

    SIGHUP is blocked before ``build`` (a :class:`SighupTaker`, whose thread lives as long as
    the worker): the relay and the engine start their threads after it, and a SIGHUP during
    the build, after the keys were read, reloads once the relay is built. Without that it
    would end the worker (SIGHUP's default action) or, in a forked granian worker, run the
    master's handler it inherited and be lost. The handler of :func:`reload_keys_on_sighup`
    is set as well, for a thread started before this one that does not block SIGHUP."""
    built = threading.Event()
    relay: list = []

    def reload() -> None:
        built.wait()  # a SIGHUP during the build: once it is done
        if relay:
            relay[0].reload_keys()

    taker = SighupTaker(reload).start()
    try:
        relay.append(build())
    except BaseException:
        built.set()
        taker.stop()
        raise
    built.set()
    reload_keys_on_sighup(relay[0])
    return relay[0]
