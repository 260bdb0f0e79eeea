"""Reading the body of a streamed HTTP response, for an :class:`~.http_common.HttpChannel`.

:class:`BodyReader` reads a body whole, as it arrives (chunks, or the events of an event
stream), or to its end so that its connection goes back to the pool. Every read is bounded by
a deadline (the socket timeout is lowered as it nears) or by a span of silence, and a body or
event over ``max_message_size`` bytes is refused having held no more than that in memory.
What blocks and what is raised is said per method; a response read to its end, or given up
on, is closed. Nothing here knows JSON-RPC.
"""
from __future__ import annotations

import logging
import socket
import ssl
import time
from http.client import HTTPException
from typing import Any, Callable, Generator, Literal

import requests
import urllib3
from urllib3.util.wait import wait_for_read

from ..errors import TransportError
from ..protocol.messages import MessageTooLong
from ..protocol.sse_events import SseEvent, SseParser
from .base import too_large
from .statuses import DeadlinePassed

log = logging.getLogger("raider_sync.transports.http")

#: characters of a body kept in an error
EXCERPT_CHARS = 300
_READ_SIZE = 65536
_LAST_CHUNK = b"0\r\n\r\n"  # the last chunk of a chunked body, without trailers


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """``text`` on one line, at most ``limit`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def short(text: str) -> str:
    """``text`` on one line, short enough for the middle of an error message."""
    return excerpt(text, 200)


class BodyReader:
    """Reads the bodies of the responses of the server ``name`` at ``url``, bounded by
    ``max_message_size``; ``aborted()`` says whether the channel was aborted (a read that
    breaks then ends quietly)."""

    def __init__(self, url: str, name: str, max_message_size: int,
                 aborted: Callable[[], bool]):
        self.url = url
        self.name = name
        self.max_message_size = max_message_size
        self._aborted = aborted

    def read_excerpt(self, response: requests.Response, limit: int = 4096) -> str:
        """The first ``limit`` bytes of the body, decoded, on one line; closes the response."""
        try:
            raw = response.raw.read(limit, decode_content=True) or b""
        except (urllib3.exceptions.HTTPError, HTTPException, OSError, ValueError):
            raw = b""
        finally:
            response.close()
        return excerpt(raw.decode("utf-8", "replace"))

    def read_body(self, response: requests.Response, deadline: float | None) -> bytes:
        """The whole body, each read bounded by ``deadline``. Raises TransportError, also for
        a body over ``max_message_size`` bytes (of which no more is read)."""
        limit = self.max_message_size
        length = response.headers.get("content-length", "")
        if length.isdigit() and int(length) > limit:
            response.close()
            raise self.too_large("an answer")
        parts: list[bytes] = []
        size = 0
        chunks = self.chunks(response, deadline, strict=True)
        try:
            for chunk in chunks:
                size += len(chunk)
                if size > limit:
                    raise self.too_large("an answer")
                parts.append(chunk)
        finally:
            chunks.close()
        return b"".join(parts)

    def too_large(self, what: str) -> TransportError:
        """The error of a received ``what`` over ``max_message_size``."""
        return TransportError(too_large(self.name, what, self.max_message_size))

    def parser(self, last_event_id: str | None = None) -> SseParser:
        """An event-stream parser bounded by ``max_message_size``."""
        return SseParser(last_event_id, max_size=self.max_message_size)

    def chunks(self, response: requests.Response, deadline: float | None,
               strict: bool = False,
               idle_timeout: float | None = None) -> Generator[bytes, None, None]:
        """The body as it arrives. Every read is bounded by ``deadline`` (the socket timeout is
        lowered as it nears), or, without one, by ``idle_timeout`` s of silence. A broken
        connection ends the iteration, and so does a passed deadline (``strict``: they raise
        TransportError and DeadlinePassed). Closes the response at the end."""
        raw = response.raw
        sock = socket_of(raw)
        if idle_timeout is not None and sock is not None:
            sock.settimeout(idle_timeout)
        try:
            while True:
                if deadline is not None:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        if strict:
                            raise DeadlinePassed(f"{self.url}: the deadline passed while "
                                                 f"reading the answer")
                        return
                    if sock is not None and (sock.gettimeout() or 1e9) > left + 0.05:
                        sock.settimeout(left)
                try:
                    data = raw.read1(_READ_SIZE)
                except (urllib3.exceptions.HTTPError, HTTPException, OSError, ValueError,
                        AttributeError) as exc:
                    # AttributeError: urllib3 reading a response closed under it by abort()
                    if strict and deadline is not None and time.monotonic() >= deadline:
                        raise DeadlinePassed(f"{self.url}: the deadline passed while reading "
                                             f"the answer") from exc
                    if strict and not self._aborted():
                        raise TransportError(f"{self.url}: the connection broke while reading "
                                             f"the answer: {short(str(exc))}") from exc
                    log.debug("%s: stream ended: %s", self.name, exc)
                    return
                if not data:
                    return
                yield data
        finally:
            response.close()

    def events(self, response: requests.Response, parser: SseParser, deadline: float | None,
               idle_timeout: float | None = None) -> Generator[SseEvent, None, None]:
        """The events of an event-stream response (see :meth:`chunks`). Raises
        TransportError for a line or event over the parser's size limit (the response is
        closed)."""
        chunks = self.chunks(response, deadline, idle_timeout=idle_timeout)
        try:
            for chunk in chunks:
                try:
                    events = parser.feed(chunk)
                except MessageTooLong:
                    raise self.too_large("an event") from None
                yield from events
        finally:
            chunks.close()

    def drain(self, response: requests.Response, seconds: float) -> None:
        """Read what is left of a body for up to ``seconds``, so that its connection can be
        reused; a body still going after that is dropped with its connection."""
        for _ in self.chunks(response, time.monotonic() + seconds):
            pass

    def finish(self, response: requests.Response, wait: float) -> bool:
        """Read a body to its end when nothing but its end is left to come and the end
        comes within ``wait`` s (0: only when it is already here), so that the connection
        goes back to the pool: True then. False, with the response left as it was, when
        other bytes come first, when the end does not come in time, or when that cannot be
        told (the caller drains it elsewhere)."""
        raw = response.raw
        sock = socket_of(raw)
        deadline = time.monotonic() + wait
        seen = -1
        try:
            while True:
                ahead = _ahead(raw)
                if ahead is True:
                    while raw.read1(_READ_SIZE):
                        pass
                    return True
                left = deadline - time.monotonic()
                if ahead is None or len(ahead) == seen or sock is None or left <= 0:
                    return False  # other bytes, or nothing new although readable (closed)
                seen = len(ahead)
                if not wait_for_read(sock, left):
                    return False
        except (urllib3.exceptions.HTTPError, HTTPException, OSError, ValueError,
                AttributeError) as exc:
            log.debug("%s: stream ended: %s", self.name, exc)
            response.close()
        return True


def socket_of(raw: Any) -> socket.socket | None:
    """The socket of ``raw`` (a urllib3 response) while its connection holds one."""
    connection = getattr(raw, "connection", None)
    return getattr(connection, "sock", None)


def _ahead(raw: Any) -> Literal[True] | bytes | None:
    """What is left of ``raw`` (a urllib3 response), looked at without blocking: True when
    the rest up to the body's end is here (a body read to its length, or a chunked body's
    last chunk, ``0`` and the empty line, buffered or in the socket); the bytes here when
    they are the start of that end (none, or part of it); None when other bytes are there
    or when that cannot be told."""
    fp = getattr(raw, "_fp", None)  # http.client's response
    buffered = getattr(fp, "fp", None)
    if fp is None or buffered is None:
        return True  # read to its end and closed
    if getattr(raw, "_decoded_buffer", None) or not getattr(fp, "chunked", False):
        return True if getattr(fp, "length", None) == 0 else None
    sock = socket_of(raw)
    if fp.chunk_left or sock is None:  # the chunk under way has bytes left
        return None
    timeout = sock.gettimeout()
    sock.settimeout(0.0)  # peek gives what is buffered, else what one read finds, else b""
    try:
        ahead = _peek(buffered)
        if fp.chunk_left == 0:  # the CRLF closing the chunk read last comes first
            if ahead[:2] != b"\r\n":
                return ahead if b"\r\n".startswith(ahead) else None
            # consumed as http.client would before the next chunk's size, so that what
            # follows it can be looked at too
            buffered.read(2)
            fp.chunk_left = None
            ahead = ahead[2:] or _peek(buffered)
    except (OSError, ValueError):  # a socket shut meanwhile
        return None
    finally:
        sock.settimeout(timeout)
    if ahead.startswith(_LAST_CHUNK):
        return True
    return ahead if _LAST_CHUNK.startswith(ahead) else None


def _peek(buffered: Any) -> bytes:
    """The bytes buffered, else those one non-blocking read finds (none when it would wait)."""
    try:
        return buffered.peek(len(_LAST_CHUNK))
    except ssl.SSLWantReadError:  # a TLS record not whole yet
        return b""
