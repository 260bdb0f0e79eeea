"""Small helpers around ``concurrent.futures.Future``."""
from __future__ import annotations

import heapq
import itertools
import threading
import time
from concurrent.futures import Future, InvalidStateError
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Callable

from .errors import RequestTimeout

#: what a blocking wait allows beyond a request's own deadline, for a stuck thread only
WAIT_MARGIN_S = 5.0


def resolved(value: Any) -> Future:
    """A future that already holds ``value``."""
    future: Future = Future()
    future.set_result(value)
    return future


def failed(error: BaseException) -> Future:
    """A future that already holds ``error``."""
    future: Future = Future()
    future.set_exception(error)
    return future


def settle(future: Future, *, result: Any = None, error: BaseException | None = None) -> None:
    """Set ``error`` (when given) or ``result`` on ``future``, unless it is done already."""
    try:
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)
    except InvalidStateError:
        pass


def then(inner: Future, transform: Callable[[Any], Any]) -> Future:
    """A future of ``transform(inner.result())``; an error of ``inner`` (or of ``transform``)
    passes through. Cancelling the returned future cancels ``inner``."""
    outer: Future = Future()

    def inner_done(done: Future) -> None:
        if outer.done():
            return
        try:
            if done.cancelled():
                outer.cancel()
                return
            error = done.exception()
            value = None if error is not None else transform(done.result())
        except BaseException as exc:  # noqa: BLE001 - the transform's failure is the result
            value, error = None, exc
        settle(outer, result=value, error=error)

    def propagate_cancel(done: Future) -> None:
        if done.cancelled():
            inner.cancel()

    outer.add_done_callback(propagate_cancel)
    inner.add_done_callback(inner_done)
    return outer


def all_done(futures: list[Future]) -> Future:
    """A future that resolves (to None) once every one of ``futures`` is done, however each
    ended. Starts no thread."""
    if not futures:
        return resolved(None)
    outcome: Future = Future()
    left = [len(futures)]
    lock = threading.Lock()

    def one_done(_: Future) -> None:
        with lock:
            left[0] -= 1
            last = left[0] == 0
        if last:
            outcome.set_result(None)

    for future in futures:
        future.add_done_callback(one_done)
    return outcome


def run_in_thread(fn: Callable[[], Any], name: str) -> Future:
    """Run ``fn`` on a new (daemon) thread; a future of its result."""
    future: Future = Future()

    def run() -> None:
        try:
            future.set_result(fn())
        except BaseException as exc:  # noqa: BLE001
            future.set_exception(exc)

    threading.Thread(target=run, name=name, daemon=True).start()
    return future


class Deadline:
    """One deadline on the monotonic clock; :meth:`left` is what remains (never negative)."""

    def __init__(self, seconds: float):
        self.at = time.monotonic() + seconds

    def left(self) -> float:
        return max(0.0, self.at - time.monotonic())


def wait_bounded(future: Future, timeout: float) -> Any:
    """``future.result()``, bounded by ``timeout`` plus a margin. The future is expected to
    settle by its own deadline (a session's watchdog sees to it); the margin only guards
    against a stuck thread, after which the future is cancelled and RequestTimeout raised."""
    try:
        return future.result(timeout + WAIT_MARGIN_S)
    except FutureTimeout:
        if future.done():  # the future's own error: a ToolTimeout is a TimeoutError too
            raise
        future.cancel()
        raise RequestTimeout(f"no answer within {timeout:g} s") from None


class Deadlines:
    """Fails futures whose deadline passes, on one thread (``raider-<name>-deadlines``)
    started on first use and joined by :meth:`close`.

    ``watch(future, seconds, make_error)`` sets ``make_error()`` on ``future`` if it is not
    done ``seconds`` from now. What the future stood for is not interrupted: this is for work
    that cannot be cancelled (a local handler), so that nobody waits on it forever.
    """

    _COMPACT_AT = 1024

    def __init__(self, name: str):
        self.name = name
        self._heap: list = []
        self._order = itertools.count()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False

    def watch(self, future: Future, seconds: float, make_error: Callable[[], BaseException]) -> None:
        with self._cond:
            if self._closed:
                return
            heapq.heappush(self._heap, (time.monotonic() + seconds, next(self._order), future,
                                        make_error))
            if len(self._heap) > self._COMPACT_AT:  # drop the settled, so the heap stays small
                self._heap = [item for item in self._heap if not item[2].done()]
                heapq.heapify(self._heap)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True,
                                                name=f"raider-{self.name}-deadlines")
                self._thread.start()
            self._cond.notify()

    def close(self) -> None:
        """Stop watching (pending futures are left as they are) and join the thread."""
        with self._cond:
            self._closed = True
            self._heap = []
            thread = self._thread
            self._cond.notify_all()
        if thread is not None and thread is not threading.current_thread():
            thread.join(5)

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    if self._closed:
                        return
                    while self._heap and self._heap[0][2].done():
                        heapq.heappop(self._heap)
                    now = time.monotonic()
                    if self._heap and self._heap[0][0] <= now:
                        _, _, future, make_error = heapq.heappop(self._heap)
                        break
                    self._cond.wait(self._heap[0][0] - now if self._heap else None)
            try:
                future.set_exception(make_error())
            except InvalidStateError:
                pass
