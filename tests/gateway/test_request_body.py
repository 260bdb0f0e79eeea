"""read_body: a request's body within the limit, or the refusal the relay answers with."""
from __future__ import annotations

import io

from raider_sync.gateway.request_body import read_body


class Cut(io.BytesIO):
    def read(self, size=-1):
        raise ValueError("the server cut the body")


def environ(body: bytes, length: str | None = None, **extra):
    e = {"wsgi.input": io.BytesIO(body), **extra}
    if length is not None:
        e["CONTENT_LENGTH"] = length
    return e


def test_a_body_of_its_length_is_read_whole():
    assert read_body(environ(b"hello", "5"), 10) == b"hello"
    assert read_body(environ(b"", "0"), 10) == b""
    assert read_body(environ(b"ignored"), 10) == b""  # no length, not de-chunked: empty


def test_bad_lengths_and_bodies_are_refused_with_why():
    assert read_body(environ(b"x", "x1"), 10) == (400, "bad_request",
                                                  "Content-Length is not a number")
    assert read_body(environ(b"x", "-1"), 10)[:2] == (400, "bad_request")
    assert read_body(environ(b"x" * 11, "11"), 10) == (413, "too_large",
                                                      "the request body is over 10 bytes")
    assert read_body(environ(b"abc", "5"), 10) == (400, "bad_request",
                                                   "the request body ended early")
    cut = {"wsgi.input": Cut(), "CONTENT_LENGTH": "3"}
    assert read_body(cut, 10)[:2] == (400, "bad_request")


def test_a_dechunked_body_is_read_to_one_past_the_limit():
    assert read_body(environ(b"abc", **{"wsgi.input_terminated": True}), 10) == b"abc"
    refused = read_body(environ(b"x" * 50, **{"wsgi.input_terminated": True}), 10)
    assert refused[:2] == (413, "too_large")
