"""One timer thread for the whole process: the deadlines of every session and every wait.

``at(when, action)`` runs ``action()`` on the thread ``raider-timer`` once ``time.monotonic()``
reaches ``when``, unless ``cancel(handle)`` came first. The thread starts with the first
deadline and ends once a whole :data:`IDLE_SECONDS` passed with nothing scheduled, so a program
whose servers sit idle has no timer thread, and a busy one never starts it more than once per
idle period. It owns no resource: a server's stop has nothing of it to join.

Actions run one after the other on that one thread, so they must be quick and must not block:
they fail a future (whose done callbacks run there too) and queue a notification.
"""
from __future__ import annotations

import heapq
import itertools
import logging
import os
import threading
import time
from typing import Callable

log = logging.getLogger("raider_sync.timer")

#: how long the timer thread stays with nothing scheduled before it ends
IDLE_SECONDS = 0.25
THREAD_NAME = "raider-timer"

# a handle is the heap entry itself: [when, order, action]; a cancelled one holds no action
Handle = list


class _Timer:
    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._heap: list[Handle] = []
        self._live = 0  # entries with an action
        self._order = itertools.count()
        self._scheduled = 0  # at() calls so far: the thread ends after an idle period without one
        self._thread: threading.Thread | None = None
        self._wakes_at = float("inf")  # when the thread's wait ends

    def at(self, when: float, action: Callable[[], None]) -> Handle:
        """Run ``action()`` at ``when`` (time.monotonic()); a handle for :meth:`cancel`."""
        entry = [when, next(self._order), action]
        with self._cond:
            heapq.heappush(self._heap, entry)
            self._live += 1
            self._scheduled += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=THREAD_NAME, daemon=True)
                self._thread.start()
            elif when < self._wakes_at:
                self._cond.notify()
        return entry

    def cancel(self, entry: Handle | None) -> None:
        """Drop ``entry`` unless its action ran already. Safe to call twice, and with None."""
        if entry is None or entry[2] is None:
            return
        with self._cond:
            if entry[2] is None:
                return
            entry[2] = None  # the action (and whatever it holds) is let go at once
            self._live -= 1
            if not self._live:
                self._heap.clear()
            elif len(self._heap) > 64 and len(self._heap) > 4 * self._live:
                self._heap = [item for item in self._heap if item[2] is not None]
                heapq.heapify(self._heap)

    @property
    def running(self) -> bool:
        """Whether the timer thread is running (for tests and diagnostics)."""
        return self._thread is not None

    def _run(self) -> None:
        idle_mark = -1
        while True:
            due: list[Callable[[], None]] = []
            with self._cond:
                now = time.monotonic()
                heap = self._heap
                while heap and (heap[0][2] is None or heap[0][0] <= now):
                    entry = heapq.heappop(heap)
                    if entry[2] is not None:
                        due.append(entry[2])
                        entry[2] = None
                        self._live -= 1
                if not due:
                    if not heap:
                        if idle_mark == self._scheduled:  # a whole idle period, nothing new
                            self._thread = None
                            self._wakes_at = float("inf")
                            return
                        idle_mark = self._scheduled
                        wait = IDLE_SECONDS
                    else:
                        idle_mark = -1
                        # at most an idle period at a time, so that an entry cancelled
                        # meanwhile does not keep the thread for its whole delay
                        wait = min(heap[0][0] - now, IDLE_SECONDS)
                    self._wakes_at = now + wait
                    self._cond.wait(wait)
                    continue
            for action in due:
                try:
                    action()
                except Exception:  # noqa: BLE001 - one failing action must not stop the rest
                    log.exception("a timer action failed")


timer = _Timer()
at = timer.at
cancel = timer.cancel

if hasattr(os, "register_at_fork"):  # a child has no timer thread, and maybe a held lock
    os.register_at_fork(after_in_child=timer._reset)
