"""The requests of one JSON-RPC session that await their answer.

:class:`PendingRequests` maps a request id to its :class:`Pending` entry, whose
``concurrent.futures.Future`` (a :class:`RequestFuture`) the answer settles. Each request has
a deadline on the process's one timer thread (:mod:`raider_sync.threads.timer`), which fails
a request whose deadline passes, after having ``notifications/cancelled`` sent for it, so even
a future nobody waits on cannot hang. When the session ends, every pending future fails at
once with what ended it (a :class:`~raider_sync.errors.ConnectionClosed` carrying the stderr
tail, say). Nothing here blocks but on the table's lock, and nothing is raised: an outcome
is the future's.
"""
from __future__ import annotations

import _thread
import collections
import functools
import logging
import threading
import time
from concurrent.futures import Future, InvalidStateError
from concurrent.futures._base import CANCELLED, CANCELLED_AND_NOTIFIED, FINISHED, PENDING
from concurrent.futures._base import LOGGER as _futures_log
from typing import Any, Callable

from ..errors import RequestTimeout
from ..threads import timer
from ..threads.futures import Deadline

log = logging.getLogger("raider_sync.jsonrpc")

#: the states of a future that is done
_SETTLED = frozenset((CANCELLED, CANCELLED_AND_NOTIFIED, FINISHED))
_CANCELLED = frozenset((CANCELLED, CANCELLED_AND_NOTIFIED))


class Pending:
    """One request awaiting its answer: its future and what settling it needs."""

    __slots__ = ("future", "method", "timeout", "timeout_message", "timeout_error",
                 "cancellable", "on_progress", "transform", "steps", "stepping", "timer",
                 "awaited", "idle", "deadline")

    def __init__(self, future: Future, method: str, timeout: float,
                 timeout_message: str | None, timeout_error: type[RequestTimeout],
                 cancellable: bool, on_progress: Callable | None,
                 transform: Callable[[Any], Any] | None, awaited: bool = False,
                 idle: float | None = None):
        self.future = future
        self.method = method
        self.timeout = timeout
        self.timeout_message = timeout_message
        self.timeout_error = timeout_error
        self.cancellable = cancellable
        self.on_progress = on_progress
        self.transform = transform
        #: progress calls, then the answer: made with the first step (a request with progress)
        self.steps: collections.deque | None = None
        self.stepping = False  # a progress worker is running the steps
        self.timer: timer.Handle | None = None  # the deadline, on the process's timer
        self.awaited = awaited  # a caller blocks on the future next
        #: seconds of silence allowed between the request's progress notifications (None:
        #: the deadline alone bounds it); each progress notification sets the timer again,
        #: never past ``deadline``, the cap
        self.idle = idle
        self.deadline: float | None = None

    def due(self, now: float) -> float:
        """When the request times out if nothing more comes."""
        assert self.deadline is not None
        return self.deadline if self.idle is None else min(now + self.idle, self.deadline)


class RequestFuture(Future):
    """The future of one request sent by a :class:`~raider_sync.jsonrpc.Session`:
    ``request_id`` is its id, and a successful :meth:`cancel` drops the request and sends
    ``notifications/cancelled``.

    A ``concurrent.futures.Future`` in every way, made for the one path every request
    takes (made, settled, read once): its state is guarded by a plain re-entrant lock,
    taken directly, and the ``threading.Condition`` over that lock, which only a thread
    that waits for it needs, is made when one first does (:attr:`_condition`), so a request
    answered before anyone waits makes none and wakes no one."""

    def __init__(self, pending: "PendingRequests", request_id: int):
        # Future.__init__, but for the condition (made by the property below)
        self._lock = _thread.RLock()  # what threading.RLock() makes, without its wrapper
        self._made_condition: threading.Condition | None = None
        self._state = PENDING
        self._result: Any = None
        self._exception: BaseException | None = None
        self._waiters: list = []
        self._done_callbacks: list = []
        self.request_id = request_id
        self._pending = pending

    @property
    def _condition(self) -> threading.Condition:  # type: ignore[override]
        """The condition over the future's lock, that Future's waits use: made once."""
        condition = self._made_condition
        if condition is None:
            with self._lock:
                if self._made_condition is None:
                    self._made_condition = threading.Condition(self._lock)
                condition = self._made_condition
        return condition

    def _run_callbacks(self) -> None:
        for callback in self._done_callbacks:  # as Future runs them
            try:
                callback(self)
            except Exception:  # noqa: BLE001 - a callback cannot keep the others from running
                _futures_log.exception("exception calling callback for %r", self)

    def cancel(self) -> bool:
        if not super().cancel():
            return False
        self._pending.cancelled(self.request_id)
        return True

    def done(self) -> bool:
        with self._lock:
            return self._state in _SETTLED

    def cancelled(self) -> bool:
        with self._lock:  # Future's own takes the condition, which would make it
            return self._state in _CANCELLED

    def result(self, timeout: float | None = None) -> Any:
        with self._lock:
            if self._state == FINISHED and self._exception is None:
                return self._result
        return super().result(timeout)  # an error, or a wait: Future's own

    def exception(self, timeout: float | None = None) -> BaseException | None:
        with self._lock:
            if self._state == FINISHED:
                return self._exception
        return super().exception(timeout)

    def add_done_callback(self, fn: Callable[[Future], object]) -> None:
        with self._lock:
            if self._state not in _SETTLED:
                self._done_callbacks.append(fn)
                return
        try:
            fn(self)
        except Exception:  # noqa: BLE001 - as Future does: a callback cannot break the rest
            _futures_log.exception("exception calling callback for %r", self)

    def set_result(self, result: Any) -> None:
        """As Future.set_result (InvalidStateError when settled already), waking a waiting
        thread only when one made the condition to wait on."""
        self._finish(result, None)

    def set_exception(self, exception: BaseException | None) -> None:
        """As Future.set_exception, and as :meth:`set_result` wakes."""
        self._finish(None, exception)

    def _finish(self, result: Any, exception: BaseException | None) -> None:
        with self._lock:
            if self._state in _SETTLED:
                raise InvalidStateError(f"{self._state}: {self!r}")
            self._result, self._exception = result, exception
            self._state = FINISHED
            for waiter in self._waiters:
                if exception is None:
                    waiter.add_result(self)
                else:
                    waiter.add_exception(self)
            if self._made_condition is not None:
                self._made_condition.notify_all()
        if self._done_callbacks:
            self._run_callbacks()


class PendingRequests:
    """The pending requests of the session ``name``. ``send_cancelled(request_id, reason)``
    has the peer told that a request is cancelled (it must not block: it queues the
    notification); ``on_settle(error)`` is told of every request's outcome (None for an
    answer) before a waiting caller wakes, and of what :meth:`tell` is given. Thread-safe."""

    def __init__(self, name: str, *, send_cancelled: Callable[[int, str], None],
                 on_settle: Callable[[BaseException | None], None] | None = None):
        self.name = name
        self._send_cancelled = send_cancelled
        self._on_settle = on_settle
        self._lock = threading.Lock()
        #: request id -> its entry (read it under no lock only to look)
        self.entries: dict[int, Pending] = {}
        #: what ended the session; once set, no request is added
        self.closed_error: BaseException | None = None

    def add(self, request_id: int, entry: Pending, deadline: Deadline,
            watch: bool = True) -> bool:
        """Make ``entry`` pending, with its deadline on the timer (unless not ``watch``: a
        request sent on the caller's thread next, whose answer may come during the send,
        is watched only if it is still pending after it, see :meth:`watch`). False when the
        session has ended (the entry's future then holds what ended it)."""
        with self._lock:
            if self.closed_error is not None:
                entry.future.set_exception(self.closed_error)
                return False
            self.entries[request_id] = entry
            entry.deadline = deadline
            if watch:  # under the lock: an answer that comes at once finds it to cancel
                entry.timer = timer.at(entry.due(time.monotonic()),
                                       functools.partial(self.expire, request_id))
        return True

    def watch(self, request_id: int) -> None:
        """Put the deadline of ``request_id``, added unwatched, on the timer, unless it is
        no longer pending (answered, failed or cancelled meanwhile)."""
        with self._lock:
            entry = self.entries.get(request_id)
            if entry is not None and entry.timer is None:
                # under the lock: an answer settling it now finds the deadline to cancel
                entry.timer = timer.at(entry.due(time.monotonic()),
                                       functools.partial(self.expire, request_id))

    def progressed(self, request_id: Any) -> None:
        """A progress notification of ``request_id`` came: a request that allows a span of
        silence (``idle``) gets it anew, within its deadline."""
        if not _hashable(request_id):
            return
        with self._lock:
            entry = self.entries.get(request_id)
            if entry is None or entry.idle is None or entry.timer is None:
                return
            timer.cancel(entry.timer)
            entry.timer = timer.at(entry.due(time.monotonic()),
                                   functools.partial(self.expire, request_id))

    def check_out(self, request_id: int, entry: Pending, may_be_alone: bool) -> bool | None:
        """Before ``request_id`` is sent: None when it is no longer pending (cancelled, timed
        out or failed before its turn); else whether it is alone, that is ``may_be_alone``
        and no other pending request has a caller blocking on it."""
        with self._lock:
            if request_id not in self.entries:
                return None
            if not may_be_alone or len(self.entries) == 1:
                return may_be_alone  # the usual case: nothing else to look at
            return not any(
                other.awaited for other in self.entries.values() if other is not entry)

    def waiting(self, request_id: Any) -> bool:
        """Whether ``request_id`` still awaits its answer (a look, under no lock)."""
        return request_id in self.entries

    def get(self, request_id: Any) -> Pending | None:
        """The entry of ``request_id`` (any JSON value), or None."""
        with self._lock:
            return self.entries.get(request_id) if _hashable(request_id) else None

    def take_unless_stepped(self, request_id: Any) -> Pending | None:
        """The entry of ``request_id`` (any JSON value), taken out of the table unless its
        answer must wait behind progress steps (then it stays, for :meth:`settle`); None
        when it is not pending. One lock for the usual answer."""
        if type(request_id) is not int and not _hashable(request_id):  # ints: ours, usually
            return None
        with self._lock:
            entry = self.entries.get(request_id)
            if entry is not None and entry.on_progress is None:
                del self.entries[request_id]
        return entry

    def settle(self, request_id: Any, *, result: Any = None,
               error: BaseException | None = None) -> None:
        """Settle ``request_id`` with ``result`` (shaped by its ``transform``) or ``error``;
        a late answer to a request no longer pending is ignored."""
        with self._lock:
            entry = self.entries.pop(request_id, None) if _hashable(request_id) else None
        if entry is None:
            return  # late answer to a cancelled or timed-out request: ignored
        self.settle_taken(entry, result=result, error=error)

    def settle_taken(self, entry: Pending, *, result: Any = None,
                     error: BaseException | None = None) -> None:
        """Settle ``entry``, already taken out of the table, as :meth:`settle` does."""
        if entry.timer is not None:  # none: answered during its send, never watched
            timer.cancel(entry.timer)
        if error is None and entry.transform is not None:
            try:
                result = entry.transform(result)
            except Exception as exc:  # noqa: BLE001 - the future carries it
                error = exc
        if self._on_settle is not None:  # as tell() does, one call less for every answer
            try:
                self._on_settle(error)
            except Exception:  # noqa: BLE001
                log.exception("%s: on_settle failed", self.name)
        try:
            if error is not None:
                entry.future.set_exception(error)
            else:
                entry.future.set_result(result)
        except InvalidStateError:
            pass

    def cancelled(self, request_id: int) -> None:
        """The future of ``request_id`` was cancelled: drop the request and tell the peer."""
        with self._lock:
            entry = self.entries.pop(request_id, None)
        if entry is None:
            return
        timer.cancel(entry.timer)
        if entry.cancellable:
            self._send_cancelled(request_id, "cancelled by the client")

    def expire(self, request_id: int) -> None:
        """The request's deadline passed (on the timer thread): tell the peer, fail it."""
        with self._lock:
            entry = self.entries.pop(request_id, None)
        if entry is None:
            return
        if entry.cancellable:
            self._send_cancelled(request_id, "timed out")
        try:
            entry.future.set_exception(self.timed_out(entry))
        except InvalidStateError:
            pass

    def timed_out(self, entry: Pending) -> RequestTimeout:
        """The error of ``entry`` whose time ran out: its ``kind`` is "total" when the
        deadline passed, "idle" when a request that reports progress fell silent for longer
        than it may."""
        silent = (entry.idle is not None and entry.deadline is not None
                  and time.monotonic() < entry.deadline)
        if silent:
            error = entry.timeout_error(
                f"{entry.method} to {self.name} timed out: no progress for {entry.idle:g} s")
        else:
            error = entry.timeout_error(entry.timeout_message or (
                f"{entry.method} to {self.name} timed out after {entry.timeout:g} s"))
        error.kind = "idle" if silent else "total"
        return error

    def fail_all(self, error: BaseException) -> None:
        """End the session: every pending request fails with ``error`` (the first error
        given is :attr:`closed_error`), and none is added from now on."""
        with self._lock:
            if self.closed_error is None:
                self.closed_error = error
            pending, self.entries = self.entries, {}
        for entry in pending.values():
            timer.cancel(entry.timer)
            try:
                entry.future.set_exception(error)
            except InvalidStateError:
                pass

    def tell(self, error: BaseException | None) -> None:
        """Tell the owner's ``on_settle`` (a request's outcome, or the server's reach)."""
        if self._on_settle is not None:
            try:
                self._on_settle(error)
            except Exception:  # noqa: BLE001
                log.exception("%s: on_settle failed", self.name)


def _hashable(value: Any) -> bool:
    return type(value) is int or isinstance(value, (str, int, float, type(None)))
