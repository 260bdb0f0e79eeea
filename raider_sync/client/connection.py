"""The connection of one server: its transport, its session and its era, and its status.

:class:`Connection` starts, restarts and stops them, keeps ``status`` truthful (a crash reads
``failed`` before any caller hears of it, an HTTP server out of reach reads ``degraded``), and
gives a caller one thing: :meth:`Connection.when_up_f` sends on a ready session and era, after
a start under way, or fails with NotConnected. That is the one status check of a request.

It reaches its :class:`~raider_sync.McpServer` only through :class:`Hooks`.
"""
from __future__ import annotations

import functools
import threading
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Callable

from ..errors import (
    ConnectionClosed,
    ConsentRequired,
    McpError,
    NotConnected,
    RequestTimeout,
    TransportError,
    last_stderr_line,
)
from ..jsonrpc import Session
from ..threads.futures import Deadline, Deadlines, failed, resolved
from .eras.era_seam import Era, EraHost, open_era
from .lifecycle import (
    UP,
    InFlight,
    Restarts,
    failure_reason,
    repeatable,
    unreachable,
    when_started,
)

#: ``send(session, era, deadline, inline)``: a request sent on a ready connection
Send = Callable[[Session, Era, Deadline, bool], Future]


@dataclass
class Hooks:
    """What a connection asks of its server."""

    open_transport: Callable[[], Any]             # the transport of the spec, not started
    handle_request: Callable[[str, dict], Any]    # a server's request to the client
    handle_notification: Callable[[str, dict], None]
    opened: Callable[[Session, Era, Deadline], None]   # learn what the era said, list tools
    forget: Callable[[], None]                    # drop what an older connection learnt
    status_changed: Callable[[], None]            # on_status
    renewed: Callable[[Session, Era], None]       # a new session: lists, subscriptions again
    stopped: Callable[[], None]                   # the server's own parts end
    observer: Any = None                          # telemetry's request observer


class Connection:
    """Start, restart, status and stop of one server's connection. Thread-safe."""

    def __init__(self, *, name: str, key: str, log: Any, hooks: Hooks, host: EraHost,
                 startup_timeout_ms: float, kill_grace: float, restarts: Restarts):
        self.name, self.key, self.log = name, key, log
        self.hooks = hooks
        self.host = host
        self.startup_timeout_ms = startup_timeout_ms
        self.kill_grace = kill_grace
        self.restarts = restarts
        self.lock = threading.RLock()
        self.status = "configured"
        self.reason: str | None = None
        self.transport: Any = None
        self.session: Session | None = None
        self.era: Era | None = None
        self._transport_claimed = False  # one thread, and only one, closes the transport
        self._start_future: Future | None = None
        self._start_thread: threading.Thread | None = None
        self._generation = 0  # one per start: what an older connection says is ignored
        self._start_waits: Deadlines | None = None
        self.in_flight = InFlight()  # what a draining stop waits for

    # -- what it has ---------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        transport = self.transport
        return getattr(transport, "pid", None) if self.status in ("starting", *UP) else None

    @property
    def stderr_tail(self) -> list[str]:
        transport = self.transport
        return transport.stderr_tail if transport is not None else []

    def startup_timeout_message(self) -> str:
        return f"startup timed out after {self.startup_timeout_ms / 1000:g} s (MCP_TIMEOUT)"

    # -- start and restart ---------------------------------------------------------------

    def start_f(self, owner: Any) -> Future:
        """Connect in the background; a future of ``owner`` once connected or failed (see
        :meth:`raider_sync.McpServer.start_f`)."""
        with self.lock:
            if self.status == "stopped":
                if self._start_future is None:
                    self._start_future = resolved(owner)
                return self._start_future
            if self._start_future is None or (self.status == "failed"
                                              and self._start_future.done()):
                return self._begin_start(owner)
            return self._start_future

    def restart_f(self, owner: Any, reopen: Callable[[], None]) -> Future:
        """Close (if open) and start anew, in any status; ``reopen()`` runs first when the
        server was stopped (its own parts start again)."""
        with self.lock:
            if self.status == "starting" and self._start_future is not None:
                return self._start_future
            self.restarts.reset()
            if self.status == "stopped":
                self._status_changed_to("configured", None)
                reopen()
                self.in_flight.reopen()
            future = self._begin_start(owner)
        self.log.info("%s: restarting", self.name)
        return future

    def _begin_start(self, owner: Any) -> Future:
        """A new start on its own thread, after the previous one (the lock is held)."""
        self._generation += 1
        future: Future = Future()
        self._start_future = future
        self._status_changed_to("starting", None)  # calls from now on wait for it
        thread = threading.Thread(target=self._start,
                                  args=(owner, self._generation, future, self._start_thread),
                                  name=f"raider-{self.key}-start", daemon=True)
        thread.start()
        self._start_thread = thread  # started before anyone may join it
        return future

    def maybe_restart(self, owner: Any) -> str:
        """Restart a failed server when its policy says a restart is due; else why not."""
        with self.lock:
            if self.status != "failed":
                return ""
            due, why = self.restarts.due()
            if not due:
                return why
            which = self.restarts.begun()
            reason = self.reason
            self._begin_start(owner)
        self.log.warning("%s: %s after: %s", self.name, which, reason)
        return ""

    def _start(self, owner: Any, generation: int, future: Future,
               previous: threading.Thread | None) -> None:
        timeout = self.startup_timeout_ms / 1000
        hooks = self.hooks
        try:
            # a restart: the old connection ends (its calls fail) and its start is over first
            self._close(ConnectionClosed(f"MCP server {self.name!r} is restarting"), grace=True)
            if previous is not None and previous is not threading.current_thread():
                previous.join(timeout + 2 * self.kill_grace + 5)
            with self.lock:
                self._check_current(generation)
                self.transport, self.session, self.era = None, None, None
                self._transport_claimed = False
                hooks.forget()
            hooks.status_changed()
            transport = hooks.open_transport()
            session = Session(transport, name=self.key, handle_request=hooks.handle_request,
                              handle_notification=hooks.handle_notification,
                              on_close=functools.partial(self._lost, generation),
                              on_settle=functools.partial(self._settled, generation))
            session.observe = hooks.observer
            session.repeatable = repeatable
            with self.lock:
                self._check_current(generation)
                self.transport, self.session = transport, session
            session.renew_session = self._renew  # HTTP: servers may forget sessions
            deadline = Deadline(timeout)
            session.open(timeout=deadline.left())
            era = open_era(session, self.host, deadline, self.startup_timeout_message())
            with self.lock:
                self._check_current(generation)
                self.era = era
            hooks.opened(session, era, deadline)
            with self.lock:  # one step with _lost: a lost connection fails the start
                lost = session.closed_error
                connected = (lost is None and self.status == "starting"
                             and generation == self._generation)
                if connected:
                    self._status_changed_to("connected", None)
                    self.restarts.connected()
            if lost is not None:
                raise lost
            if connected:
                era.connected()
                hooks.status_changed()
        except BaseException as exc:  # noqa: BLE001 - start_f never fails
            if self.status != "stopped" and generation == self._generation:
                reason = self.describe_failure(exc)
                self._close(ConnectionClosed(reason, self.stderr_tail), grace=True)
                with self.lock:
                    self.restarts.crashed()
                if isinstance(exc, ConsentRequired):
                    self.set_status("needs-auth", reason)
                elif self.status != "failed":  # the reader may have said so already
                    self.set_status("failed", reason)
        finally:
            future.set_result(owner)

    def _check_current(self, generation: int) -> None:
        """Raise when a stop or a newer start came meanwhile (the lock is held)."""
        if generation != self._generation or self.status != "starting":
            raise NotConnected("stopped while starting")

    def _renew(self, deadline: Deadline) -> None:
        """A new session in place of one the server forgot (HTTP 404); called by the session
        (once, however many requests found it gone) on the thread of one of them. The lists
        are fetched again."""
        session, era = self.session, self.era
        if session is None or era is None or self.status not in UP:
            raise self.not_connected()
        era.renew(deadline, f"starting a new session timed out after {deadline.left():.3g} s")
        self.hooks.renewed(session, era)

    def describe_failure(self, exc: BaseException) -> str:
        """Why a start failed, in a sentence (see :func:`.lifecycle.failure_reason`)."""
        transport = self.transport
        return failure_reason(exc, self.stderr_tail,
                              transport.diagnosis if transport is not None else None)

    # -- requests ------------------------------------------------------------------------

    def back_in(self) -> float | None:
        """Seconds until a request can be sent again: 0 when connected or starting, the wait
        for a restart the policy allows when failed, None when it will not be (stopped, or
        failed for good)."""
        with self.lock:
            if self.status in UP or self.status == "starting":
                return 0.0
            if self.status != "failed":
                return None
            return self.restarts.due_in()

    def when_up_f(self, owner: Any, deadline: Deadline, send: Send, inline: bool,
                  timeout_error: type[RequestTimeout] = RequestTimeout,
                  what: str = "the request") -> Future:
        """``send(session, era, deadline, inline)`` now when connected; after the start when
        starting, within the same ``deadline`` (a due restart of a failed server begins
        first); else a future failed with NotConnected. The request is counted until it
        settles (a draining stop waits for it)."""
        if self.status in UP:  # the usual case, read unlocked: a stop meanwhile fails the send
            return self._counted(send, deadline, inline)
        return self._when_not_up_f(owner, deadline, send, inline, timeout_error, what)

    def _when_not_up_f(self, owner: Any, deadline: Deadline, send: Send, inline: bool,
                       timeout_error: type[RequestTimeout], what: str) -> Future:
        why = self.maybe_restart(owner) if self.status == "failed" else ""
        with self.lock:
            status, start = self.status, self._start_future
            waits = self._waits() if status == "starting" else None
        if status in UP:
            return self._counted(send, deadline, inline)
        if status != "starting" or start is None or waits is None:
            return failed(self.not_connected(why))

        def after_start() -> Future:
            return self._counted(send, deadline, False)

        return when_started(start, deadline, after_start, waits, lambda: timeout_error(
            f"{what} timed out after {deadline.seconds:g} s: MCP server {self.name!r} was "
            f"still starting"))

    def _counted(self, send: Send, deadline: Deadline, inline: bool) -> Future:
        # the status was checked by the caller; a connection lost since has no session
        session, era = self.session, self.era
        if session is None or era is None:
            return failed(self.not_connected())
        refused = self.in_flight.enter()
        if refused is not None:
            return failed(NotConnected(f"MCP server {self.name!r} is not connected "
                                       f"(stopping: {refused})"))
        try:
            future = send(session, era, deadline, inline)
        except BaseException:
            self.in_flight.leave()
            raise
        future.add_done_callback(self.in_flight.leave)
        return future

    def _waits(self) -> Deadlines:
        """The timer of calls waiting for a start (the lock is held)."""
        if self._start_waits is None:
            self._start_waits = Deadlines(f"{self.key}-start-waits")
        return self._start_waits

    def not_connected(self, note: str = "") -> NotConnected:
        why = f": {self.reason}" if self.reason else ""
        note = f"; {note}" if note else ""
        return NotConnected(f"MCP server {self.name!r} is not connected "
                            f"({self.status}{why}{note})")

    # -- status --------------------------------------------------------------------------

    def _lost(self, generation: int, error: BaseException) -> None:
        """The transport ended on its own (told before any caller wakes with the error)."""
        with self.lock:
            # while starting, the start thread fails on it itself (its request fails, or it
            # finds session.closed_error), so "failed" is said once
            if generation != self._generation or self.status not in (*UP, "failed"):
                return
            changed = self._crashed(str(error))
        if changed:  # before the callers hear of it: a call they make next may restart it
            self.hooks.status_changed()
        self._close(error, grace=False)

    def _settled(self, generation: int, error: BaseException | None) -> None:
        """Every request's outcome, before its caller wakes: the status follows it."""
        if generation != self._generation:
            return
        if error is None:  # the usual outcome: an answer
            if self.status == "degraded":
                self.set_status("connected", None, only_from="degraded")  # checked, locked
            return
        if isinstance(error, ConnectionClosed):  # a write found the server gone
            with self.lock:
                changed = generation == self._generation and self._crashed(str(error))
            if changed:
                self.hooks.status_changed()
        elif isinstance(error, TransportError) and unreachable(error):
            self.degraded(str(error))
        elif isinstance(error, McpError) and self.status == "degraded":
            self.set_status("connected", None, only_from="degraded")  # checked again, locked

    def _crashed(self, reason: str) -> bool:
        """Mark a connected server failed (the lock is held); True when it was connected."""
        if self.status not in UP:
            return False
        self._status_changed_to("failed", reason)
        self.restarts.crashed()
        self.log.warning("%s: the connection was lost: %s", self.name, reason)
        return True

    def degraded(self, reason: str) -> None:
        with self.lock:
            if self.status != "connected":
                return
            self._status_changed_to("degraded", reason)
        self.log.warning("%s: degraded: %s", self.name, reason)
        self.hooks.status_changed()

    def set_status(self, status: str, reason: str | None = None,
                   only_from: str | None = None) -> None:
        with self.lock:
            if only_from is not None and self.status != only_from:
                return
            if self.status == "stopped":
                return
            self._status_changed_to(status, reason)
        self.hooks.status_changed()

    def _status_changed_to(self, status: str, reason: str | None) -> None:
        self.status = status
        if reason is not None or status in ("starting", "connected"):
            self.reason = reason

    # -- stop ----------------------------------------------------------------------------

    def drain(self, why: str, seconds: float) -> bool:
        """Refuse new requests, saying ``why``; block until those sent are settled, at most
        ``seconds``. True when none is left."""
        return self.in_flight.close(why, seconds)

    def shutdown(self, grace: bool, reason: str | None = None) -> None:
        """Stop: pending calls fail at once, the transport is closed (``grace``) or killed;
        the start under way is joined; status stopped. Safe to repeat."""
        why = reason or "stopped by the client"
        with self.lock:
            already = self.status == "stopped"
            plain = self.status != "failed"
            if not already:
                self._generation += 1  # what the old connection still says is ignored
                self._status_changed_to("stopped", self.reason if not plain else why)
            start_thread = self._start_thread
        if not already:
            self.hooks.status_changed()
        lost = f" before it answered: {reason}" if reason else ""
        self._close(ConnectionClosed(f"MCP server {self.name!r} was stopped{lost}"), grace=grace)
        last = last_stderr_line(self.stderr_tail)
        if not already and plain and last:
            with self.lock:
                if self.status == "stopped":
                    self.reason = f"{why} (last stderr line: {last})"
        if start_thread is not None and start_thread is not threading.current_thread():
            start_thread.join(self.startup_timeout_ms / 1000 + 2 * self.kill_grace + 5)
        with self.lock:
            waits, self._start_waits = self._start_waits, None
        if waits is not None:
            waits.close()
        self.hooks.stopped()

    def _close(self, error: BaseException, *, grace: bool) -> None:
        with self.lock:
            session, transport = self.session, self.transport
            self.session = None
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
