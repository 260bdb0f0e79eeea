"""Small helpers around ``concurrent.futures.Future``."""
from __future__ import annotations

import threading
from concurrent.futures import Future, InvalidStateError
from typing import Any, Callable


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


def then(inner: Future, transform: Callable[[Any], Any]) -> Future:
    """A future of ``transform(inner.result())``; an error of ``inner`` (or of ``transform``)
    passes through. Cancelling the returned future cancels ``inner``."""
    outer: Future = Future()

    def settle(done: Future) -> None:
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
        try:
            if error is not None:
                outer.set_exception(error)
            else:
                outer.set_result(value)
        except InvalidStateError:
            pass

    def propagate_cancel(done: Future) -> None:
        if done.cancelled():
            inner.cancel()

    outer.add_done_callback(propagate_cancel)
    inner.add_done_callback(settle)
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
