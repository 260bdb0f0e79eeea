"""The threads of one JSON-RPC session: one pool, and a lane for each kind of work.

Each lane keeps its order and its bound, and as the pool can run every lane at its bound at
once, no lane waits for another's work; an idle thread serves whichever lane has work next.
The threads are named ``raider-<name>-session_<n>``, made as work comes, end after half a
second without work (an idle session has none) and are joined by :meth:`Lanes.shutdown`.
Submitting never blocks; work submitted once the lanes are shut down is dropped (logged).
"""
from __future__ import annotations

import logging
import threading
from typing import Any, Callable

from ..threads.workers import Lane, Workers

log = logging.getLogger("raider_sync.jsonrpc")

#: threads sending the requests of request_f(inline=False), so many may be under way at once
SEND_WORKERS = 16
#: threads running progress callbacks: how deep callbacks may wait for requests with
#: progress callbacks of their own before the deepest waits for its timeout
PROGRESS_WORKERS = 4


class Lanes:
    """The pool of the session ``name`` and its five lanes (the attributes below)."""

    def __init__(self, name: str, request_workers: int):
        self.name = name
        self._local = threading.local()
        self._pool = Workers(1 + PROGRESS_WORKERS + request_workers + 1 + SEND_WORKERS,
                             f"raider-{name}-session", self._mark_worker)
        #: the peer's notifications, one at a time in arrival order
        self.notifier = Lane(self._pool, 1)
        #: progress callbacks and the answers of requests that have them, in arrival order
        #: per request, off the notifier: a notification handler may wait for such a request
        self.progress = Lane(self._pool, PROGRESS_WORKERS)
        #: the peer's requests (an elicitation may wait for a person)
        self.requests = Lane(self._pool, request_workers)
        #: pings and cancellations, never stuck behind handlers that wait (an elicitation may
        #: wait for a person) and never on the reader thread (a write could wait on a read)
        self.control = Lane(self._pool, 1)
        #: the sends of request_f(inline=False): a *_f method returns before a slow write or
        #: an HTTP exchange; up to SEND_WORKERS at once, never delaying a ping or a cancel
        self.senders = Lane(self._pool, SEND_WORKERS)

    def submit(self, lane: Lane, fn: Callable[..., Any], *args: Any) -> None:
        """Queue ``fn(*args)`` on ``lane`` (no future: what it raises is logged); dropped
        (and logged) once shut down."""
        try:
            lane.post(fn, *args)
        except RuntimeError:  # shut down: the session is closing
            log.debug("%s: dropped %s while closing", self.name, getattr(fn, "__name__", fn))

    def shutdown(self, *, wait: bool, finish_received: bool) -> None:
        """Take no more work and drop what is queued, except, with ``finish_received``, the
        peer's requests and pings (they still run). With ``wait``, join the threads, unless
        called on one of them."""
        in_worker = getattr(self._local, "lanes", None) is self
        for lane in (self.notifier, self.progress, self.requests, self.control, self.senders):
            drop = not (finish_received and lane in (self.requests, self.control))
            lane.shutdown(cancel_futures=drop)
        self._pool.shutdown(wait=wait and not in_worker)

    def _mark_worker(self) -> None:
        self._local.lanes = self
