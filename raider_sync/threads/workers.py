"""A thread pool whose threads end when idle: an idle server keeps no pool thread.

:class:`Workers` is a ``concurrent.futures.Executor`` like ``ThreadPoolExecutor`` (``submit``
returns a Future; ``shutdown(wait, cancel_futures=...)``; threads named ``<prefix>_<n>``),
except that a thread which finds no work for :data:`IDLE_SECONDS` ends, and the next ``submit``
starts one again. With ``max_workers=1`` tasks run one at a time, in the order submitted.

A :class:`Lane` is a queue of tasks with a bound of its own that runs on a shared
``Workers``: an owner with several kinds of work (each with its order and its bound) keeps one
pool, whose idle threads serve whichever kind comes next, and joins that one pool.
"""
from __future__ import annotations

import collections
import itertools
import logging
import threading
import time
from concurrent.futures import Executor, Future
from typing import Any, Callable

log = logging.getLogger("raider_sync.threads")

#: how long a pool thread waits for work before it ends
IDLE_SECONDS = 0.5


class Workers(Executor):
    """Up to ``max_workers`` threads named ``<prefix>_<n>``, each running ``initializer()``
    first, made as tasks need them and ended after :data:`IDLE_SECONDS` without work.
    Threads are daemons: what runs on them is owned (and stopped) by the pool's owner."""

    def __init__(self, max_workers: int, thread_name_prefix: str,
                 initializer: Callable[[], None] | None = None):
        self._max = max_workers
        self._prefix = thread_name_prefix
        self._initializer = initializer
        self._cond = threading.Condition(threading.Lock())
        self._queue: collections.deque = collections.deque()
        self._threads: set[threading.Thread] = set()
        self._waiting = 0  # threads waiting for work
        self._shutdown = False
        self._numbers = itertools.count()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        """Queue ``fn(*args, **kwargs)``; a future of its result. Raises RuntimeError after
        :meth:`shutdown`."""
        future: Future = Future()
        self._put((future, fn, args, kwargs))
        return future

    def _put(self, task: tuple) -> None:
        """Queue ``task`` (future, fn, args, kwargs); a task without a future is a
        :class:`Lane`'s drain, which keeps its own tasks' outcomes."""
        with self._cond:
            if self._shutdown:
                raise RuntimeError("cannot schedule new futures after shutdown")
            self._queue.append(task)
            if len(self._queue) > self._waiting and len(self._threads) < self._max:
                # the new thread takes the oldest task along: it starts on it at once, as a
                # ThreadPoolExecutor's does, instead of first waiting for this lock
                thread = threading.Thread(target=self._work, args=(self._queue.popleft(),),
                                          daemon=True,
                                          name=f"{self._prefix}_{next(self._numbers)}")
                self._threads.add(thread)
                thread.start()
            else:
                self._cond.notify()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Take no more tasks; with ``cancel_futures`` drop (and cancel) the queued ones,
        else they still run. With ``wait``, join the threads (never the calling one)."""
        with self._cond:
            self._shutdown = True
            dropped = list(self._queue) if cancel_futures else []
            if cancel_futures:
                self._queue.clear()
            threads = list(self._threads)
            self._cond.notify_all()
        for future, *_ in dropped:
            if future is not None:
                future.cancel()
        if wait:
            for thread in threads:
                if thread is not threading.current_thread():
                    thread.join()

    def _work(self, task: tuple | None) -> None:
        me = threading.current_thread()
        try:
            if self._initializer is not None:
                try:
                    self._initializer()
                except BaseException:
                    with self._cond:  # the task it took along waits for another thread
                        self._queue.appendleft(task)
                        self._cond.notify()
                    raise
            while True:
                if task is None:
                    with self._cond:
                        idle_until = time.monotonic() + IDLE_SECONDS
                        while not self._queue:
                            left = idle_until - time.monotonic()
                            if self._shutdown or left <= 0:
                                # gone from the set under the same lock: a submit from now
                                # on starts a thread of its own instead of counting on this one
                                self._threads.discard(me)
                                return
                            self._waiting += 1
                            try:
                                self._cond.wait(left)
                            finally:
                                self._waiting -= 1
                        task = self._queue.popleft()
                future, fn, args, kwargs = task
                task = None
                _run(future, fn, args, kwargs)  # a Lane's drain has no future
                del future, fn, args, kwargs
        except BaseException:
            with self._cond:
                self._threads.discard(me)
            raise


class Lane(Executor):
    """Tasks run on ``pool``, at most ``limit`` at a time, taken in the order submitted (with
    ``limit=1``, each after the one before). A lane has no thread of its own: work queued in
    it waits only for its own tasks, never for another lane's, as long as the pool's
    ``max_workers`` is at least the sum of its lanes' limits. The pool's owner joins the pool."""

    def __init__(self, pool: Workers, limit: int):
        self._pool = pool
        self._limit = limit
        self._lock = threading.Lock()
        self._queue: collections.deque = collections.deque()
        self._running = 0  # tasks of the pool taking this lane's work
        self._shutdown = False

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        """Queue ``fn(*args, **kwargs)``; a future of its result. Raises RuntimeError after
        :meth:`shutdown`, or once the pool is shut down."""
        future: Future = Future()
        self._queue_task((future, fn, args, kwargs))
        return future

    def post(self, fn: Callable[..., Any], /, *args: Any) -> None:
        """Queue ``fn(*args)`` as :meth:`submit` does, for work whose outcome nobody reads:
        no future is made (what it raises is logged). Raises RuntimeError as submit does."""
        self._queue_task((None, fn, args, {}))

    def _queue_task(self, task: tuple) -> None:
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot schedule new futures after shutdown")
            self._queue.append(task)
            if self._running < self._limit:
                try:
                    self._pool._put((None, self._drain, (), {}))
                except RuntimeError:
                    self._queue.pop()
                    raise
                self._running += 1

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Take no more tasks; with ``cancel_futures`` drop (and cancel) the queued ones,
        else they still run. Never waits, whatever ``wait`` says: join the pool."""
        with self._lock:
            self._shutdown = True
            dropped = list(self._queue) if cancel_futures else []
            if cancel_futures:
                self._queue.clear()
        for future, *_ in dropped:
            if future is not None:
                future.cancel()

    def _drain(self) -> None:
        while True:
            with self._lock:
                if not self._queue:
                    self._running -= 1
                    return
                future, fn, args, kwargs = self._queue.popleft()
            _run(future, fn, args, kwargs)
            del future, fn, args, kwargs


def _run(future: Future | None, fn: Callable, args: tuple, kwargs: dict) -> None:
    """Run one task into its future, unless it was cancelled first; the future carries what
    it raised. A task without a future (:meth:`Lane.post`) has what it raised logged."""
    if future is None:
        try:
            fn(*args)
        except BaseException:  # noqa: BLE001 - kept, as a future would: the lane goes on
            log.exception("a task of %s failed", threading.current_thread().name)
        return
    if not future.set_running_or_notify_cancel():
        return
    try:
        result = fn(*args, **kwargs)
    except BaseException as exc:  # noqa: BLE001 - the future carries it
        future.set_exception(exc)
    else:
        future.set_result(result)
