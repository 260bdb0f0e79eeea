"""Steps a Ctrl-C cannot tear: taking a lock, reading bytes, writing them.

Python runs signal handlers (a Ctrl-C's ``KeyboardInterrupt``) on the main thread between
bytecodes, and so also right after a C function returned and before its result was stored.
There, a lock taken with a timeout would stay held for ever, bytes read would be gone, and
how much of a line was written would be unknown. Each helper here does the step and records
its outcome in a container the caller holds, in one run of C code (a ``list.extend`` or
``deque.extend`` driven by ``iter(callable, sentinel)``): no bytecode runs in between, so
no handler does. The caller creates the container before the step and reads the outcome
from it, also after an interrupt:

    held: list = []
    try:
        acquire_into(held, lock, timeout)
        if not held:
            raise TimeoutError
        ...
    finally:
        if held:
            lock.release()

Other threads get no such interrupts; the helpers cost them a fraction of a microsecond.
"""
from __future__ import annotations

import functools
import itertools
import os
import threading
from collections.abc import MutableSequence


def acquire_into(held: MutableSequence, lock: threading.Lock, timeout: float) -> None:
    """Take ``lock``, waiting up to ``timeout`` seconds (-1: for ever), and append True to
    ``held`` in the same step; append nothing when the time runs out. An interrupt while it
    waits leaves the lock as it was and ``held`` empty."""
    held.extend(itertools.islice(iter(functools.partial(lock.acquire, True, timeout), False), 1))


def read_into(chunks: MutableSequence, fd: int, size: int) -> bool:
    """Read up to ``size`` bytes of ``fd`` and append them to ``chunks`` in the same step.
    True when something came, False at the end of the file; raises BlockingIOError when a
    non-blocking ``fd`` has nothing now."""
    before = len(chunks)
    chunks.extend(itertools.islice(iter(functools.partial(os.read, fd, size), b""), 1))
    return len(chunks) > before


def write_into(counts: MutableSequence, fd: int, data) -> None:
    """Write ``data`` to ``fd`` and append how many bytes went to ``counts`` in the same
    step; raises what ``os.write`` raises (BlockingIOError when a non-blocking ``fd`` is
    full). ``sum(counts)`` is what was written, also after an interrupt."""
    counts.extend(itertools.islice(iter(functools.partial(os.write, fd, data), None), 1))
