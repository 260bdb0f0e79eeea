"""The gateway's upstream client rebuilt on ``urllib3.PoolManager``, for ``bench.bench_upstream``
to weigh against :mod:`raider_sync.gateway.upstream` (``http.client`` and a pool of its own).

The same interface (``Upstream(pool_size).send(...) -> Answer`` with ``status``, ``headers``,
``content_type``, ``length``, ``read()``, ``chunks(size)``, ``shutdown()``, ``close()``) and the
same rules: no retries, redirects or decoding; the connect and read timeouts passed per request;
a connection goes back to the pool only when its answer was read to its end (urllib3 releases
it itself then) and is checked for a close by the upstream before reuse (urllib3's
``is_connection_dropped``); a body of up to ``JOIN_LIMIT`` bytes goes out in one ``send()``
with the head (the same mixin on urllib3's connection classes); urllib3's errors are mapped
back to ``OSError``/``TimeoutError``/``http.client.IncompleteRead`` as the relay expects.

``reuse_pool=True`` looks the origin's ``HTTPConnectionPool`` up once per origin and calls it
directly, skipping the PoolManager's URL parsing and pool-key building per request: urllib3's
cheapest use, measured too so that the comparison gives urllib3 its best case.
"""
from __future__ import annotations

import http.client
import socket
import threading
from typing import Iterator, Optional

import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NewConnectionError, ProtocolError, ReadTimeoutError

from raider_sync.gateway.upstream import JOIN_LIMIT, _Joined, _target


class _JoinedRequest(_Joined):
    def request(self, method, url, body=None, headers=None, **kw):
        self.join = isinstance(body, bytes) and 0 < len(body) <= JOIN_LIMIT
        super().request(method, url, body, headers, **kw)


class _HTTP(_JoinedRequest, HTTPConnection):
    pass


class _HTTPS(_JoinedRequest, HTTPSConnection):
    pass


class _HTTPPool(HTTPConnectionPool):
    ConnectionCls = _HTTP


class _HTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _HTTPS


def _mapped(exc: Exception) -> BaseException:
    """The standard library's error behind one of urllib3's."""
    if isinstance(exc, (ReadTimeoutError, ConnectTimeoutError)):
        return TimeoutError(str(exc))
    if isinstance(exc, ProtocolError) and len(exc.args) > 1 and \
            isinstance(exc.args[1], BaseException):
        return exc.args[1]  # the IncompleteRead or OSError it wraps
    if isinstance(exc, NewConnectionError):
        return ConnectionRefusedError(str(exc))
    if isinstance(exc, http.client.IncompleteRead):  # urllib3's own subclasses it
        return http.client.IncompleteRead(exc.partial, exc.expected)
    return OSError(str(exc))


class Answer:
    def __init__(self, response: urllib3.HTTPResponse):
        self._response = response
        self._complete = False
        conn = response.connection
        self._sock: Optional[socket.socket] = getattr(conn, "sock", None)
        self.status = response.status
        self.headers = list(response.headers.iteritems())
        self.content_type = response.headers.get("content-type")
        self.length = None if response.chunked else response.length_remaining

    def read(self) -> bytes:
        try:
            data = self._response.read(decode_content=False)
        except urllib3.exceptions.HTTPError as exc:
            raise _mapped(exc) from None
        self._complete = True
        return data

    def chunks(self, size: int) -> Iterator[bytes]:
        read1 = self._response.read1
        try:
            while True:
                chunk = read1(size, decode_content=False)
                if not chunk:
                    break
                yield chunk
        except urllib3.exceptions.HTTPError as exc:
            raise _mapped(exc) from None
        self._complete = True

    def shutdown(self) -> None:
        try:
            if self._sock is not None:
                self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def close(self) -> None:
        response, self._response = self._response, None
        if response is None:
            return
        if not self._complete:
            response.close()  # closes the connection: a half-read one is never reused
        response.release_conn()  # a no-op when urllib3 released it at the body's end


class Upstream:
    def __init__(self, pool_size: int = 16, reuse_pool: bool = False):
        from requests.utils import DEFAULT_CA_BUNDLE_PATH

        self.pool_size = max(1, pool_size)
        self._manager = urllib3.PoolManager(
            num_pools=64, maxsize=self.pool_size, block=False, retries=False,
            ca_certs=DEFAULT_CA_BUNDLE_PATH)
        self._manager.pool_classes_by_scheme = {"http": _HTTPPool, "https": _HTTPSPool}
        self._reuse_pool = reuse_pool
        self._pools: dict = {}
        self._lock = threading.Lock()

    def send(self, method: str, url: str, headers: dict[str, str], body: Optional[bytes], *,
             connect: float, read: float) -> Answer:
        timeout = urllib3.Timeout(connect=connect, read=read)
        try:
            if self._reuse_pool:
                origin, target = _target(url)
                pool = self._pools.get(origin)
                if pool is None:
                    with self._lock:
                        pool = self._pools[origin] = self._manager.connection_from_url(url)
                response = pool.urlopen(method, target, body=body, headers=headers,
                                        timeout=timeout, retries=False, redirect=False,
                                        assert_same_host=False, preload_content=False,
                                        decode_content=False)
            else:
                response = self._manager.urlopen(method, url, body=body, headers=headers,
                                                 timeout=timeout, retries=False, redirect=False,
                                                 preload_content=False, decode_content=False)
        except urllib3.exceptions.HTTPError as exc:
            raise _mapped(exc) from None
        return Answer(response)

    def close(self) -> None:
        self._manager.clear()
