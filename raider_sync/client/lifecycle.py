"""The pieces of a server's life that :mod:`.connection` is built from.

- :data:`UP`: the statuses in which calls are sent; :func:`unreachable`: an HTTP failure
  that makes a connected server ``degraded``.
- :data:`live`: the servers not stopped yet, whose processes
  :func:`stop_forgotten_servers` kills at exit if the program forgot to stop them.
- :class:`Restarts` keeps the count of a :class:`~raider_sync.config.RestartPolicy`: crashes,
  restarts in a row, and when the next one may come.
- :class:`InFlight` counts the requests sent and not yet settled, so that a stop may drain
  them: once it closes, a request is refused before anything is sent.
- :func:`failure_reason` says why a start failed, in a sentence.
- :func:`when_started` makes a call wait for a start under way, bounded by the call's own
  timeout, without a thread of its own.
"""
from __future__ import annotations

import atexit
import threading
import time
import weakref
from concurrent.futures import Future
from typing import Any, Callable

from ..config import RestartPolicy
from ..errors import McpError, TransportError, UnsupportedProtocol, last_stderr_line
from ..protocol import REPEATABLE_METHODS
from ..threads.futures import Deadline, Deadlines, settle
from ..transports.statuses import Status, classify_error

#: the statuses in which calls are sent
UP = ("connected", "degraded")
#: servers not stopped yet, killed at exit if the program forgot them
live: "weakref.WeakSet[Any]" = weakref.WeakSet()


def stop_forgotten_servers() -> None:
    """Kill the processes of servers a program forgot to stop."""
    for server in list(live):
        try:
            server.kill_now()
        except Exception:  # noqa: BLE001
            pass


# At exit the interpreter joins every pool thread before atexit hooks run; a pool thread still
# reading the answer of a pending call would hold the exit until the call's deadline. The
# threading hook runs before that join (hooks run newest first; concurrent.futures registered
# its join when it was imported, before this module); atexit is the fallback.
if hasattr(threading, "_register_atexit"):
    threading._register_atexit(stop_forgotten_servers)
atexit.register(stop_forgotten_servers)


#: a connection that lasted this long (or the policy's longest backoff, if longer) ends a
#: run of restarts: the next crash counts as the first again
STABLE_AFTER_S = 60.0


def repeatable(message: dict) -> bool:
    """Whether a request lost in flight may be sent once more: its method is a read, the
    handshake or a setting (:data:`REPEATABLE_METHODS`), never a tools/call."""
    return message.get("method") in REPEATABLE_METHODS


def unreachable(error: TransportError) -> bool:
    """An HTTP failure that says nothing reached the server (or its gateway gave up on it);
    the request's own timeout is not one (see :mod:`raider_sync.transports.statuses`)."""
    return classify_error(error) is Status.UNREACHABLE


def failure_reason(exc: BaseException, stderr_tail: list[str], diagnosis: str | None) -> str:
    """Why a start failed, in a sentence, with a stdio server's last stderr line and the
    transport's ``diagnosis``."""
    if isinstance(exc, UnsupportedProtocol):
        message = exc.message
    elif isinstance(exc, McpError):
        message = f"the server answered with an error: {exc}"
    else:
        message = str(exc)
    last = last_stderr_line(stderr_tail)
    if last and last not in message:
        message = f"{message} (last stderr line: {last})"
    if diagnosis:
        message = f"{message}: {diagnosis}"
    return message or type(exc).__name__


def restart_policy(value: Any) -> RestartPolicy | None:
    """A RestartPolicy from what a constructor was given: a policy, a dict of its keys,
    True (the defaults), or None/False (no policy)."""
    if value is None or value is False:
        return None
    if value is True:
        return RestartPolicy()
    if isinstance(value, RestartPolicy):
        return value
    if isinstance(value, dict):
        return RestartPolicy(**value)
    raise TypeError(f"restart must be a RestartPolicy, a dict or a bool, "
                    f"not {type(value).__name__}")


class InFlight:
    """The requests of a server sent and not yet settled, and a door a draining stop closes:
    once closed, :meth:`enter` refuses, so a request is either counted (and waited for) or
    never sent. Thread-safe."""

    def __init__(self) -> None:
        # a plain lock for the count (taken twice per request), and an event a draining
        # stop waits on, set by the request that leaves the count at 0 once closed
        self._lock = threading.Lock()
        self._count = 0
        self._closed: str | None = None
        self._drained = threading.Event()

    def enter(self) -> str | None:
        """Count one request about to be sent; once closed, why not (nothing counted)."""
        with self._lock:
            if self._closed is not None:
                return self._closed
            self._count += 1
            return None

    def leave(self, _: Any = None) -> None:
        """A counted request settled (a future's done callback)."""
        with self._lock:
            self._count -= 1
            drained = not self._count and self._closed is not None
        if drained:
            self._drained.set()

    def close(self, why: str, timeout: float) -> bool:
        """Refuse requests from now on, saying ``why``; block until none counted is left, at
        most ``timeout`` s. True when none is."""
        with self._lock:
            self._closed = why
            if not self._count:
                return True
            self._drained.clear()
        return self._drained.wait(timeout)

    def reopen(self) -> None:
        with self._lock:
            self._closed = None


class Restarts:
    """The restarts a policy allows a server; the owner holds its lock around every call."""

    def __init__(self, policy: RestartPolicy | None):
        self.policy = policy
        self.count = 0  # restarts in a row
        self._crashed_at: float | None = None
        self._up_since: float | None = None

    def connected(self) -> None:
        self._up_since = time.monotonic()

    def crashed(self) -> None:
        now = time.monotonic()
        stable = max(STABLE_AFTER_S, self.policy.max_backoff_ms / 1000) if self.policy else 0
        if self._up_since is not None and now - self._up_since >= stable:
            self.count = 0
        self._crashed_at, self._up_since = now, None

    def reset(self) -> None:
        """A restart asked for by hand starts the count afresh."""
        self.count = 0

    def due(self) -> tuple[bool, str]:
        """Whether a restart may begin now; else why not, in a few words (empty without a
        policy)."""
        policy = self.policy
        if policy is None:
            return False, ""
        if self.count >= policy.max_restarts:
            return False, f"gave up after {self.count} restart{'s' if self.count != 1 else ''}"
        wait = 0.0
        if self._crashed_at is not None:
            wait = self._crashed_at + policy.delay(self.count) - time.monotonic()
        if wait > 0:
            return False, (f"restart {self.count + 1} of {policy.max_restarts} in "
                           f"{wait:.2g} s")
        return True, ""

    def due_in(self) -> float | None:
        """Seconds until a restart may begin (0: now), or None when none will."""
        policy = self.policy
        if policy is None or self.count >= policy.max_restarts:
            return None
        if self._crashed_at is None:
            return 0.0
        return max(0.0, self._crashed_at + policy.delay(self.count) - time.monotonic())

    def begun(self) -> str:
        """Count a restart; a description of it for the log."""
        self.count += 1
        return f"restart {self.count} of {self.policy.max_restarts if self.policy else 0}"


def when_started(start: Future, deadline: Deadline, proceed: Callable[[], Future],
                 timer: Deadlines, make_timeout: Callable[[], BaseException]) -> Future:
    """A future of ``proceed()``'s outcome, called once ``start`` is done.

    ``proceed`` runs on the thread that settles ``start`` (or at once if it is settled) and
    must not block. The future fails with ``make_timeout()`` when ``deadline`` passes first;
    cancelling it cancels what ``proceed`` returned.
    """
    outer: Future = Future()

    def started(_: Future) -> None:
        if outer.done():
            return
        try:
            inner = proceed()
        except BaseException as exc:  # noqa: BLE001 - the future carries it
            settle(outer, error=exc)
            return
        forward(inner, outer)

    timer.watch(outer, deadline.left(), make_timeout)
    start.add_done_callback(started)
    return outer


def forward(inner: Future, outer: Future) -> None:
    """Settle ``outer`` as ``inner`` settles; cancelling ``outer`` cancels ``inner``."""
    def copy(done: Future) -> None:
        if done.cancelled():
            outer.cancel()
        elif done.exception() is not None:
            settle(outer, error=done.exception())
        else:
            settle(outer, result=done.result())

    def cancel(done: Future) -> None:
        if done.cancelled() or not inner.done():
            inner.cancel()  # also when the wait's deadline failed ``outer`` first

    outer.add_done_callback(cancel)
    inner.add_done_callback(copy)
