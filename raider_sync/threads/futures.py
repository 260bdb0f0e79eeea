"""Small helpers around ``concurrent.futures.Future``."""
from __future__ import annotations

import itertools
import threading
import time
from concurrent.futures import Future, InvalidStateError
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Callable

from ..errors import RequestTimeout
from . import timer

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


def rescue(inner: Future, recover: Callable[[BaseException], Future]) -> Future:
    """A future of ``inner``'s result; when ``inner`` fails, of the future that
    ``recover(error)`` returns (``recover`` raises to let an error pass; what it raises is the
    outcome). Cancelling the returned future cancels ``inner``, or the recovery once begun."""
    outer: Future = Future()
    current = [inner]

    def follow(done: Future) -> None:
        if outer.done():
            return
        if done.cancelled():
            outer.cancel()
            return
        error = done.exception()
        settle(outer, result=None if error is not None else done.result(), error=error)

    def inner_done(done: Future) -> None:
        error = None if outer.done() or done.cancelled() else done.exception()
        if error is None:
            follow(done)
            return
        try:
            current[0] = recover(error)
        except BaseException as exc:  # noqa: BLE001 - the recovery's failure is the result
            settle(outer, error=exc)
            return
        current[0].add_done_callback(follow)

    def propagate_cancel(done: Future) -> None:
        if done.cancelled():
            current[0].cancel()

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


class Deadline(float):
    """One deadline: an instant on the monotonic clock, which is the float it is.

    A public method makes one of its checked timeout (``Deadline(seconds)``) and hands that
    object down unchanged: to the wait for a start, to every leg of an input round, to the
    JSON-RPC session's timer and to the transport's socket, which all end at the same
    instant. ``seconds`` is the span it was made with (what a timeout message names);
    :meth:`left` is what remains, never negative."""

    seconds: float

    def __new__(cls, seconds: float) -> "Deadline":
        deadline = super().__new__(cls, time.monotonic() + seconds)
        deadline.seconds = seconds
        return deadline

    @property
    def at(self) -> float:
        """The instant, on ``time.monotonic()``'s clock."""
        return float(self)

    def left(self) -> float:
        return max(0.0, float(self) - time.monotonic())


def wait_bounded(future: Future, timeout: float) -> Any:
    """``future.result()``, bounded by ``timeout`` plus a margin. The future is expected to
    settle by its own deadline (the process's timer fails it); the margin only guards against
    a stuck thread, after which the future is cancelled and RequestTimeout raised."""
    try:
        return future.result(timeout + WAIT_MARGIN_S)
    except FutureTimeout:
        if future.done():  # the future's own error: a ToolTimeout is a TimeoutError too
            raise
        future.cancel()
        raise RequestTimeout(f"no answer within {timeout:g} s") from None


class Deadlines:
    """Fails futures whose deadline passes, on the process's timer thread
    (:mod:`raider_sync.threads.timer`); :meth:`close` stops watching.

    ``watch(future, seconds, make_error)`` sets ``make_error()`` on ``future`` if it is not
    done ``seconds`` from now. What the future stood for is not interrupted: this is for work
    that cannot be cancelled (a local handler), so that nobody waits on it forever.
    """

    def __init__(self, name: str):
        self.name = name
        self._lock = threading.Lock()
        self._keys = itertools.count()
        self._live: dict[int, timer.Handle] = {}  # the deadlines not yet passed nor dropped
        self._closed = False

    def watch(self, future: Future, seconds: float, make_error: Callable[[], BaseException]) -> None:
        key = next(self._keys)

        def expire() -> None:
            with self._lock:
                self._live.pop(key, None)
            settle(future, error=make_error())

        def done(_: Future) -> None:
            with self._lock:
                handle = self._live.pop(key, None)
            timer.cancel(handle)

        with self._lock:
            if self._closed:
                return
            self._live[key] = timer.at(time.monotonic() + seconds, expire)
        future.add_done_callback(done)

    def close(self) -> None:
        """Stop watching (pending futures are left as they are)."""
        with self._lock:
            self._closed = True
            handles, self._live = list(self._live.values()), {}
        for handle in handles:
            timer.cancel(handle)
