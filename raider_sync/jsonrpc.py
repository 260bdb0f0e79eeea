"""The JSON-RPC session: ids, pending futures, deadlines and dispatch, for every transport.

A :class:`Session` sits between an MCP-speaking object (``McpServer``, a served ``ToolServer``)
and a transport that only moves messages. It is a face over parts it owns (in
:mod:`raider_sync.session`), each with one job:

- the pending requests (:mod:`~raider_sync.session.pending`): request id -> future. The
  transport's reader thread resolves a future when the response arrives; when the transport
  closes, every pending future fails at once with the transport's error (a
  :class:`ConnectionClosed` carrying the stderr tail). Each request has a deadline on the
  process's one timer thread (:mod:`raider_sync.threads.timer`), which fails a request whose
  deadline passes, after sending ``notifications/cancelled`` for it, so even a future nobody
  waits on cannot hang.
- dispatch of what the peer sends (:mod:`~raider_sync.session.dispatch`): notifications run one
  at a time in order, requests a few at once; neither ever runs on the reader thread. The
  progress callbacks of one request run in order, a few requests' at once, and the answer of
  a request with a progress callback is settled behind them: every step sent before the
  answer has been seen when the future is done. Requests are ordered apart, so a callback may
  wait for another request that has progress callbacks of its own.
- renewal of a session the server forgot (:mod:`~raider_sync.session.renewing`).

These run on one pool of the session, in a lane each (its order and its bound kept:
:mod:`~raider_sync.session.lanes`): its threads are named ``raider-<name>-session_<n>``, made
as work comes, end after half a second without work (an idle session has none) and are joined
by :meth:`Session.close`. Sending a request is the face's own.

What the transport raises or reports is decided here, never below: a cancelled request is
abandoned at the transport (:meth:`~raider_sync.transports.base.Transport.abandon`) as its
``notifications/cancelled`` goes out; a :class:`~raider_sync.errors.SessionExpired` has the
owner start a new session (``renew_session``), once however many requests found the old one
gone, while every other send waits for it, and then the request is sent once more; an
:class:`~raider_sync.errors.AnswerInBody` fails its request with the JSON-RPC error its body
carries.
"""
from __future__ import annotations

import functools
import itertools
import logging
from concurrent.futures import Future
from typing import Any, Callable, Optional

from . import _moved
from .errors import AnswerInBody, ConnectionClosed, LostInFlight, RaiderError, RequestTimeout, SessionExpired
from .protocol.codes import INTERNAL_ERROR, METHOD_NOT_FOUND  # noqa: F401 - importable from here as before
from .protocol.messages import error_in_body, error_of
from .session.dispatch import (  # noqa: F401 - importable from here as before
    Dispatcher,
    MethodNotFound,
    NotificationHandler,
    ProgressCallback,
    RequestHandler,
)
from .session.lanes import PROGRESS_WORKERS, SEND_WORKERS, Lanes  # noqa: F401 - importable from here as before
from .session.pending import Pending, PendingRequests, RequestFuture
from .session.renewing import RENEW_TIMEOUT, SessionRenewal
from .threads.futures import Deadline, wait_bounded

log = logging.getLogger("raider_sync.jsonrpc")


class Session:
    """One JSON-RPC conversation over one transport.

    ``handle_request(method, params)`` answers the peer's requests (return the result, raise
    :class:`McpError` or :class:`MethodNotFound`); ``handle_notification(method, params)`` takes
    its notifications; ``on_close(error)`` is told when the transport ends, and
    ``on_settle(error)`` of every request's outcome (None for an answer), each before any
    waiting caller wakes, so what they record is seen by the caller who got the error, and
    of what the transport tells of its server's reach (a :class:`StreamHealth`).
    ``observe(method, params, request_id)``, when set, is called for each request before it
    is sent (it may add to ``params``) and returns a callback for the request's future, or
    None when it needs none.
    ``repeatable(message)`` says whether a request whose connection broke after it went out
    (:class:`LostInFlight`) may be sent once more; by default none may.
    ``renew_session(deadline)``, when set, starts a new session in place of one the server
    forgot (the transport raised :class:`SessionExpired`), sending through this session
    (initialize) within the :class:`~raider_sync.threads.futures.Deadline` of the request
    that found it gone, or raises RaiderError; without it such a request
    fails with the SessionExpired.
    """

    observe: Optional[Callable[[str, dict, Any], Optional[Callable[[Future], None]]]] = None
    repeatable: Callable[[dict], bool] = staticmethod(lambda message: False)

    def __init__(self, transport, *, name: str,
                 handle_request: RequestHandler | None = None,
                 handle_notification: NotificationHandler | None = None,
                 on_close: Callable[[BaseException], None] | None = None,
                 on_settle: Callable[[BaseException | None], None] | None = None,
                 request_workers: int = 4):
        self.transport = transport
        self.name = name
        self._on_close = on_close
        self._ids = itertools.count(1)
        self._lanes = Lanes(name, request_workers)
        self._requests = PendingRequests(name, send_cancelled=self._send_cancelled,
                                         on_settle=on_settle)
        self._renewing = SessionRenewal(name, transport, self._requests.tell)
        self._dispatch = Dispatcher(name, self._requests, self._lanes, send=self._send_message,
                                    renew_for_stream=self._renewing.for_stream,
                                    handle_request=handle_request,
                                    handle_notification=handle_notification)
        #: ``stamp(method, params)``: the params every outgoing request is sent with (the
        #: stateless revision puts its ``_meta`` in each); None sends them as given
        self.stamp: Callable[[str, dict], dict] | None = None

    @property
    def renew_session(self) -> Callable[[Deadline], None] | None:
        """``renew_session(deadline)``: see the class; None by default."""
        return self._renewing.hook

    @renew_session.setter
    def renew_session(self, hook: Callable[[Deadline], None] | None) -> None:
        self._renewing.hook = hook

    @property
    def _pending(self) -> dict[int, Pending]:
        """The requests awaiting their answer, by id (a look: the table is the parts')."""
        return self._requests.entries

    # -- lifecycle -----------------------------------------------------------------------

    def open(self, timeout: float | None = None) -> None:
        """Start the transport (blocks until it is up or ``timeout`` s pass)."""
        # the transport's reader delivers to the dispatcher itself: no hop through the face
        self.transport.start(self._dispatch.receive, self._transport_closed, timeout=timeout)

    @property
    def closed(self) -> bool:
        return self._requests.closed_error is not None

    @property
    def closed_error(self) -> BaseException | None:
        """What ended the session (the transport's error, or the one given to close)."""
        return self._requests.closed_error

    def close(self, error: BaseException | None = None, *, wait: bool = True,
              finish_received: bool = False) -> None:
        """Fail every pending request with ``error`` and join the session's threads.

        With ``finish_received``, the peer's requests already received but not yet taken up
        by a handler thread still run and are answered (a served session whose input ended
        answers what it was sent); else they are dropped.

        The transport is not closed here: its owner closes it (it knows the grace periods).
        With ``wait=False`` the threads are told to end but not joined: an owner fails the
        pending requests at once, closes the transport (which ends any write a handler thread
        is blocked in), then calls ``close()`` again to join. Safe to call twice and from a
        handler thread.
        """
        self._requests.fail_all(error or ConnectionClosed(f"connection to {self.name} closed"))
        self._lanes.shutdown(wait=wait, finish_received=finish_received)

    def _transport_closed(self, error: BaseException) -> None:
        # the owner hears first, so a caller woken by the failure finds it already known
        if self._on_close is not None:
            try:
                self._on_close(error)
            except Exception:  # noqa: BLE001
                log.exception("%s: on_close failed", self.name)
        self._requests.fail_all(error)

    # -- outgoing ------------------------------------------------------------------------

    def request_f(self, method: str, params: dict | None = None, *,
                  timeout: float | None = None, deadline: Deadline | None = None,
                  on_progress: ProgressCallback | None = None,
                  timeout_message: str | None = None,
                  timeout_error: type[RequestTimeout] = RequestTimeout,
                  cancellable: bool = True,
                  transform: Callable[[Any], Any] | None = None,
                  inline: bool = True, wait: bool = False,
                  idle: float | None = None) -> Future:
        """Send a request; return a Future of its result. Never blocks on the answer; with
        ``inline`` (the default) the send happens on the caller's thread (a full pipe or an
        HTTP exchange blocks it, at most until the deadline), else on a sender thread and
        the method returns at once. ``wait`` (with ``inline``) says the caller blocks on the
        future next: the transport may then read the answer on this thread too
        (:meth:`~raider_sync.transports.base.Transport.send_awaited`).

        ``transform(result)``, when given, shapes the result before the future holds it (an
        exception it raises is the future's). The future fails with ``timeout_error`` once
        ``deadline`` passes (or ``timeout`` seconds, for a caller that has no deadline yet;
        one of them is required), after a ``notifications/cancelled`` unless ``cancellable``
        is false; with :class:`McpError` for an error answer, and with the transport's error
        when the connection ends. Cancelling the future sends ``notifications/cancelled`` too.
        ``idle`` (with ``on_progress``): the seconds of silence allowed between progress
        notifications; each one sets that span anew, and ``deadline`` stays the cap (the
        error's ``kind`` says which passed).
        """
        request_id = next(self._ids)
        future = RequestFuture(self._requests, request_id)
        params = dict(params or {})
        if self.stamp is not None:
            params = self.stamp(method, params)
        if on_progress is not None:
            params["_meta"] = {**params.get("_meta", {}), "progressToken": request_id}
        if self.observe is not None:  # telemetry: a span, and its context in params._meta
            finish = self.observe(method, params, request_id)
            if finish is not None:
                future.add_done_callback(finish)
        if deadline is None:
            if timeout is None or isinstance(timeout, Deadline):
                raise TypeError("request_f needs a timeout in seconds or a deadline=Deadline")
            deadline = Deadline(timeout)
        entry = Pending(future, method, deadline.seconds, timeout_message, timeout_error,
                        cancellable, on_progress, transform, inline and wait,
                        idle if on_progress is not None else None)
        # sent on this thread and settled behind no progress step, its answer may come
        # during the send (a stdio or HTTP answer read on this thread): its deadline goes
        # on the timer only if it is still pending after the send, which the transport
        # bounds by the deadline
        watch = not inline or on_progress is not None
        if not self._requests.add(request_id, entry, deadline, watch):
            return future  # the session has ended: the future holds what ended it
        message = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params:
            message["params"] = params
        if inline:
            try:
                self._send_request(request_id, entry, message, deadline, wait)
            finally:  # an interrupt cancelled it: then it is no longer pending
                if not watch and request_id in self._requests.entries:
                    self._requests.watch(request_id)
            return future
        try:
            self._lanes.senders.post(self._send_request, request_id, entry, message, deadline)
        except RuntimeError:  # shut down: the session is closing
            self._requests.settle(request_id, error=self._requests.closed_error or
                                  ConnectionClosed(f"connection to {self.name} closed"))
        return future

    def _send_request(self, request_id: int, entry: Pending, message: dict,
                      deadline: Deadline, wait: bool = False) -> None:
        send_awaited = getattr(self.transport, "send_awaited", None) if wait else None
        # alone: no other caller blocks for an answer, and this one is not settled
        # behind progress steps (a request left open, such as a listen, does not count)
        alone = self._requests.check_out(request_id, entry, send_awaited is not None
                                         and entry.on_progress is None)
        if alone is None:
            return  # cancelled, timed out or failed before its turn to be sent
        if send_awaited is None:
            send = self.transport.send
        elif entry.idle is None:
            send = functools.partial(send_awaited, answer=entry.future, alone=alone)
        else:  # its silence is bounded: a reader on this thread need not outlast it
            send = functools.partial(send_awaited, answer=entry.future, alone=alone,
                                     idle=entry.idle)
        try:
            try:
                self._send_renewing(request_id, message, deadline, send)
            except LostInFlight as exc:
                if not self.repeatable(message) or not self._requests.waiting(request_id):
                    raise
                log.info("%s: %s was lost in flight (%s); sending it once more", self.name,
                         message.get("method"), exc)
                self._send_renewing(request_id, message, deadline, send)
        except AnswerInBody as exc:  # refused with a status: the body may be the answer
            error = error_in_body(exc.body)
            self._dispatch.settle_in_order(request_id, {"error": error_of(error)
                                                        if error is not None else exc})
        except RequestTimeout:  # the peer took nothing of it in time: the request's own timeout
            self._requests.settle(request_id, error=self._requests.timed_out(entry))
        except (TypeError, ValueError) as exc:  # params JSON cannot carry: the caller's error
            self._requests.settle(request_id, error=exc)
        except (KeyboardInterrupt, SystemExit):  # the caller's thread is interrupted mid-send
            entry.future.cancel()  # and so the peer is told (notifications/cancelled)
            raise
        except BaseException as exc:  # noqa: BLE001 - the future carries it
            self._requests.settle(request_id, error=exc if isinstance(exc, RaiderError)
                                  else ConnectionClosed(f"could not send to {self.name}: {exc}"))

    def _send_renewing(self, request_id: int, message: dict, deadline: Deadline,
                       send: Callable[..., None]) -> None:
        """``send(message, deadline=deadline)`` after a renewal under way; once more in a new
        session when the server forgot the one it went in (unless the deadline passed)."""
        renewing = self._renewing
        if not renewing.settled and not renewing.wait(deadline, renew=True):
            return  # the deadline passed first: the timer fails the request
        try:
            send(message, deadline=deadline)
        except SessionExpired as exc:
            if renewing.here:
                raise  # a renewal's own request: the renewal fails with it
            if renewing.renew(exc, deadline) and self._requests.waiting(request_id):
                send(message, deadline=deadline)  # else the deadline passed: the timer fails it

    def request(self, method: str, params: dict | None = None, *,
                timeout: float | None = None, deadline: Deadline | None = None, **kw) -> Any:
        """Blocking :meth:`request_f`: the result, or the exception the future holds. The
        wait is bounded (the deadline plus a margin) even should the timer not fail it."""
        kw.setdefault("wait", kw.get("inline", True))
        future = self.request_f(method, params, timeout=timeout, deadline=deadline, **kw)
        return wait_bounded(future, deadline.left() if deadline is not None else timeout or 0.0)

    def notify(self, method: str, params: dict | None = None) -> None:
        """Send a notification. Errors of a closed transport are logged, not raised."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        try:
            self._send_message(message)
        except Exception as exc:  # noqa: BLE001 - a notification has nobody to tell
            log.debug("%s: notification %s not sent: %s", self.name, method, exc)

    def _send_message(self, message: dict) -> None:
        """Send a message that awaits no answer (a notification, an answer to the peer),
        after a renewal of the session under way; once more in a new session when the
        server forgot the one it went in. Raises what the transport raises."""
        self._renewing.wait(None)
        try:
            self.transport.send(message)
        except SessionExpired as exc:
            if self._renewing.here or not self._renewing.renew(exc, Deadline(RENEW_TIMEOUT)):
                raise
            self.transport.send(message)

    def _send_cancelled(self, request_id: int, reason: str) -> None:
        self._lanes.submit(self._lanes.control, self._cancel_at_peer, request_id, reason)

    def _cancel_at_peer(self, request_id: int, reason: str) -> None:
        """The transport lets go of the request's answer; the peer is told it is cancelled."""
        abandon = getattr(self.transport, "abandon", None)
        if abandon is not None:
            try:
                abandon(request_id)
            except Exception:  # noqa: BLE001 - the cancellation still goes out
                log.exception("%s: abandoning request %s failed", self.name, request_id)
        self.notify("notifications/cancelled", {"requestId": request_id, "reason": reason})

    # -- incoming ------------------------------------------------------------------------

    def receive(self, message: Any) -> None:
        """Take one message from the transport (called on the transport's reader thread)."""
        self._dispatch.receive(message)

    def run_in_order(self, fn: Callable[..., None], *args: Any) -> None:
        """Run ``fn(*args)`` in the notifications' lane, after the notifications received so
        far; never on the caller's thread. Dropped once the session is closing."""
        self._dispatch.run_in_order(fn, *args)

    def current_request_id(self) -> Any:
        """The id of the peer's request the calling handler thread is answering, else None."""
        return self._dispatch.current_request_id()


def __getattr__(name: str):
    # the names that moved out (the error codes to raider_sync.protocol.codes, the wire
    # rules to raider_sync.protocol.messages, ...) are still handed on under this module's name
    return _moved.moved_name(__name__, name)
