"""The steps of raider_sync.threads.interrupts record their outcome where the caller holds it."""
from __future__ import annotations

import collections
import os
import threading

import pytest

from raider_sync.threads.interrupts import acquire_into, read_into, write_into


def test_acquire_into_records_a_lock_taken_and_nothing_when_the_time_runs_out():
    lock = threading.Lock()
    held: list = []
    acquire_into(held, lock, 1.0)
    assert held == [True] and lock.locked()
    again: list = []
    acquire_into(again, lock, 0.01)
    assert again == [] and lock.locked()
    lock.release()


def test_write_into_records_what_each_write_took():
    read_end, write_end = os.pipe()
    try:
        counts: list = []
        write_into(counts, write_end, b"hello\n")
        write_into(counts, write_end, memoryview(b"world\n")[2:])
        assert counts == [6, 4]
        assert os.read(read_end, 100) == b"hello\nrld\n"
    finally:
        os.close(read_end)
        os.close(write_end)


def test_read_into_keeps_what_it_read_and_says_when_the_end_came():
    read_end, write_end = os.pipe()
    try:
        os.set_blocking(read_end, False)
        os.write(write_end, b"hello\n")
        chunks: collections.deque = collections.deque()
        assert read_into(chunks, read_end, 4) and read_into(chunks, read_end, 100)
        assert list(chunks) == [b"hell", b"o\n"]
        with pytest.raises(BlockingIOError):  # nothing now
            read_into(chunks, read_end, 100)
        os.close(write_end)
        write_end = -1
        assert not read_into(chunks, read_end, 100) and len(chunks) == 2  # the end
    finally:
        os.close(read_end)
        if write_end >= 0:
            os.close(write_end)
