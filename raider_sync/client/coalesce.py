"""Identical reads in flight share one request.

When many threads read the same thing at once (one resource, one prompt with the same
arguments), the server is asked once and every caller gets the answer (a copy of its own).
Tool calls are never merged: a call does something. Each caller keeps its own deadline and
its own cancel: a caller that times out or cancels leaves, and the others wait on; the
request is cancelled on the server only when no caller is left.

A caller joins a request in flight only when that request's deadline lasts about as long as
its own: no more than :data:`SLACK` of the caller's timeout (at least :data:`MIN_SLACK` s)
sooner, so that callers with the same timeout a moment apart share; a caller that needs
longer sends its own, which later callers join. :attr:`Coalescer.joined` counts the callers that were spared a
request.
"""
from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any, Callable, Hashable

from ..threads import timer
from ..threads.futures import Deadline, settle

#: how much of a caller's timeout a shared request may end before the caller's deadline
SLACK = 0.05
MIN_SLACK = 0.05


class _Shared:
    """One request in flight and the callers waiting on it."""

    def __init__(self, deadline: Deadline):
        self.deadline = deadline
        self.request: Future | None = None
        self.callers: list[Future] = []
        self.done = False


class Coalescer:
    """Requests in flight by key. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._in_flight: dict[Hashable, _Shared] = {}
        #: callers that joined a request in flight instead of sending one
        self.joined = 0

    def request_f(self, key: Hashable, deadline: Deadline, send: Callable[[], Future],
                  copy: Callable[[Any], Any], timeout_error: Callable[[], BaseException]
                  ) -> Future:
        """A future of the answer to the request ``send()`` sends, shared with the callers
        of the same ``key`` (see the module doc); ``copy(answer)`` gives each caller its
        own; ``timeout_error()`` fails a caller whose ``deadline`` passes before the shared
        request's. Never blocks on the request."""
        caller: Future = Future()
        with self._lock:
            shared = self._in_flight.get(key)
            slack = max(MIN_SLACK, SLACK * getattr(deadline, "seconds", 0.0))
            joins = (shared is not None and not shared.done
                     and shared.deadline >= deadline - slack)
            if joins:
                self.joined += 1
            else:
                shared = self._in_flight[key] = _Shared(deadline)
            assert shared is not None
            shared.callers.append(caller)
        caller.add_done_callback(lambda done: self._left(key, shared, done))
        if joins:
            if shared.deadline > deadline:  # the caller's own deadline comes first
                handle = timer.at(deadline.at, lambda: settle(caller, error=timeout_error()))
                caller.add_done_callback(lambda _: timer.cancel(handle))
            return caller
        try:
            request = send()
        except Exception as exc:  # noqa: BLE001 - every caller of the key is told
            request = Future()
            request.set_exception(exc)
        with self._lock:
            shared.request = request
        request.add_done_callback(lambda done: self._answered(key, shared, done, copy))
        if shared.done and not request.done():  # every caller left while it was sent
            request.cancel()
        return caller

    def _answered(self, key: Hashable, shared: _Shared, request: Future,
                  copy: Callable[[Any], Any]) -> None:
        with self._lock:
            shared.done = True
            if self._in_flight.get(key) is shared:
                del self._in_flight[key]
            callers = list(shared.callers)
        if request.cancelled():
            for caller in callers:
                caller.cancel()
            return
        error = request.exception()
        for index, caller in enumerate(callers):
            if error is not None:
                settle(caller, error=error)
                continue
            try:
                # the last caller may keep the answer itself: nobody else sees it
                answer = request.result()
                settle(caller, result=answer if index == len(callers) - 1 else copy(answer))
            except Exception as exc:  # noqa: BLE001 - a copy that failed fails its caller
                settle(caller, error=exc)

    def _left(self, key: Hashable, shared: _Shared, caller: Future) -> None:
        """A caller is done: when it left early (cancelled, or its own deadline), and it
        was the last, the request is cancelled on the server."""
        with self._lock:
            if shared.done:
                return
            if caller in shared.callers:
                shared.callers.remove(caller)
            if shared.callers:
                return
            shared.done = True
            if self._in_flight.get(key) is shared:
                del self._in_flight[key]
            request = shared.request
        if request is not None:
            request.cancel()
