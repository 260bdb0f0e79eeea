"""One thread that notices the exits of many processes and runs timers: the shells' watcher.

Every exit and every signal of a shell is handled on this one thread, so a process group is
never signalled after its leader was reaped (when its id could already belong to someone
else): the leader is reaped here, after the group was signalled.

On Linux an exit is seen through a pidfd in a selector (no polling, no thread per process);
elsewhere a small waiter thread per process waits for the exit without reaping it.
"""
from __future__ import annotations

import heapq
import itertools
import logging
import os
import selectors
import threading
import time
from typing import Callable

log = logging.getLogger("raider_sync.shell")

HAVE_PIDFD = hasattr(os, "pidfd_open")
JOIN_TIMEOUT = 10.0
PRUNE_AT = 1024  # timers in the heap before cancelled ones are dropped


class Timer:
    """A scheduled call; :meth:`cancel` before it runs and it never does."""

    __slots__ = ("when", "fn", "cancelled")

    def __init__(self, when: float, fn: Callable[[], None]):
        self.when = when
        self.fn: Callable[[], None] | None = fn
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True
        self.fn = None  # what it would have called need not stay alive until its time


class Reaper:
    """Watches process exits and runs timers and posted calls on ``raider-shell-reaper``.

    Started on first use; :meth:`stop` ends and joins it (it can be started again).
    Callbacks must be quick: slow work belongs on a pool.
    """

    def __init__(self, name: str = "raider-shell-reaper"):
        self.name = name
        self._lock = threading.Lock()
        self._posted: list[Callable[[], None]] = []
        self._timers: list[tuple[float, int, Timer]] = []
        self._prune_at = PRUNE_AT
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None
        self._wake_w = -1
        self._wake_pending = False
        self._selector: selectors.BaseSelector | None = None
        self._waiters: list[threading.Thread] = []
        self._closed = False  # stopped for good: calls run at once, timers never

    # -- used from any thread ---------------------------------------------------------------

    def in_reaper(self) -> bool:
        return threading.current_thread() is self._thread

    def call_soon(self, fn: Callable[[], None]) -> None:
        """Run ``fn()`` on the reaper thread (at once when already on it, or after a final
        :meth:`stop`)."""
        if not self.in_reaper():
            with self._lock:
                if not self._closed:
                    self._ensure_started()
                    self._posted.append(fn)
                    self._wake()
                    return
        self._safely(fn)

    def call_later(self, delay: float, fn: Callable[[], None]) -> Timer:
        """Run ``fn()`` on the reaper thread after ``delay`` seconds (never after a final
        :meth:`stop`: the timer comes back cancelled)."""
        timer = Timer(time.monotonic() + max(0.0, delay), fn)
        with self._lock:
            if self._closed:
                timer.cancel()
                return timer
            self._ensure_started()
            if len(self._timers) >= self._prune_at:
                self._prune()
            heapq.heappush(self._timers, (timer.when, next(self._seq), timer))
            if not self.in_reaper():
                self._wake()
        return timer

    def watch(self, pid: int, on_exit: Callable[[], None]) -> None:
        """Call ``on_exit()`` on the reaper thread once process ``pid`` (a child) has exited.

        The process is not reaped: ``on_exit`` reaps it (``Popen.wait``). Raises
        RuntimeError after a final :meth:`stop`."""
        if self._closed:
            raise RuntimeError("the watcher is stopped for good")
        pidfd = None
        if HAVE_PIDFD:
            try:
                pidfd = os.pidfd_open(pid)
            except OSError:
                pidfd = None
        if pidfd is not None:
            self.call_soon(lambda: self._register(pidfd, on_exit))
            return
        waiter = threading.Thread(target=self._wait_without_reaping, args=(pid, on_exit),
                                  name="raider-shell-wait", daemon=True)
        with self._lock:
            self._ensure_started()
            self._waiters = [t for t in self._waiters if t.is_alive()] + [waiter]
        waiter.start()

    def stop(self, timeout: float = JOIN_TIMEOUT, final: bool = False) -> None:
        """End the thread and join it (not when called from the thread itself). Posted
        calls still run, and so do pending timers, early: nothing waits for a time that
        would never come. ``final``: the thread never starts again."""
        with self._lock:
            self._closed = self._closed or final
            thread, self._thread = self._thread, None
            waiters, self._waiters = self._waiters, []
            if thread is None:
                return
            self._wake()
        if thread is not threading.current_thread():
            thread.join(timeout)
        for waiter in waiters:
            if waiter is not threading.current_thread():
                waiter.join(timeout)

    # -- the thread -------------------------------------------------------------------------

    def _ensure_started(self) -> None:
        """Start the thread (the caller holds the lock)."""
        if self._thread is not None:
            return
        selector = selectors.DefaultSelector()
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        selector.register(wake_r, selectors.EVENT_READ, None)
        self._selector, self._wake_w = selector, wake_w
        self._wake_pending = False
        # daemon: an atexit hook (BashTools' finalizer) stops the shells and this thread.
        self._thread = threading.Thread(target=self._run, args=(selector, wake_r, wake_w),
                                        name=self.name, daemon=True)
        self._thread.start()

    def _wake(self) -> None:
        """Wake the thread (the caller holds the lock, so the pipe is still open); one
        write until the thread has read it, however many calls come meanwhile."""
        if self._wake_w < 0 or self._wake_pending:
            return
        self._wake_pending = True
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass  # the pipe is full: the thread is awake anyway

    def _prune(self) -> None:
        """Drop cancelled timers (the caller holds the lock). A cancelled timer otherwise
        stays in the heap until its time: thousands of quick commands with a 120 s timeout
        would pile up. Amortised: the next prune waits until the heap has doubled."""
        self._timers = [entry for entry in self._timers if not entry[2].cancelled]
        heapq.heapify(self._timers)
        self._prune_at = max(PRUNE_AT, 2 * len(self._timers))

    def _register(self, pidfd: int, on_exit: Callable[[], None]) -> None:
        selector = self._selector
        if selector is None:  # stopped for good before the thread ever ran: nothing watches
            raise RuntimeError("the watcher is stopped for good")
        selector.register(pidfd, selectors.EVENT_READ, on_exit)

    def _run(self, selector: selectors.BaseSelector, wake_r: int, wake_w: int) -> None:
        me = threading.current_thread()
        try:
            while True:
                with self._lock:
                    posted, self._posted = self._posted, []
                    stopping = self._thread is not me
                for fn in posted:
                    self._safely(fn)
                if stopping:
                    self._run_due_timers(everything=True)
                    return
                self._run_due_timers()
                with self._lock:
                    delay = max(0.0, self._timers[0][0] - time.monotonic()) if self._timers else None
                for key, _ in selector.select(delay):
                    if key.fd == wake_r:
                        with self._lock:
                            self._wake_pending = False
                            try:
                                while os.read(wake_r, 4096):
                                    pass
                            except BlockingIOError:
                                pass
                        continue
                    selector.unregister(key.fd)
                    os.close(key.fd)
                    self._safely(key.data)
        finally:
            with self._lock:
                for key in list(selector.get_map().values()):
                    if key.fd != wake_r:
                        os.close(key.fd)
                selector.close()
                os.close(wake_r)
                os.close(wake_w)
                if self._wake_w == wake_w:
                    self._wake_w = -1

    def _run_due_timers(self, everything: bool = False) -> None:
        while True:
            with self._lock:
                if not self._timers or (not everything and self._timers[0][0] > time.monotonic()):
                    return
                _, _, timer = heapq.heappop(self._timers)
            fn = timer.fn
            if not timer.cancelled and fn is not None:
                self._safely(fn)

    def _wait_without_reaping(self, pid: int, on_exit: Callable[[], None]) -> None:
        try:
            if hasattr(os, "waitid"):
                os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
            else:  # pragma: no cover - platforms without waitid: reaped here, tiny pgid race
                os.waitpid(pid, 0)
        except ChildProcessError:
            pass
        except OSError:
            log.debug("waiting for %s failed", pid, exc_info=True)
        try:
            self.call_soon(on_exit)
        except OSError:
            pass

    @staticmethod
    def _safely(fn: Callable[[], None]) -> None:
        try:
            fn()
        except Exception:  # noqa: BLE001 - one shell's failure must not stop the watcher
            log.exception("shell watcher callback failed")
