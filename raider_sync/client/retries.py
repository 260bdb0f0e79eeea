"""Tool calls sent again after the connection broke, when that is safe.

A call can meet a broken connection in two ways:

- **never sent**: no connection could be made (an HTTP connection refused, or connecting timed
  out), so nothing reached the server. It goes out again, with any retry policy but
  ``"never"``. (A stdio write that broke may have broken half way: that call counts as sent.)
- **lost in flight**: the server took the request and then went away (a stdio server that
  crashed mid-call, an HTTP connection cut after the request was written). The tool may have
  acted, so the call is repeated only when it is safe: the tool says it only reads
  (``annotations.readOnlyHint``) or that a repeat has no further effect
  (``idempotentHint``), or the caller said ``retry="always"``.

``retry`` is ``"safe"`` (the default), ``"never"`` or ``"always"``, per server and per call;
``max_attempts`` (default 2: one repeat) bounds the attempts. Every attempt lives within the
call's one deadline; a repeat waits for the server to be back (a restart due by the server's
restart policy, or :data:`RETRY_DELAY` doubling for HTTP) only while the deadline allows. A
result that took more than one attempt says so (``ToolResult.attempts``).
"""
from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any, Callable, Optional

from ..errors import ConnectionClosed, InvalidArgument, LostInFlight, TransportError
from ..threads.futures import Deadline, settle

RETRY_CHOICES = ("safe", "never", "always")
DEFAULT_MAX_ATTEMPTS = 2
#: the first wait before an HTTP call is sent again, doubled at each further attempt
RETRY_DELAY = 0.25


def retry_choice(value: Any, where: str) -> str:
    """``value`` checked as a retry policy; raises InvalidArgument naming ``where``."""
    if value not in RETRY_CHOICES:
        raise InvalidArgument(f"retry of {where} must be one of {', '.join(RETRY_CHOICES)}, "
                              f"not {value!r}")
    return value


def never_sent(error: BaseException) -> bool:
    """Whether ``error`` says the request never reached the server: no connection was made.
    (A call made while the server is already down fails at once with NotConnected, which
    says when a restart is due: it met no broken connection.)"""
    return isinstance(error, TransportError) and error.sent is False


def lost_in_flight(error: BaseException) -> bool:
    """Whether ``error`` says the connection broke once the request went out (or may have:
    a stdio write can break half way)."""
    return isinstance(error, (LostInFlight, ConnectionClosed))


def safe_to_repeat(tool: Optional[dict]) -> bool:
    """Whether the tool's annotations say a repeat does no harm: it only reads, or it is
    idempotent."""
    annotations = (tool or {}).get("annotations")
    if not isinstance(annotations, dict):
        return False
    return annotations.get("readOnlyHint") is True or annotations.get("idempotentHint") is True


#: a call's repeats, asked for once its first attempt failed with the error given: the future
#: of the call from there (failed with that error at once when it may not be repeated)
Repeats = Callable[[BaseException], Future]


class Retrying:
    """One call's attempts: :meth:`start` gives the future of the call, which settles with
    the first attempt that does not fail on a broken connection (or that may not be
    repeated). ``attempt(deadline, first)`` sends one attempt within ``deadline``;
    ``may_repeat(error)`` says whether a failed attempt may be sent again;
    ``back_in(error)`` is the seconds until the server can be reached again (None: it will
    not be); ``on_retry(attempts, error)`` is told of each repeat."""

    def __init__(self, attempt: Callable[[Deadline, bool], Future], deadline: Deadline, *,
                 max_attempts: int, may_repeat: Callable[[BaseException], bool],
                 back_in: Callable[[BaseException, int], Optional[float]],
                 on_retry: Callable[[int, BaseException], None], name: str,
                 waiting: "Waiting | None" = None):
        self._attempt = attempt
        self._waiting = waiting
        self.deadline = deadline
        self.max_attempts = max_attempts
        self._may_repeat = may_repeat
        self._back_in = back_in
        self._on_retry = on_retry
        self._name = name
        self.attempts = 0
        self.outer: Future = Future()
        self._current: Future | None = None
        self._pause: threading.Event | None = None  # made for a repeat's wait only
        self.outer.add_done_callback(self._outer_done)

    def start(self) -> Future:
        self._send(first=True)
        return self.outer

    def after(self, error: BaseException) -> Future:
        """The call's future when its first attempt, sent by the caller, failed with
        ``error``: repeated when it may be, else failed with ``error``."""
        self.attempts = 1
        self._failed(error)
        return self.outer

    def _send(self, first: bool) -> None:
        self.attempts += 1
        try:
            current = self._attempt(self.deadline, first)
        except Exception as exc:  # noqa: BLE001 - the future carries it
            current = Future()
            current.set_exception(exc)
        self._current = current
        current.add_done_callback(self._settled)

    def _settled(self, current: Future) -> None:
        if self.outer.done():
            return
        if current.cancelled():
            self.outer.cancel()
            return
        error = current.exception()
        if error is None:
            result = current.result()
            if self.attempts > 1 and hasattr(result, "attempts"):
                result.attempts = self.attempts
            settle(self.outer, result=result)
            return
        self._failed(error)

    def _failed(self, error: BaseException) -> None:
        wait = self._repeat_in(error)
        if wait is None:
            settle(self.outer, error=error)
            return
        self._on_retry(self.attempts, error)
        self._pause = threading.Event()
        if self._waiting is not None and not self._waiting.add(self):
            settle(self.outer, error=error)  # the server is stopping: no repeat
            return
        if self.outer.done():  # cancelled meanwhile
            return
        # a repeat may wait for a restart and start one: never on the thread that settled
        threading.Thread(target=self._again, args=(self._pause, wait), daemon=True,
                         name=f"raider-{self._name}-retry").start()

    def _repeat_in(self, error: BaseException) -> Optional[float]:
        """Seconds to wait before the next attempt, or None when there is none."""
        if self.attempts >= self.max_attempts or not self._may_repeat(error):
            return None
        wait = self._back_in(error, self.attempts)
        if wait is None or wait >= self.deadline.left():
            return None
        return wait

    def _again(self, pause: threading.Event, wait: float) -> None:
        try:
            if pause.wait(wait):  # set when the call is cancelled or the server stops
                return
            if not self.outer.done():
                self._send(first=False)
        finally:
            if self._waiting is not None:
                self._waiting.discard(self)

    def abandon(self, error: BaseException) -> None:
        """Give up a repeat that waits: the call fails with ``error``."""
        if self._pause is not None:
            self._pause.set()
        settle(self.outer, error=error)

    def _outer_done(self, outer: Future) -> None:
        if outer.cancelled():
            if self._pause is not None:
                self._pause.set()
            current = self._current
            if current is not None:
                current.cancel()


class Waiting:
    """The calls of one server that wait to be sent again; :meth:`close` (the server
    stops) fails them at once, so no repeat outlives the server. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: set[Retrying] = set()
        self._closed = False

    def add(self, call: Retrying) -> bool:
        with self._lock:
            if self._closed:
                return False
            self._calls.add(call)
            return True

    def discard(self, call: Retrying) -> None:
        with self._lock:
            self._calls.discard(call)

    def close(self, error: BaseException) -> None:
        with self._lock:
            self._closed = True
            calls, self._calls = list(self._calls), set()
        for call in calls:
            call.abandon(error)

    def reopen(self) -> None:
        with self._lock:
            self._closed = False
