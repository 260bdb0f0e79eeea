"""The relay's HTTP client for the upstream MCP servers: keep-alive connections pooled per
origin, the answers read by httptools' C parser (:mod:`~raider_sync.gateway.upstream_wire`) or,
without httptools, by the standard library's ``http.client``.

    upstream = Upstream(pool_size=16)
    answer = upstream.send("POST", url, headers, body, connect=10, read=300)
    answer.status, answer.headers, answer.length
    data = answer.read()                     # the whole body (its length is known)
    for chunk in answer.chunks(65536): ...   # or as it arrives
    answer.close()                           # back to the pool when read to its end

A relay needs little of an HTTP client -- no cookies, redirects, proxies, retries, ``.netrc`` or
content decoding -- and every request it makes pays for what the client does besides sending and
reading. ``http.client`` alone costs about half of what a request through ``requests`` costs,
but parses each answer's head through the ``email`` package: about 460 Python function calls
per exchange, and a third of the relay's CPU. httptools (the ``gateway`` extra) parses in C
(llhttp) what one ``recv()`` returned and calls back once per header: about 90 calls and a
quarter to a third of the CPU (and of the instructions) per exchange, which takes about 28% off
the instructions the whole relay executes per call. urllib3's own pool (``PoolManager``,
installed with ``requests``) given the same rules below costs 1.5x to 1.9x the CPU of the
``http.client`` path -- its checks on each header, three ``Timeout`` objects and a ``Retry``
per request, the answer's headers copied into its own dict, an error catcher around each read
-- so the pool stays ours (``python -m bench upstream``; docs/benchmarks.md).

What is here is the pool: an idle connection is reused only after its previous answer was read
to its end, and only when the upstream has not closed it meanwhile (checked without blocking
before each use); at most ``pool_size`` idle connections are kept per origin, the others are
closed when their answer is. Bodies are never decoded: a compressed answer is read as it came.
A request body of up to ``JOIN_LIMIT`` bytes goes out in one ``send()`` with the head. HTTPS
verifies the upstream's certificate and host name against the same CA bundle ``requests`` uses.
The parser is chosen once per pool (``parser=``; :data:`PARSER` by default). The C parser is
the stricter: a head it cannot read one way only (both Content-Length and Transfer-Encoding,
two Content-Lengths, a folded header, lines ended by LF alone) is a malformed answer, where
``http.client`` would guess.

``send`` blocks for at most ``connect`` seconds to connect and ``read`` seconds for the answer's
headers; each read of the body waits at most ``read`` seconds. Errors: ``OSError`` (refused,
reset, timed out: ``TimeoutError``), :class:`http.client.HTTPException` for a malformed answer,
:class:`http.client.IncompleteRead` when a body ends before its length or its last chunk,
``ValueError`` for a header, method or target that would split the request. Thread-safe.
"""
from __future__ import annotations

import functools
import http.client
import select
import socket
import ssl
import threading
from typing import Iterator, Optional, Protocol, Union, cast
from urllib.parse import urlsplit

try:
    from . import upstream_wire
except ImportError:  # httptools is not installed: http.client reads the answers
    upstream_wire = None  # type: ignore[assignment]

Origin = tuple[str, str, int]
JOIN_LIMIT = 64 * 1024  # a larger body is sent after the head rather than copied to it
PARSERS = ("httptools", "http.client")
PARSER = "http.client" if upstream_wire is None else "httptools"  # what Upstream() reads with


class _Joined:
    """``http.client`` sends a request's head and its body in two ``send()`` calls, two TCP
    segments the upstream wakes up for; with ``join`` set, the head is held back and sent
    together with the body (the next ``send``)."""

    join = False
    _head: Optional[bytes] = None

    def send(self, data):
        if self.join:
            if self._head is None:
                self._head = data
                return
            data, self._head, self.join = self._head + data, None, False
        super().send(data)


class _HTTP(_Joined, http.client.HTTPConnection):
    pass


class _HTTPS(_Joined, http.client.HTTPSConnection):
    pass


_Connection = Union[_HTTP, _HTTPS]  # every pooled connection holds its head for the body
_Pooled = Union[_Connection, "upstream_wire.Connection"]  # a pool holds one kind


@functools.lru_cache(maxsize=1024)
def _target(url: str) -> tuple[Origin, str]:
    """((scheme, host, port), request target) of an absolute http(s) URL."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    port = parts.port or (443 if scheme == "https" else 80)
    path = parts.path or "/"
    return (scheme, parts.hostname or "", port), f"{path}?{parts.query}" if parts.query else path


def _dropped(sock: Optional[socket.socket]) -> bool:
    """Whether an idle connection can no longer be used: closed by us, or readable, which for
    an idle HTTP/1.1 connection means the upstream closed it (or sent what nobody asked for)."""
    if sock is None:
        return True
    try:
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        return bool(poller.poll(0))
    except (OSError, ValueError):
        return True


class Answer(Protocol):
    """An upstream's answer: ``status``, ``headers`` (``(name, value)`` pairs as sent),
    ``content_type`` and ``length`` (the Content-Length, ``None`` when chunked or unknown).
    Read by ``http.client`` or by httptools' parser (:mod:`~raider_sync.gateway.upstream_wire`),
    the same either way."""

    status: int
    headers: list[tuple[str, str]]
    content_type: Optional[str]
    length: Optional[int]

    def read(self, limit: Optional[int] = None) -> bytes:
        """The whole body; raises IncompleteRead (or OSError) when it ends early, and
        ValueError when it is longer than ``limit`` bytes (None: no limit)."""

    def chunks(self, size: int) -> Iterator[bytes]:
        """The body as it arrives, each piece at most ``size`` bytes and one read of the
        socket; raises IncompleteRead (or OSError) when it ends early."""

    def shutdown(self) -> None:
        """Shut the connection's socket from another thread, so a blocked read returns."""

    def close(self) -> None:
        """Give the connection back to the pool when the answer was read to its end and the
        upstream keeps it open, else close it. May be called twice."""


class _ClientAnswer:
    """An :class:`Answer` read by ``http.client`` (without httptools)."""

    def __init__(self, upstream: "Upstream", origin: Origin, conn: _Connection,
                 sock: socket.socket, response: http.client.HTTPResponse):
        self._upstream, self._origin, self._sock = upstream, origin, sock
        self._conn: Optional[_Connection] = conn
        self._response = response
        self._complete = False
        self.status = response.status
        self.headers = response.getheaders()
        types = [value for name, value in self.headers if name.lower() == "content-type"]
        self.content_type = ", ".join(types) if types else None  # as getheader() joins them
        self.length = None if response.chunked else response.length

    def read(self, limit: Optional[int] = None) -> bytes:
        """The whole body; raises IncompleteRead (or OSError) when it ends early, and
        ValueError when it is longer than ``limit`` bytes (None: no limit)."""
        data = self._response.read(None if limit is None else limit + 1)
        if limit is not None and len(data) > limit:
            raise ValueError(f"the answer is over {limit} bytes")
        self._complete = True
        return data

    def chunks(self, size: int) -> Iterator[bytes]:
        """The body as it arrives, each piece at most ``size`` bytes and one read of the
        socket; raises IncompleteRead (or OSError) when it ends early."""
        response = self._response
        read1 = response.read1
        while True:
            chunk = read1(size)  # raises IncompleteRead for a chunked body cut short
            if not chunk:
                break
            yield chunk
        if not response.chunked and response.length:  # what remains of its Content-Length
            raise http.client.IncompleteRead(b"", response.length)
        self._complete = True

    def shutdown(self) -> None:
        """Shut the connection's socket from another thread, so a blocked read returns."""
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def close(self) -> None:
        """Give the connection back to the pool when the answer was read to its end and the
        upstream keeps it open, else close it. May be called twice."""
        conn, self._conn = self._conn, None
        if conn is None:
            return
        reusable = self._complete and not self._response.will_close
        self._response.close()
        self._upstream._release(self._origin, conn, reusable)


class Upstream:
    """Pooled keep-alive connections to the upstream servers (see the module's docstring).
    ``parser``: what reads the answers, ``"httptools"`` or ``"http.client"`` (None:
    :data:`PARSER`, httptools when it is installed); ValueError names one that is not."""

    def __init__(self, pool_size: int = 16, parser: Optional[str] = None):
        parser = parser or PARSER
        if parser not in PARSERS:
            raise ValueError(f"parser must be one of {', '.join(PARSERS)}, not {parser!r}")
        if parser == "httptools" and upstream_wire is None:
            raise ValueError("parser 'httptools' needs httptools installed (the gateway extra)")
        self.parser = parser
        self._wire = parser == "httptools"
        self.pool_size = max(1, pool_size)
        self._idle: dict[Origin, list[_Pooled]] = {}
        self._lock = threading.Lock()
        self._tls: Optional[ssl.SSLContext] = None
        self._closed = False

    def send(self, method: str, url: str, headers: dict[str, str], body: Optional[bytes], *,
             connect: float, read: float) -> Answer:
        """Send one request on an idle pooled connection or a new one and read the answer's
        headers; the caller reads the body and closes the :class:`Answer`."""
        if self._wire:
            return self._send_wire(method, url, headers, body, connect, read)
        origin, target = _target(url)
        conn = cast(Optional[_Connection], self._take(origin))  # the kind this pool holds
        try:
            if conn is None:
                conn = self._connection(origin, connect)
                conn.connect()
            sock = conn.sock
            if sock.gettimeout() != read:  # a pooled connection mostly has it already
                sock.settimeout(read)
            conn.join = body is not None and 0 < len(body) <= JOIN_LIMIT
            conn.request(method, target, body, headers)
            response = conn.getresponse()
        except BaseException:
            if conn is not None:
                conn.close()
            raise
        return _ClientAnswer(self, origin, conn, sock, response)

    def _send_wire(self, method: str, url: str, headers: dict[str, str], body: Optional[bytes],
                   connect: float, read: float) -> Answer:
        """:meth:`send` on a raw socket, the answer read by httptools."""
        origin, target = _target(url)
        conn = cast(Optional[upstream_wire.Connection], self._take(origin))
        try:
            if conn is None:
                conn = upstream_wire.Connection(
                    origin, connect, self._context() if origin[0] == "https" else None)
            sock = cast(socket.socket, conn.sock)  # open: taken from the pool or just made
            if sock.gettimeout() != read:  # a pooled connection mostly has it already
                sock.settimeout(read)
            head = upstream_wire.request_head(method, target, conn.host, headers, body)
            if body and len(body) <= JOIN_LIMIT:  # one segment for the upstream to wake up to
                sock.sendall(head + body)
            else:
                sock.sendall(head)
                if body:
                    sock.sendall(body)
            return upstream_wire.Answer(sock, functools.partial(self._release, origin, conn),
                                        method == "HEAD")
        except BaseException:
            if conn is not None:
                conn.close()
            raise

    def _connection(self, origin: Origin, timeout: float) -> _Connection:
        scheme, host, port = origin
        if scheme == "https":
            return _HTTPS(host, port, timeout=timeout, context=self._context())
        return _HTTP(host, port, timeout=timeout)

    def _context(self) -> ssl.SSLContext:
        if self._tls is None:
            from requests.utils import DEFAULT_CA_BUNDLE_PATH  # the bundle requests verifies with

            self._tls = ssl.create_default_context(cafile=DEFAULT_CA_BUNDLE_PATH)
        return self._tls

    def _take(self, origin: Origin) -> Optional[_Pooled]:
        while True:
            with self._lock:
                idle = self._idle.get(origin)
                if not idle:
                    return None
                conn = idle.pop()  # the most recently used: the likeliest to be open
            if not _dropped(conn.sock):
                return conn
            conn.close()

    def _release(self, origin: Origin, conn: _Pooled, reusable: bool) -> None:
        if reusable and conn.sock is not None:
            with self._lock:
                idle = self._idle.setdefault(origin, [])
                if not self._closed and len(idle) < self.pool_size:
                    idle.append(conn)
                    return
        conn.close()

    def close(self) -> None:
        """Close the idle connections; those in use are closed when their answer is."""
        with self._lock:
            self._closed = True
            idle = [conn for conns in self._idle.values() for conn in conns]
            self._idle.clear()
        for conn in idle:
            conn.close()
