"""Hostile input for the stdio reader and the SSE parser (hypothesis, a bounded number of
examples): nesting too deep for the JSON parser, lines over the size limit, invalid UTF-8,
NULs, lines and frames cut anywhere. The connection survives (a valid message written after
the junk still arrives) or ends cleanly with an error naming the limit; nothing hangs."""
from __future__ import annotations

import logging
import os
import tempfile
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from raider_sync import ConnectionClosed
from raider_sync.protocol.sse_events import SseParser
from raider_sync.transports.base import MessageTooLong, deliver_json
from raider_sync.transports.stdio import StdioTransport

from conftest import poll

LIMIT = 64 * 1024
WAIT = 20.0
FUZZ = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

piece = st.one_of(
    st.binary(max_size=300),
    st.integers(1000, 60000).map(lambda n: b"[" * n),
    st.integers(500, 20000).map(lambda n: b'{"a":' * n + b"1" + b"}" * n),
    st.integers(1, 3 * LIMIT).map(lambda n: b"x" * n),
    st.sampled_from([b"\n", b"\r\n", b"\r", b"\0", b"\xff\xfe", b"\xc3", b"\xed\xa0\x80",
                     b'{"jsonrpc": "2.0"', b'{"jsonrpc": "2.0", "method": "x"}\n',
                     b'{"jsonrpc": "2.0", "id": 7, "result": {}}\n', b"[]\n", b"null\n",
                     b"data: ", b"event: endpoint\n", b"id: 1\n", b"retry: 5\n", b": hi\n",
                     b"\n\n"]),
)
hostile = st.lists(piece, max_size=8).map(b"".join)


def too_long(data: bytes) -> bool:
    return any(len(line) > LIMIT for line in data.split(b"\n"))


@settings(FUZZ, max_examples=25)
@given(junk=hostile)
def test_the_stdio_reader_survives_or_fails_cleanly(junk):
    with tempfile.NamedTemporaryFile(suffix=".out", delete=False) as out:
        out.write(junk + b"\n")
    arrived, ended = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def deliver(message) -> None:
        if isinstance(message, dict) and message.get("method") == "sentinel":
            arrived.set()

    def closed(error: BaseException) -> None:
        errors.append(error)
        ended.set()

    # writes the junk, then echoes what it is sent
    transport = StdioTransport("sh", ["-c", 'cat "$0"; exec cat', out.name], name="fuzz",
                               kill_grace=1, max_message_size=LIMIT)
    try:
        transport.start(deliver, closed)
        transport.send({"jsonrpc": "2.0", "method": "sentinel"})
        poll(lambda: arrived.is_set() or ended.is_set(), WAIT, "the message or the end")
        if too_long(junk):
            assert ended.is_set() and not arrived.is_set()
            [error] = errors
            assert isinstance(error, ConnectionClosed)
            assert "maximum message size of 64 KiB" in str(error)
        else:
            assert arrived.is_set() and not ended.is_set()
    finally:
        transport.close()
        os.unlink(out.name)


def parse(chunks: list[bytes]) -> tuple[list, bool]:
    parser = SseParser(max_size=LIMIT)
    events = []
    try:
        for chunk in chunks:
            events.extend(parser.feed(chunk))
    except MessageTooLong:
        return events, True
    return events, False


@FUZZ
@given(junk=hostile, cuts=st.lists(st.integers(0, 1 << 20), max_size=12))
def test_the_sse_parser_survives_or_fails_cleanly_wherever_frames_are_cut(junk, cuts):
    sentinel = b'data: {"jsonrpc": "2.0", "method": "sentinel"}\n\n'
    stream = junk + b"\n\n" + sentinel
    points = sorted({c % (len(stream) + 1) for c in cuts})
    chunks = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)]
    whole, whole_failed = parse([stream])
    split, split_failed = parse(chunks)
    assert whole_failed == split_failed  # the limit holds wherever the chunks end
    if whole_failed:
        return
    assert whole == split  # frames cut anywhere parse as when whole
    assert whole[-1].event == "message" and "sentinel" in whole[-1].data
    log = logging.getLogger("fuzz")
    for event in whole:  # every event's data goes through the one parse point unharmed
        deliver_json(event.data, lambda message: None, log, "fuzz", "an event")


@pytest.mark.parametrize("size", [LIMIT - 10, LIMIT + 1])
def test_the_sse_parser_bounds_a_line_with_no_end(size):
    parser = SseParser(max_size=LIMIT)
    body = size - len(b"data: ")
    feed = [b"data: "] + [b"x" * 1000] * (body // 1000) + [b"x" * (body % 1000)]
    if size > LIMIT:
        with pytest.raises(MessageTooLong):
            for chunk in feed:
                parser.feed(chunk)
        assert parser._partial == []  # what was held is let go
    else:
        for chunk in feed:
            assert parser.feed(chunk) == []
