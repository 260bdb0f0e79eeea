"""A relayed request's body, read from the WSGI server within the config's size limit.

Reading blocks on the client's socket (the WSGI server's own timeouts bound it) and raises
nothing: a body that cannot be taken comes back as the refusal the relay answers with,
``(status, error type, message)``.
"""
from __future__ import annotations

import logging
from typing import Union

log = logging.getLogger("raider_sync.gateway")

#: (HTTP status, error type, message): why a body is refused
Refusal = tuple[int, str, str]


def read_body(environ: dict, limit: int) -> Union[bytes, Refusal]:
    """The body of the request in ``environ``, at most ``limit`` bytes, or its refusal: a
    ``Content-Length`` that is no number or negative (400), a body over ``limit`` (413, read
    no further than ``limit`` + 1 bytes), one that ends before its length or cannot be read
    (400). A chunked body arrives only where the server says it de-chunked it
    (``wsgi.input_terminated``); without a length it is empty."""
    stream = environ.get("wsgi.input")
    length = environ.get("CONTENT_LENGTH") or ""
    if length:
        try:
            size = int(length)
        except ValueError:
            return (400, "bad_request", "Content-Length is not a number")
        if size < 0:
            return (400, "bad_request", "Content-Length is negative")
        if size > limit:
            return (413, "too_large", f"the request body is over {limit} bytes")
        body = _read(stream, size) if size and stream is not None else b""
        if isinstance(body, bytes) and len(body) != size:
            return (400, "bad_request", "the request body ended early")
        return body
    if stream is not None and environ.get("wsgi.input_terminated"):
        body = _read(stream, limit + 1)
        if isinstance(body, bytes) and len(body) > limit:
            return (413, "too_large", f"the request body is over {limit} bytes")
        return body
    return b""


def _read(stream, size: int) -> Union[bytes, Refusal]:
    """``size`` bytes of the body (fewer at its end), or the refusal of a body that cannot be
    read: malformed chunking (gunicorn raises its parser's error from the read), a body the
    server cut (:class:`~raider_sync.gateway.serving.BodyCut`), a client gone."""
    try:
        return stream.read(size)
    except Exception as exc:  # the WSGI server's own errors: no common class to name
        log.debug("gateway: the request body could not be read: %s: %s",
                  type(exc).__name__, exc)
        return (400, "bad_request",
                "the request body could not be read (malformed chunked encoding, or cut short)")
