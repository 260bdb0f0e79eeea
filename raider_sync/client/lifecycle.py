"""A server's life: start, restart, status and stop, and calls that wait for a start.

- :class:`Lifecycle` is the part of :class:`~raider_sync.McpServer` that starts, restarts and
  stops the connection and keeps ``status`` truthful: a crash reads ``failed`` before any
  caller hears of it, an HTTP server out of reach reads ``degraded``.
- :class:`Restarts` keeps the count of a :class:`~raider_sync.config.RestartPolicy`: crashes,
  restarts in a row, and when the next one may come.
- :class:`InFlight` counts the requests sent and not yet settled, so that a stop may drain
  them: once it closes, a request is refused before anything is sent.
- :func:`when_started` makes a call wait for a start under way, bounded by the call's own
  timeout, without a thread of its own.
"""
from __future__ import annotations

import functools
import threading
import time
import weakref
from concurrent.futures import Future
from typing import Any, Callable

from .calls import poll_seconds, seconds
from ..config import RestartPolicy
from ..errors import (ConnectionClosed, ConsentRequired, McpError, NotConnected, TransportError,
                     last_stderr_line)
from ..threads.futures import Deadline, Deadlines, resolved, run_in_thread, settle
from ..jsonrpc import Session
from ..protocol import REPEATABLE_METHODS
from ..transports.statuses import Status, classify_error

#: the statuses in which calls are sent
UP = ("connected", "degraded")
#: servers not stopped yet, killed at exit if the program forgot them
live: "weakref.WeakSet[Any]" = weakref.WeakSet()

#: a connection that lasted this long (or the policy's longest backoff, if longer) ends a
#: run of restarts: the next crash counts as the first again
STABLE_AFTER_S = 60.0



def repeatable(message: dict) -> bool:
    """Whether a request lost in flight may be sent once more: its method is a read, the
    handshake or a setting (:data:`REPEATABLE_METHODS`), never a tools/call."""
    return message.get("method") in REPEATABLE_METHODS

class Lifecycle:
    """Start, restart, status and stop of :class:`~raider_sync.McpServer` (a part of it:
    the attributes are made by its ``__init__``)."""

    # -- start and restart ---------------------------------------------------------------

    def start_f(self) -> Future:
        """Connect in the background; a later call returns the same future, unless the start
        failed: then it starts anew (a stopped server is not started again: see
        :meth:`restart`).

        The future never fails: it resolves to this server, whose ``status`` is then
        connected or failed (with ``reason``). Transport, initialize, initialized and the
        tool list all happen within ``startup_timeout_ms``.
        """
        with self._lock:
            if self._status == "stopped":
                if self._start_future is None:
                    self._start_future = resolved(self)
                return self._start_future
            if self._start_future is None or (self._status == "failed"
                                              and self._start_future.done()):
                return self._begin_start()
            return self._start_future

    def initialize(self, timeout: float | None = None) -> Any:
        """Blocking :meth:`start_f`: returns this server once connected or failed (a failed
        server is started anew). A KeyboardInterrupt stops the server and propagates."""
        bound = seconds(timeout, self.startup_timeout_ms / 1000 + 2 * self.kill_grace + 5,
                        method="McpServer.initialize")
        try:
            return self.start_f().result(bound)
        except KeyboardInterrupt:
            self.stop()
            raise

    def restart_f(self) -> Future:
        """Close the connection (if any) and start anew, in the background, in any status,
        stopped included; a future of this server once connected or failed (it never fails).
        Calls made meanwhile wait for the start. A start already under way is not begun
        again: its future is returned."""
        with self._lock:
            if self._status == "starting" and self._start_future is not None:
                return self._start_future
            self._restarts.reset()
            if self._status == "stopped":
                self._status_changed_to("configured", None)
                self._background = self._new_background()
                self._in_flight.reopen()
                live.add(self)
            future = self._begin_start()
        self.log.info("%s: restarting", self.name)
        return future

    def restart(self, timeout: float | None = None) -> Any:
        """Blocking :meth:`restart_f`; ``timeout`` as for :meth:`initialize`."""
        bound = seconds(timeout, self.startup_timeout_ms / 1000 + 4 * self.kill_grace + 5,
                        method="McpServer.restart")
        return self.restart_f().result(bound)

    def _begin_start(self) -> Future:
        """A new start on its own thread, after the previous one (the lock is held)."""
        self._generation += 1
        self._start_future = future = Future()
        self._status_changed_to("starting", None)  # calls from now on wait for it
        thread = threading.Thread(target=self._start,
                                  args=(self._generation, future, self._start_thread),
                                  name=f"raider-{self.key}-start", daemon=True)
        thread.start()
        self._start_thread = thread  # started before anyone may join it
        return future

    def _maybe_restart(self) -> str:
        """Restart a failed server when its policy says a restart is due; else why not."""
        with self._lock:
            if self._status != "failed":
                return ""
            due, why = self._restarts.due()
            if not due:
                return why
            which = self._restarts.begun()
            reason = self._reason
            self._begin_start()
        self.log.warning("%s: %s after: %s", self.name, which, reason)
        return ""

    def _start(self, generation: int, future: Future,
               previous: threading.Thread | None) -> None:
        timeout = self.startup_timeout_ms / 1000
        try:
            # a restart: the old connection ends (its calls fail) and its start is over first
            self._close_connection(ConnectionClosed(f"MCP server {self.name!r} is restarting"),
                                   grace=True)
            if previous is not None and previous is not threading.current_thread():
                previous.join(timeout + 2 * self.kill_grace + 5)
            with self._lock:
                if generation != self._generation or self._status != "starting":
                    raise NotConnected("stopped while starting")
                self._forget_connection()
            self._notify_status()
            transport = self._open_transport()
            session = Session(transport, name=self.key, handle_request=self._handle_request,
                              handle_notification=self._handle_notification,
                              on_close=functools.partial(self._connection_lost, generation),
                              on_settle=functools.partial(self._settled, generation))
            session.observe = self._observer
            session.repeatable = repeatable
            with self._lock:
                if generation != self._generation or self._status != "starting":
                    raise NotConnected("stopped while starting")
                self._transport, self._session = transport, session
            session.renew_session = self._renew_session  # HTTP: servers may forget sessions
            deadline = Deadline(timeout)
            session.open(timeout=deadline.left())
            self._era.open(session, deadline)
            if "tools" in self.capabilities:  # a server without tools is not asked for them
                self._fetch_tools(deadline.left(), self._startup_timeout_message())
            with self._lock:  # one step with _connection_lost: a lost connection fails the start
                lost = session.closed_error
                connected = (lost is None and self._status == "starting"
                             and generation == self._generation)
                if connected:
                    self._status_changed_to("connected", None)
                    self._restarts.connected()
            if lost is not None:
                raise lost
            if connected:
                self._era.connected()
                self._notify_status()
        except BaseException as exc:  # noqa: BLE001 - start_f never fails
            if self._status != "stopped" and generation == self._generation:
                reason = self._describe_failure(exc)
                self._close_connection(ConnectionClosed(reason, self.stderr_tail), grace=True)
                with self._lock:
                    self._restarts.crashed()
                if isinstance(exc, ConsentRequired):
                    self._set_status("needs-auth", reason)
                elif self._status != "failed":  # the reader may have said so already
                    self._set_status("failed", reason)
        finally:
            future.set_result(self)

    def _forget_connection(self) -> None:
        """What a previous connection learnt is dropped before a new one (the lock is held)."""
        self._transport, self._session, self._transport_claimed = None, None, False
        self._tools, self._original, self._lists = [], {}, {}
        self._output_schemas = {}
        self.protocol_version, self.instructions = None, None
        self.server_info, self.capabilities = {}, {}
        if not self._tools_future.done():
            self._tools_future.set_result(None)

    # -- status --------------------------------------------------------------------------

    def _connection_lost(self, generation: int, error: BaseException) -> None:
        """The transport ended on its own (told before any caller wakes with the error)."""
        with self._lock:
            # while starting, the start thread fails on it itself (its request fails, or it
            # finds session.closed_error), so "failed" is said once
            if generation != self._generation or self._status not in (*UP, "failed"):
                return
            changed = self._crashed(str(error))
        if changed:  # before the callers hear of it: a call they make next may restart it
            self._notify_status()
        self._close_connection(error, grace=False)

    def _settled(self, generation: int, error: BaseException | None) -> None:
        """Every request's outcome, before its caller wakes: the status follows it."""
        if generation != self._generation:
            return
        if isinstance(error, ConnectionClosed):  # a write found the server gone
            with self._lock:
                changed = generation == self._generation and self._crashed(str(error))
            if changed:
                self._notify_status()
        elif isinstance(error, TransportError) and _unreachable(error):
            self._degraded(str(error))
        elif (error is None or isinstance(error, McpError)) and self._status == "degraded":
            self._set_status("connected", None, only_from="degraded")  # checked again, locked

    def _crashed(self, reason: str) -> bool:
        """Mark a connected server failed (the lock is held); True when it was connected."""
        if self._status not in UP:
            return False
        self._status_changed_to("failed", reason)
        self._restarts.crashed()
        self.log.warning("%s: the connection was lost: %s", self.name, reason)
        return True

    def _degraded(self, reason: str) -> None:
        with self._lock:
            if self._status != "connected":
                return
            self._status_changed_to("degraded", reason)
        self.log.warning("%s: degraded: %s", self.name, reason)
        self._notify_status()

    # -- stop ----------------------------------------------------------------------------

    def stop(self, *, drain: float = 0.0, reason: str | None = None) -> None:
        """Stop the server: pending calls fail at once; a stdio process gets its stdin closed,
        then SIGTERM, then SIGKILL, ``kill_grace`` s apart. Status stopped. Safe to repeat.

        ``drain`` (s) first gives the calls already sent that long to be answered (blocking
        until they are, at most that long); calls made meanwhile fail with NotConnected and
        nothing of them is sent. ``reason`` (default "stopped by the client") becomes the
        stopped server's ``reason`` and is said by the ConnectionClosed of a call still
        unanswered. Raises InvalidArgument for a negative ``drain``."""
        drain = poll_seconds(drain, "drain", "McpServer.stop") or 0.0  # 0: no drain
        if drain:
            self._in_flight.close(reason or "stopped by the client", drain)
        self._shutdown(grace=True, reason=reason)

    def stop_f(self) -> Future:
        """:meth:`stop` in the background; a future of None."""
        return run_in_thread(self.stop, f"raider-{self.key}-stop")

    def kill_now(self) -> None:
        """Kill a stdio process at once (SIGKILL to its group); status stopped."""
        self._shutdown(grace=False)

    def _shutdown(self, grace: bool, reason: str | None = None) -> None:
        why = reason or "stopped by the client"
        with self._lock:
            already = self._status == "stopped"
            plain = self._status != "failed"
            if not already:
                self._generation += 1  # what the old connection still says is ignored
                self._status_changed_to("stopped", self._reason if not plain else why)
            start_thread = self._start_thread
        if not already:
            self._notify_status()
        lost = f" before it answered: {reason}" if reason else ""
        self._close_connection(ConnectionClosed(f"MCP server {self.name!r} was stopped{lost}"),
                               grace=grace)
        last = last_stderr_line(self.stderr_tail)
        if not already and plain and last:
            with self._lock:
                if self._status == "stopped":
                    self._reason = f"{why} (last stderr line: {last})"
        if start_thread is not None and start_thread is not threading.current_thread():
            start_thread.join(self.startup_timeout_ms / 1000 + 2 * self.kill_grace + 5)
        with self._lock:
            waits, self._start_waits = self._start_waits, None
        if waits is not None:
            waits.close()
        in_background = threading.current_thread().name.startswith(f"raider-{self.key}-relist")
        self._background.shutdown(wait=not in_background, cancel_futures=True)
        self._era.close()
        with self._lock:
            if not self._tools_future.done():
                self._tools_future.set_result(None)
        live.discard(self)

    def _close_connection(self, error: BaseException, *, grace: bool) -> None:
        with self._lock:
            session, transport = self._session, self._transport
            self._session = None
            if self._transport_claimed:
                transport = None  # another thread is closing it: waiting here could deadlock
            elif transport is not None:
                self._transport_claimed = True
        if session is not None:  # pending calls fail now, not after the grace periods
            session.close(error, wait=False)
        if transport is not None:
            transport.close() if grace else transport.kill_now()
        if session is not None:  # joined once the transport can no longer block a handler
            session.close(error)

    def _set_status(self, status: str, reason: str | None = None,
                    only_from: str | None = None) -> None:
        with self._lock:
            if only_from is not None and self._status != only_from:
                return
            if self._status == "stopped":
                return
            self._status_changed_to(status, reason)
        self._notify_status()

    def _status_changed_to(self, status: str, reason: str | None) -> None:
        self._status = status
        if reason is not None or status in ("starting", "connected"):
            self._reason = reason

    def _notify_status(self) -> None:
        if self.on_status is not None:
            try:
                self.on_status(self)
            except Exception:  # noqa: BLE001
                self.log.exception("on_status failed")

    def _not_connected(self, note: str = "") -> NotConnected:
        why = f": {self._reason}" if self._reason else ""
        note = f"; {note}" if note else ""
        return NotConnected(f"MCP server {self.name!r} is not connected "
                            f"({self._status}{why}{note})")




def _unreachable(error: TransportError) -> bool:
    """An HTTP failure that says nothing reached the server (or its gateway gave up on it);
    not one whose deadline passed (the request's own timeout tells of that)."""
    return classify_error(error) is Status.UNREACHABLE


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
        self._cond = threading.Condition(threading.Lock())
        self._count = 0
        self._closed: str | None = None

    def enter(self) -> str | None:
        """Count one request about to be sent; once closed, why not (nothing counted)."""
        with self._cond:
            if self._closed is not None:
                return self._closed
            self._count += 1
            return None

    def leave(self, _: Any = None) -> None:
        """A counted request settled (a future's done callback)."""
        with self._cond:
            self._count -= 1
            if not self._count:
                self._cond.notify_all()

    def close(self, why: str, timeout: float) -> bool:
        """Refuse requests from now on, saying ``why``; block until none counted is left, at
        most ``timeout`` s. True when none is."""
        with self._cond:
            self._closed = why
            return self._cond.wait_for(lambda: not self._count, timeout)

    def reopen(self) -> None:
        with self._cond:
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

    def begun(self) -> str:
        """Count a restart; a description of it for the log."""
        self.count += 1
        return f"restart {self.count} of {self.policy.max_restarts if self.policy else 0}"


def when_started(start: Future, seconds: float, proceed: Callable[[float], Future],
                 timer: Deadlines, make_timeout: Callable[[], BaseException]) -> Future:
    """A future of ``proceed(seconds_left)``'s outcome, called once ``start`` is done.

    ``proceed`` runs on the thread that settles ``start`` (or at once if it is settled) and
    must not block. The future fails with ``make_timeout()`` when ``seconds`` pass first;
    cancelling it cancels what ``proceed`` returned.
    """
    deadline = Deadline(seconds)
    outer: Future = Future()

    def started(_: Future) -> None:
        if outer.done():
            return
        try:
            inner = proceed(deadline.left())
        except BaseException as exc:  # noqa: BLE001 - the future carries it
            settle(outer, error=exc)
            return
        forward(inner, outer)

    timer.watch(outer, seconds, make_timeout)
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
