"""Serving the relay: waitress as :mod:`raider_sync.serve.wsgi_server` sets it up, and SIGHUP
to reload the keys.

The names of :mod:`raider_sync.serve.wsgi_server` are here too, where the gateway has always
imported them from.
"""
from __future__ import annotations

import logging
import signal
import threading
from typing import Any, Callable, TypeVar

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
           "waitress_settings"]


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


def relay_reloading_keys(build: Callable[[], R]) -> R:
    """``build()``, the relay of a worker process of the gateway's own (granian's or
    gunicorn's), with every SIGHUP to the worker reloading its keys, one that comes while it
    builds included; blocks while it builds. Raises what ``build`` raises, the signal mask as
    it was. Outside the main thread: ``build()`` alone.

    A signal handler runs only in the main thread, and only once that thread runs Python code:
    a SIGHUP the kernel gives another thread (one that is being started: thread creation
    blocks signals in the thread that creates it) waits, under granian, until the next signal,
    as its workers' main thread sleeps until they stop. So SIGHUP is blocked here, before the
    relay and the engine start their threads, which inherit the mask, and a thread of the
    worker's (``raider-gateway-sighup``, living as long as the worker) takes each one with
    ``sigwait`` and reloads. A SIGHUP during a reload stays pending: one more reload after it,
    so the last config written is the one loaded. The handler of :func:`reload_keys_on_sighup`
    is set as well, for a thread started before this one that does not block SIGHUP."""
    if threading.current_thread() is not threading.main_thread():
        return build()
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGHUP})
    try:
        relay = build()
    except BaseException:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        raise
    reload_keys_on_sighup(relay)

    def take_sighups() -> None:
        while True:
            signal.sigwait({signal.SIGHUP})  # one that came while the relay was built first
            try:
                relay.reload_keys()  # type: ignore[attr-defined]
            except Exception:
                log.exception("gateway: keys not reloaded")

    threading.Thread(target=take_sighups, name="raider-gateway-sighup", daemon=True).start()
    return relay
