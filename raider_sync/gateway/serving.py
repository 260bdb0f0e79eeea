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
    live); returns the previous handler, or ``None`` when not in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGHUP, lambda signum, frame: relay.reload_keys())
