"""Stream and Watcher (raider_sync.gateway.streaming) on their own: a stream whose client left
is aborted, closing emits once, and closing the watcher aborts what it watches and joins its
thread. The relay's streams against a real socket are in test_relay.py."""
from __future__ import annotations

import threading

import pytest

from raider_sync.gateway.streaming import Stream, UpstreamBroken, Watcher


class Answer:
    """An upstream answer that yields ``parts`` and then blocks until shut down."""

    def __init__(self, *parts: bytes):
        self.parts, self.shut, self.closed = parts, threading.Event(), 0

    def chunks(self, size: int):
        yield from self.parts
        if not self.shut.wait(10):
            raise AssertionError("never shut down")
        raise OSError("shut down")

    def shutdown(self) -> None:
        self.shut.set()

    def close(self) -> None:
        self.closed += 1


def stream_of(answer: Answer, watcher: Watcher, emitted: list) -> Stream:
    event = {"status": 200, "response_bytes": 0}
    return Stream(answer, event, 0.0, watcher=watcher, emit=lambda e, _: emitted.append(e))


def test_a_stream_whose_client_left_is_aborted_and_emits_once():
    watcher, emitted = Watcher(), []
    answer = Answer(b"one", b"two")
    stream = stream_of(answer, watcher, emitted)
    gone = threading.Event()
    watcher.watch(stream, gone.is_set)
    try:
        chunks = iter(stream)
        assert next(chunks) + next(chunks) == b"onetwo"
        gone.set()
        assert list(chunks) == []  # cut by abort(): not an upstream break
        stream.close()
        stream.close()
    finally:
        watcher.close()
    assert answer.closed == 1 and len(emitted) == 1
    assert emitted[0]["ended"] == "client" and emitted[0]["response_bytes"] == 6


def test_an_upstream_that_breaks_off_raises_upstream_broken():
    class Broken(Answer):
        def chunks(self, size: int):
            yield b"half"
            raise OSError("reset")

    watcher, emitted = Watcher(), []
    stream = stream_of(Broken(), watcher, emitted)
    with pytest.raises(UpstreamBroken):
        list(stream)
    stream.close()
    assert emitted[0]["ended"] == "upstream"


def test_closing_the_watcher_aborts_what_it_watches_and_joins_its_thread():
    watcher, emitted = Watcher(), []
    answer = Answer()
    stream = stream_of(answer, watcher, emitted)
    watcher.watch(stream, lambda: False)
    thread = watcher._thread
    assert thread is not None and thread.is_alive()
    watcher.close()
    assert answer.shut.is_set() and stream.event["ended"] == "client"
    assert not thread.is_alive()
    late = stream_of(Answer(), watcher, emitted)
    watcher.watch(late, lambda: True)  # after close: not watched, no thread
    assert watcher._thread is None
    stream.close()
    late.close()
    watcher.close()  # twice: nothing more
