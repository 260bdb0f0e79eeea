"""The event-stream parser: the WHATWG rules MCP streams rely on, whatever the chunking."""
from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st

from raider_sync.protocol.sse_events import SseEvent, SseParser

STREAM = (b"id: p0\nretry: 250\ndata: \n\n"                      # a priming event
          b": keep-alive comment\n\n"
          b"event: message\nid: 1\ndata: {\"a\":1}\n\n"
          b"data: first line\r\ndata: second line\r\n\r\n"      # CRLF, two data lines
          b"event: endpoint\rdata: /messages?x=1\r\r"           # lone CR endings
          b"garbage without a colon\nid: bad\0id\ndata:x\n\n"   # junk field, NUL id ignored
          b"data: unfinished")                                  # never completed


def parse(chunks) -> tuple[list[SseEvent], SseParser]:
    parser = SseParser()
    events = []
    for chunk in chunks:
        events.extend(parser.feed(chunk))
    return events, parser


EXPECTED = [SseEvent("message", '{"a":1}', "1"),
            SseEvent("message", "first line\nsecond line", "1"),
            SseEvent("endpoint", "/messages?x=1", "1"),
            SseEvent("message", "x", "1")]


def test_priming_event_is_not_dispatched_but_its_id_and_retry_count():
    events, parser = parse([b"id: p0\nretry: 250\ndata: \n\n"])
    assert events == []
    assert parser.last_event_id == "p0"
    assert parser.retry == 250


def test_a_whole_stream_in_one_chunk():
    events, parser = parse([STREAM])
    assert events == EXPECTED
    assert parser.last_event_id == "1"  # the unfinished event's fields never count


def test_byte_by_byte_gives_the_same_events():
    events, _ = parse([STREAM[i:i + 1] for i in range(len(STREAM))])
    assert events == EXPECTED


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=12))
def test_any_chunking_gives_the_same_events(cuts):
    points = sorted(set(cuts))
    chunks = [STREAM[a:b] for a, b in zip([0, *points], [*points, len(STREAM)], strict=True)]
    events, parser = parse(chunks)
    assert events == EXPECTED
    assert parser.last_event_id == "1"


def test_crlf_split_between_chunks_is_one_line_ending():
    events, _ = parse([b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"])
    assert events == [SseEvent("message", "a\nb", None)]


def test_an_id_persists_until_the_server_sends_another():
    events, parser = parse([b"id: 7\ndata: a\n\ndata: b\n\n"])
    assert [e.id for e in events] == ["7", "7"]
    assert parser.last_event_id == "7"


def test_resuming_parser_starts_from_the_given_id():
    parser = SseParser("g1")
    assert parser.last_event_id == "g1"
    assert parser.feed(b"data: x\n\n") == [SseEvent("message", "x", "g1")]


def test_invalid_retry_and_utf8_are_tolerated():
    events, parser = parse([b"retry: soon\ndata: caf\xc3\xa9 \xff\n\n"])
    assert parser.retry is None
    assert events == [SseEvent("message", "caf\u00e9 \ufffd", None)]


def test_a_large_event_in_many_chunks_is_linear():
    payload = b"x" * (16 * 1024 * 1024)
    body = b"data: " + payload + b"\n\n"
    chunks = [body[i:i + 65536] for i in range(0, len(body), 65536)]
    started = time.perf_counter()
    events, _ = parse(chunks)
    assert time.perf_counter() - started < 2.0
    assert len(events) == 1 and len(events[0].data) == len(payload)


def test_reconnected_drops_the_cut_event_and_keeps_id_and_retry():
    parser = SseParser()
    assert parser.feed(b"retry: 40\nid: c2\ndata: {}\n\nevent: mess") == [
        SseEvent("message", "{}", "c2")]
    parser.reconnected()
    assert parser.feed(b"event: message\ndata: [1]\n\n") == [SseEvent("message", "[1]", "c2")]
    assert parser.retry == 40
