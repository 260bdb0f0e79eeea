"""The ``requests.Session`` of an :class:`~.http_common.HttpChannel`, and when it reuses a
connection.

:func:`pooled_session` makes it: the environment's proxies and CA bundle read once, kept-alive
connections pooled (one per concurrent caller up to :data:`_POOL_SIZE`), no retries of
urllib3's own, and every connection's socket told to the channel (``track``) as it connects
and closes, so that the channel can shut them all from another thread. A pooled connection
idle for longer than :data:`IDLE_REUSE` is not reused but opened again (see
:class:`_FreshAfterIdle`). Nothing here blocks but a connect, on a connection's first use.
"""
from __future__ import annotations

import os
import time
from typing import Callable

import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.util.retry import Retry

#: kept-alive connections per server: one per concurrent caller up to this many (a caller
#: beyond it opens a connection that is closed after its exchange)
_POOL_SIZE = 128
#: seconds a kept-alive connection may idle and still be reused (see _FreshAfterIdle): below
#: the shortest keep-alive timeout of the common servers (gunicorn gthread 2 s, Node 5 s)
IDLE_REUSE = 1.5

#: ``track(connection, opened)``: a connection's socket opened (True) or closed (False)
Track = Callable[[HTTPConnection, bool], None]


def pooled_session(url: str, track: Track) -> requests.Session:
    """The session of the exchanges with the server at ``url``; its connections are told to
    ``track``."""
    http = requests.Session()
    # The environment's proxies and CA bundle, read once: requests would scan the whole
    # environment (and stat ~/.netrc) on every request, a tenth of a call's time.
    http.trust_env = False
    http.proxies = requests.utils.get_environ_proxies(url)
    http.verify = (os.environ.get("REQUESTS_CA_BUNDLE")
                   or os.environ.get("CURL_CA_BUNDLE") or True)
    # no retries of urllib3's own (requests' default too, said here because it matters):
    # whether a request is sent again is decided by the channel alone
    adapter = HTTPAdapter(pool_connections=4, pool_maxsize=_POOL_SIZE,
                          max_retries=Retry(total=0, read=False))
    adapter.poolmanager.pool_classes_by_scheme = _tracking_pools(track)
    http.mount("http://", adapter)
    http.mount("https://", adapter)
    return http


class _Timed:
    """A connection that knows since when it idles in its pool (None: in use, or new)."""

    idle_since: float | None = None


class _FreshAfterIdle(HTTPConnectionPool):
    """A pool that does not reuse a connection idle for longer than :data:`IDLE_REUSE`: it
    is closed, and opened again for the request. A server ends an idle keep-alive connection
    after its own timeout (Node and uvicorn 5 s, gunicorn's gthread 2 s), and a request
    written in the instant it does so is lost in flight with an unknown outcome; a request
    that may not be sent twice (a tools/call) would fail. Past the bound a fresh connection
    costs a connect, where a lost call costs the call."""

    def _put_conn(self, conn) -> None:
        if isinstance(conn, _Timed):
            conn.idle_since = time.monotonic()
        super()._put_conn(conn)

    def _get_conn(self, timeout: float | None = None):
        conn = super()._get_conn(timeout)
        if isinstance(conn, _Timed) and conn.idle_since is not None \
                and time.monotonic() - conn.idle_since > IDLE_REUSE:
            conn.close()  # urllib3 connects a closed connection again when it is used
        return conn


def _tracking_pools(track: Track) -> dict[str, type]:
    """Pool classes whose connections are told to ``track`` as they connect and close."""

    class Tracked(_Timed, HTTPConnection):
        def connect(self) -> None:
            super().connect()
            track(self, True)

        def close(self) -> None:
            track(self, False)
            super().close()

    class SecureTracked(Tracked, HTTPSConnection):  # Tracked's super() is HTTPSConnection
        pass

    # the names urllib3 gives its connections in errors (unreachable() cuts them off)
    for tracked, base in ((Tracked, HTTPConnection), (SecureTracked, HTTPSConnection)):
        tracked.__name__ = tracked.__qualname__ = base.__name__

    class Pool(_FreshAfterIdle):
        ConnectionCls = Tracked

    class SecurePool(_FreshAfterIdle, HTTPSConnectionPool):
        ConnectionCls = SecureTracked

    return {"http": Pool, "https": SecurePool}
