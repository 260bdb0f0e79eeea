"""The steps of raider_sync.interrupts record their outcome where the caller holds it."""
from __future__ import annotations

import os
import threading

from raider_sync.interrupts import acquire_into, write_into


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
