"""Per-key limits on what one key holds at once in one relay process, so one key cannot take
every thread of the server from the others.

Two counts per key: requests in flight (every relayed request, streams included) and
long-lived streams (``GET`` on an MCP endpoint: the client's standalone SSE stream). A request
over either limit is answered 429 with ``Retry-After`` by the relay, before anything goes
upstream. The defaults are shares of the threads the relay is served with: half of them for
the requests of one key, a quarter for its streams, so two keys at their limits still leave
room for a third. With several worker processes each counts on its own.
"""
from __future__ import annotations

import threading
from typing import Optional


def default_limits(threads: int) -> tuple[int, int]:
    """``(requests, streams)`` a key may hold at once by default when the server runs
    ``threads`` threads: half and a quarter of them, at least one each."""
    threads = max(1, int(threads))
    return max(1, threads // 2), max(1, threads // 4)


class Lease:
    """What one admitted request holds; :meth:`release` gives it back (idempotent)."""

    def __init__(self, limits: "KeyLimits", key: str, stream: bool):
        self._limits, self._key, self._stream = limits, key, stream
        self._released = False

    def release(self) -> None:
        with self._limits._lock:
            if self._released:
                return
            self._released = True
            self._limits._give_back(self._key, self._stream)


class KeyLimits:
    """Counts per key; thread-safe, never blocks (a request over a limit is refused, not
    queued)."""

    def __init__(self, requests: int, streams: int):
        self.requests, self.streams = requests, streams
        self._lock = threading.Lock()
        self._held: dict[str, list[int]] = {}

    def acquire(self, key: str, stream: bool) -> Optional[Lease]:
        """A :class:`Lease` for one more request of ``key`` (a long-lived stream when
        ``stream``), or ``None`` when the key is at its limit."""
        with self._lock:
            held = self._held.setdefault(key, [0, 0])
            if held[0] >= self.requests or (stream and held[1] >= self.streams):
                if held == [0, 0]:
                    del self._held[key]
                return None
            held[0] += 1
            held[1] += 1 if stream else 0
        return Lease(self, key, stream)

    def held(self, key: str) -> tuple[int, int]:
        """``(requests, streams)`` the key holds now."""
        with self._lock:
            requests, streams = self._held.get(key, (0, 0))
            return requests, streams

    def _give_back(self, key: str, stream: bool) -> None:
        held = self._held.get(key)
        if held is None:
            return
        held[0] -= 1
        held[1] -= 1 if stream else 0
        if held == [0, 0]:
            del self._held[key]
