"""Serving the relay: waitress as :mod:`raider_sync.serve.wsgi_server` sets it up, and SIGHUP
to reload the keys.

The names of :mod:`raider_sync.serve.wsgi_server` are here too, where the gateway has always
imported them from.
"""
from __future__ import annotations

import signal
import threading
from typing import Any

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

__all__ = ["BodyCut", "CHANNEL_TIMEOUT", "HEADER_TIMEOUT", "JOIN_LIMIT", "MAX_CONNECTIONS",
           "Serving", "connection_limit", "reload_keys_on_sighup", "waitress_settings"]


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
