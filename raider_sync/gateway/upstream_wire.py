"""The relay's upstream exchanges on the raw socket, each answer read by httptools' C HTTP/1.1
parser (llhttp, the parser Node.js uses): the pool in :mod:`raider_sync.gateway.upstream` uses
this module when httptools is installed (the ``gateway`` extra), and ``http.client`` otherwise.

``http.client`` reads an answer's status line and headers a line at a time and hands them to
the ``email`` package's parser, which costs more than everything else a relayed call does
upstream; here the bytes a ``recv()`` returned go to the C parser whole, which calls back into
Python once per header, once when the head is complete, once per piece of body and once at
the answer's end. The body is taken as the parser frees it of its framing (Content-Length,
chunked, or up to the upstream's close), never decoded: a compressed answer is passed on as
it came.

:class:`Connection` opens (blocks for at most ``connect`` seconds, TLS handshake included) and
closes a socket; :func:`request_head` builds a request's head, refusing a header name, value,
method or target that could split it (``ValueError``, as ``http.client`` refuses them);
:class:`Answer` reads an answer's head in its constructor and its body on demand, each
``recv()`` waiting at most the socket's timeout (``TimeoutError``). A malformed head raises
``http.client.HTTPException``, a malformed or cut body ``http.client.IncompleteRead``, a
connection closed before the answer ``http.client.RemoteDisconnected``: the errors
``http.client`` raises for the same faults. Importing this module raises ``ImportError``
when httptools is missing.
"""
from __future__ import annotations

import http.client
import re
import socket
import ssl
from typing import Callable, Iterator, Optional

import httptools

Origin = tuple[str, str, int]
RECEIVE = 64 * 1024  # bytes asked of one recv() while reading a head or a whole body
MAX_HEAD = 1024 * 1024  # an answer's status line and headers; more is refused, not buffered
MAX_HEADERS = 100  # http.client's limit too
_BODY_METHODS = frozenset({"PATCH", "POST", "PUT"})  # announce an empty body, as http.client does
# what would split a request's head (http.client refuses the same, a header at a time)
_BAD_NAME = re.compile(r"[:\s]")
_BAD_VALUE = re.compile(r"[\r\n\0]")
_BAD_WORD = re.compile(r"[\x00-\x20\x7f]")  # in a method or a request target


def host_header(origin: Origin) -> str:
    """The Host header of requests to ``origin`` (the port only when not the scheme's own)."""
    scheme, host, port = origin
    if not host.isascii():
        host = host.encode("idna").decode("ascii")
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    return host if port == (443 if scheme == "https" else 80) else f"{host}:{port}"


class Connection:
    """One keep-alive connection to an origin: its socket (``None`` once closed) and the Host
    header its requests carry. Connecting blocks for at most ``connect`` seconds; raises
    OSError (``TimeoutError``, ``ssl.SSLError`` for a certificate that does not verify)."""

    __slots__ = ("sock", "host")

    def __init__(self, origin: Origin, connect: float, tls: Optional[ssl.SSLContext]):
        sock = socket.create_connection(origin[1:], connect)
        try:
            # a large body follows its head in a second send(), which Nagle would hold back
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if tls is not None:
                sock = tls.wrap_socket(sock, server_hostname=origin[1])
        except BaseException:
            sock.close()
            raise
        self.sock: Optional[socket.socket] = sock
        self.host = host_header(origin)

    def close(self) -> None:
        """Close the socket; may be called twice."""
        sock, self.sock = self.sock, None
        if sock is not None:
            sock.close()


def request_head(method: str, target: str, host: str, headers: dict[str, str],
                 body: Optional[bytes]) -> bytes:
    """The head of a request, with the Host, Accept-Encoding and Content-Length headers
    ``http.client`` would add when ``headers`` lacks them. Raises ValueError for a method,
    target, header name or value that would split the head or is not Latin-1."""
    if _BAD_NAME.search("".join(headers)) or "" in headers \
            or _BAD_VALUE.search("".join(headers.values())) \
            or _BAD_WORD.search(target) or _BAD_WORD.search(method) or not method:
        raise ValueError(_refusal(method, target, headers))
    lowered = {name.lower() for name in headers}
    lines = [f"{method} {target} HTTP/1.1"]
    if "host" not in lowered:
        lines.append(f"Host: {host}")
    if "accept-encoding" not in lowered:
        lines.append("Accept-Encoding: identity")
    if "content-length" not in lowered and "transfer-encoding" not in lowered:
        if body is not None:
            lines.append(f"Content-Length: {len(body)}")
        elif method.upper() in _BODY_METHODS:
            lines.append("Content-Length: 0")
    lines.extend(map(": ".join, headers.items()))
    lines += ("", "")  # the blank line that ends the head
    return "\r\n".join(lines).encode("latin-1")  # UnicodeEncodeError is a ValueError


def _refusal(method: str, target: str, headers: dict[str, str]) -> str:
    """What is wrong in a request head :func:`request_head` refused (the slow path)."""
    if not method or _BAD_WORD.search(method):
        return f"invalid HTTP method {method!r}"
    if _BAD_WORD.search(target):
        return f"invalid request target {target!r}"
    for name, value in headers.items():
        if not name or _BAD_NAME.search(name):
            return f"invalid header name {name!r}"
        if _BAD_VALUE.search(value):
            return f"invalid value of header {name!r}"
    return "invalid request head"


class _Surplus(Exception):
    """Raised from the parser's callback when bytes follow the answer's end."""


class Answer:
    """An upstream's answer: ``status``, ``headers`` (``(name, value)`` pairs as sent),
    ``content_type`` and ``length`` (the Content-Length, ``None`` when chunked or unknown).

    The constructor reads the head from ``sock`` (blocking, each recv() bounded by the
    socket's timeout); ``release(reusable)`` is called once, at :meth:`close`, with whether
    the connection may carry another request: the answer was read to its end, the upstream
    keeps the connection open and sent nothing past the answer. ``head_only``: the answer to
    a HEAD request, which has no body whatever its headers say."""

    status = 0
    content_type: Optional[str] = None
    length: Optional[int] = None

    def __init__(self, sock: socket.socket, release: Callable[[bool], None],
                 head_only: bool = False):
        self._sock = sock
        self._release: Optional[Callable[[bool], None]] = release
        self._fields: list[tuple[str, str]] = []
        self.headers = self._fields
        self._parts: list[bytes] = []  # body received and not yet handed out
        self._interim = False  # a 1xx answer is being skipped
        self._headed = False  # the head is parsed
        self._delimited = True  # the body's end is framed (not the connection's close)
        self._done = False  # the parser saw the answer's end
        self._broken = False  # the parser refused the body after what _parts holds
        self._keep = False  # the upstream keeps the connection open after it
        self._complete = False  # the caller read it to its end
        self._parser: Optional[httptools.HttpResponseParser] = httptools.HttpResponseParser(self)
        seen = 0
        while not self._headed:
            if seen > MAX_HEAD:
                raise http.client.HTTPException(f"the answer's head is over {MAX_HEAD} bytes")
            seen += self._receive(RECEIVE)
        if head_only:  # what the parser took for a body is the next answer's, or garbage
            self._parts.clear()
            self._done, self._keep = True, False

    # -- the parser's callbacks (llhttp calls them from feed_data) --------------------------

    def on_message_begin(self) -> None:
        if self._done:  # an answer nobody asked for: stop the parser here
            raise _Surplus

    def on_header(self, name: bytes, value: bytes) -> None:
        self._fields.append((name.decode("latin-1"), value.decode("latin-1")))

    def on_headers_complete(self) -> None:
        parser = self._parser
        assert parser is not None  # it is calling
        status = parser.get_status_code()
        if 100 <= status < 200 and status != 101:  # 100 Continue and the like: the answer follows
            self._interim = True
            self._fields.clear()
            return
        headers = self._fields
        if len(headers) > MAX_HEADERS:
            raise http.client.HTTPException(f"got more than {MAX_HEADERS} headers")
        self._fields = []  # where trailers go, unread
        self.status, self.headers = status, headers
        types, length, codings = [], None, []
        for name, value in headers:
            lowered = name.lower()
            if lowered == "content-type":
                types.append(value)
            elif lowered == "content-length":
                length = value
            elif lowered == "transfer-encoding":
                codings.append(value)
        self.content_type = ", ".join(types) if types else None  # as http.client joins them
        if codings:  # chunked, or up to the close: a Content-Length does not count
            self._delimited = "chunked" in ", ".join(codings).lower()
        elif status in (204, 304):
            self.length = 0
        elif length is not None:
            self.length = int(length)  # llhttp let only digits through
        else:
            self._delimited = False  # the body ends with the connection
        self._headed = True

    def on_body(self, body: bytes) -> None:
        self._parts.append(body)

    def on_message_complete(self) -> None:
        if self._interim:
            self._interim = False
            return
        parser = self._parser
        assert parser is not None  # it is calling
        self._done = True
        self._keep = parser.should_keep_alive()

    # -- reading --------------------------------------------------------------------------

    def _receive(self, size: int) -> int:
        """Feed one recv() of at most ``size`` bytes to the parser; how many came."""
        parser = self._parser
        if parser is None:
            raise ValueError("the answer is closed")
        if self._broken:
            raise http.client.IncompleteRead(b"")  # as http.client says of broken chunking
        data = self._sock.recv(size)
        if not data:
            self._ended()
            return 0
        try:
            parser.feed_data(data)
        except httptools.HttpParserError as exc:
            if self._done:
                self._keep = False  # bytes past the answer's end: the connection is not reused
            elif self._headed:  # raised once the body before the fault is handed out
                self._broken = True
            else:
                raise self._malformed(exc) from exc
        except httptools.HttpParserUpgrade:
            raise http.client.HTTPException("the upstream switched protocols") from None
        return len(data)

    @staticmethod
    def _malformed(exc: Exception) -> http.client.HTTPException:
        """The error of a head the parser refused (a callback's own, if one raised)."""
        cause = exc.__context__
        if isinstance(cause, http.client.HTTPException):
            return cause
        return http.client.HTTPException(f"malformed answer: {exc}")

    def _ended(self) -> None:
        """The upstream closed the connection: the body's end if nothing frames it."""
        if not self._headed:
            raise http.client.RemoteDisconnected("the upstream closed the connection without "
                                                 "an answer")
        if self._delimited:
            raise http.client.IncompleteRead(b"", self.length)
        self._done, self._keep = True, False

    def read(self, limit: Optional[int] = None) -> bytes:
        """The whole body; raises IncompleteRead (or OSError) when it ends early, and
        ValueError when it is longer than ``limit`` bytes (None: no limit)."""
        parts = self._parts
        too_long = f"the answer is over {limit} bytes"
        if limit is not None and self.length is not None and self.length > limit:
            raise ValueError(too_long)
        while not self._done:
            if limit is not None and sum(map(len, parts)) > limit:
                raise ValueError(too_long)
            self._receive(RECEIVE)
        data = parts[0] if len(parts) == 1 else b"".join(parts)
        parts.clear()
        if limit is not None and len(data) > limit:
            raise ValueError(too_long)
        self._complete = True
        return data

    def chunks(self, size: int) -> Iterator[bytes]:
        """The body as it arrives, each piece at most ``size`` bytes and one read of the
        socket; raises IncompleteRead (or OSError) when it ends early."""
        parts = self._parts
        while True:
            if parts:
                data = parts[0] if len(parts) == 1 else b"".join(parts)
                parts.clear()
                if len(data) <= size:
                    yield data
                else:  # more than asked came with the head
                    for start in range(0, len(data), size):
                        yield data[start:start + size]
            elif self._done:
                break
            else:
                self._receive(size)
        self._complete = True

    def shutdown(self) -> None:
        """Shut the connection's socket from another thread, so a blocked read returns."""
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def close(self) -> None:
        """Give the connection back (``release``) or close it. May be called twice."""
        release, self._release = self._release, None
        if release is not None:
            # the parser holds this answer's callbacks: without it, the answer is freed when
            # the caller lets go of it, not at the cyclic collector's next pass
            self._parser = None
            release(self._complete and self._keep)

