"""The JSON-RPC session: ids, pending futures, deadlines and dispatch, for every transport.

A :class:`Session` sits between an MCP-speaking object (``McpServer``, a served ``ToolServer``)
and a transport that only moves messages. It owns:

- the pending map: request id -> ``concurrent.futures.Future``. The transport's reader thread
  resolves a future when the response arrives; when the transport closes, every pending future
  fails at once with the transport's error (a :class:`ConnectionClosed` carrying the stderr tail).
- a deadline per request on the process's one timer thread (:mod:`raider_sync.threads.timer`), which
  fails a request whose deadline passes, after sending ``notifications/cancelled`` for it, so
  even a future nobody waits on cannot hang.
- dispatch of what the peer sends on its own: notifications run one at a time in order,
  requests a few at once; neither ever runs on the reader thread. The progress callbacks of
  one request run in order, a few requests' at once, and the answer of a request with a
  progress callback is settled behind them: every step sent before the answer has been seen
  when the future is done. Requests are ordered apart, so a callback may wait for another
  request that has progress callbacks of its own.

These run on one pool of the session, in a lane each (its order and its bound kept): its
threads are named ``raider-<name>-session_<n>``, made as work comes, end after half a second
without work (an idle session has none) and are joined by :meth:`Session.close`.

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
import collections
import itertools
import logging
import threading
from concurrent.futures import Future, InvalidStateError
from typing import Any, Callable, Optional

from . import _moved
from .errors import (AnswerInBody, ConnectionClosed, LostInFlight, McpError, RaiderError,
                     RequestTimeout, SessionExpired, TransportError)
from .protocol.codes import INTERNAL_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND
from .protocol.messages import (error_in_body, error_of, error_reply, is_response,
                                request_problem, valid_id)
from .threads import timer
from .threads.futures import Deadline, wait_bounded
from .threads.renewal import Renewal
from .transports.base import RequestFailed, StreamHealth
from .threads.workers import Lane, Workers

log = logging.getLogger("raider_sync.jsonrpc")

#: threads sending the requests of request_f(inline=False), so many may be under way at once
SEND_WORKERS = 16
#: threads running progress callbacks: how deep callbacks may wait for requests with
#: progress callbacks of their own before the deepest waits for its timeout
PROGRESS_WORKERS = 4
#: seconds a renewal of the session may take when no request's deadline bounds it (one the
#: transport's GET stream asked for), and a message without a deadline waits for one
RENEW_TIMEOUT = 30.0

RequestHandler = Callable[[str, dict], Any]
NotificationHandler = Callable[[str, dict], None]
ProgressCallback = Callable[[float, Optional[float], Optional[str]], None]


class MethodNotFound(RaiderError):
    """Raised by a request handler for a method it does not serve (answered with -32601)."""


class _Pending:
    __slots__ = ("future", "method", "timeout", "timeout_message", "timeout_error",
                 "cancellable", "on_progress", "transform", "steps", "stepping", "timer",
                 "awaited")

    def __init__(self, future, method, timeout, timeout_message, timeout_error,
                 cancellable, on_progress, transform, awaited=False):
        self.future = future
        self.method = method
        self.timeout = timeout
        self.timeout_message = timeout_message
        self.timeout_error = timeout_error
        self.cancellable = cancellable
        self.on_progress = on_progress
        self.transform = transform
        self.steps: collections.deque = collections.deque()  # progress calls, then the answer
        self.stepping = False  # a progress worker is running the steps
        self.timer: timer.Handle | None = None  # the deadline, on the process's timer
        self.awaited = awaited  # a caller blocks on the future next


class RequestFuture(Future):
    """The future of one request sent by a :class:`Session`: ``request_id`` is its id, and
    a successful :meth:`cancel` drops the request and sends ``notifications/cancelled``."""

    def __init__(self, session: "Session", request_id: int):
        super().__init__()
        self.request_id = request_id
        self._session = session

    def cancel(self) -> bool:
        if not super().cancel():
            return False
        self._session._cancelled(self.request_id)
        return True


class Session:
    """One JSON-RPC conversation over one transport.

    ``handle_request(method, params)`` answers the peer's requests (return the result, raise
    :class:`McpError` or :class:`MethodNotFound`); ``handle_notification(method, params)`` takes
    its notifications; ``on_close(error)`` is told when the transport ends, and
    ``on_settle(error)`` of every request's outcome (None for an answer), each before any
    waiting caller wakes, so what they record is seen by the caller who got the error, and
    of what the transport tells of its server's reach (a :class:`StreamHealth`).
    ``observe(method, params, request_id)``, when set, is called for each request before it
    is sent (it may add to ``params``) and returns a callback for the request's future.
    ``repeatable(message)`` says whether a request whose connection broke after it went out
    (:class:`LostInFlight`) may be sent once more; by default none may.
    ``renew_session(deadline)``, when set, starts a new session in place of one the server
    forgot (the transport raised :class:`SessionExpired`), sending through this session
    (initialize) within the :class:`~raider_sync.threads.futures.Deadline` of the request
    that found it gone, or raises RaiderError; without it such a request
    fails with the SessionExpired.
    """

    observe: Optional[Callable[[str, dict, Any], Callable[[Future], None]]] = None
    repeatable: Callable[[dict], bool] = staticmethod(lambda message: False)
    renew_session: Optional[Callable[[Deadline], None]] = None

    def __init__(self, transport, *, name: str,
                 handle_request: RequestHandler | None = None,
                 handle_notification: NotificationHandler | None = None,
                 on_close: Callable[[BaseException], None] | None = None,
                 on_settle: Callable[[BaseException | None], None] | None = None,
                 request_workers: int = 4):
        self.transport = transport
        self.name = name
        self._handle_request = handle_request
        self._handle_notification = handle_notification
        self._on_close = on_close
        self._on_settle = on_settle
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._pending: dict[int, _Pending] = {}
        self._closed_error: BaseException | None = None
        self._local = threading.local()
        # one pool for the session, and a lane per kind of work: each lane keeps its order and
        # its bound, and as the pool can run every lane at its bound at once, no lane waits
        # for another's work; an idle thread serves whichever lane has work next
        self._pool = Workers(1 + PROGRESS_WORKERS + request_workers + 1 + SEND_WORKERS,
                             f"raider-{name}-session", self._mark_worker)
        # the peer's notifications, one at a time in arrival order
        self._notifier = Lane(self._pool, 1)
        # progress callbacks and the answers of requests that have them, in arrival order per
        # request, off the notifier: a notification handler may wait for such a request
        self._progress_pool = Lane(self._pool, PROGRESS_WORKERS)
        # the peer's requests (an elicitation may wait for a person)
        self._workers = Lane(self._pool, request_workers)
        # pings and cancellations, never stuck behind handlers that wait (an elicitation may
        # wait for a person) and never on the reader thread (a write could wait on a read)
        self._control = Lane(self._pool, 1)
        # the sends of request_f(inline=False): a *_f method returns before a slow write or
        # an HTTP exchange; up to SEND_WORKERS at once, never delaying a ping or a cancel
        self._senders = Lane(self._pool, SEND_WORKERS)
        #: ``stamp(method, params)``: the params every outgoing request is sent with (the
        #: stateless revision puts its ``_meta`` in each); None sends them as given
        self.stamp: Callable[[str, dict], dict] | None = None
        # renewals of the transport's session: one at a time, the others' sends wait for it
        self._renewal = Renewal(key=lambda expired: expired.session)

    # -- lifecycle -----------------------------------------------------------------------

    def open(self, timeout: float | None = None) -> None:
        """Start the transport (blocks until it is up or ``timeout`` s pass)."""
        self.transport.start(self.receive, self._transport_closed, timeout=timeout)

    @property
    def closed(self) -> bool:
        return self._closed_error is not None

    @property
    def closed_error(self) -> BaseException | None:
        """What ended the session (the transport's error, or the one given to close)."""
        return self._closed_error

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
        self._fail_all(error or ConnectionClosed(f"connection to {self.name} closed"))
        in_worker = getattr(self._local, "session", None) is self
        for lane in (self._notifier, self._progress_pool, self._workers, self._control,
                     self._senders):
            drop = not (finish_received and lane in (self._workers, self._control))
            lane.shutdown(cancel_futures=drop)
        self._pool.shutdown(wait=wait and not in_worker)

    # -- outgoing ------------------------------------------------------------------------

    def request_f(self, method: str, params: dict | None = None, *,
                  timeout: float | None = None, deadline: Deadline | None = None,
                  on_progress: ProgressCallback | None = None,
                  timeout_message: str | None = None,
                  timeout_error: type[RequestTimeout] = RequestTimeout,
                  cancellable: bool = True,
                  transform: Callable[[Any], Any] | None = None,
                  inline: bool = True, wait: bool = False) -> Future:
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
        """
        request_id = next(self._ids)
        future = RequestFuture(self, request_id)
        params = dict(params or {})
        if self.stamp is not None:
            params = self.stamp(method, params)
        if on_progress is not None:
            params["_meta"] = {**params.get("_meta", {}), "progressToken": request_id}
        if self.observe is not None:  # telemetry: a span, and its context in params._meta
            future.add_done_callback(self.observe(method, params, request_id))
        if deadline is None:
            if timeout is None or isinstance(timeout, Deadline):
                raise TypeError("request_f needs a timeout in seconds or a deadline=Deadline")
            deadline = Deadline(timeout)
        entry = _Pending(future, method, deadline.seconds, timeout_message, timeout_error,
                         cancellable, on_progress, transform, inline and wait)
        with self._lock:
            if self._closed_error is not None:
                future.set_exception(self._closed_error)
                return future
            self._pending[request_id] = entry
            # under the lock: an answer that comes at once finds the deadline to cancel
            entry.timer = timer.at(deadline, functools.partial(self._expire, request_id))
        message = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params:
            message["params"] = params
        if inline:
            self._send_request(request_id, entry, message, deadline, wait)
            return future
        try:
            self._senders.submit(self._send_request, request_id, entry, message, deadline)
        except RuntimeError:  # shut down: the session is closing
            self._settle(request_id, error=self._closed_error or ConnectionClosed(
                f"connection to {self.name} closed"))
        return future

    def _send_request(self, request_id: int, entry: _Pending, message: dict,
                      deadline: Deadline, wait: bool = False) -> None:
        send_awaited = getattr(self.transport, "send_awaited", None) if wait else None
        with self._lock:
            if request_id not in self._pending:
                return  # cancelled, timed out or failed before its turn to be sent
            # alone: no other caller blocks for an answer, and this one is not settled
            # behind progress steps (a request left open, such as a listen, does not count)
            alone = send_awaited is not None and entry.on_progress is None and not any(
                other.awaited for other in self._pending.values() if other is not entry)
        def send() -> None:
            if not self._await_session(deadline, renew=True):
                return  # the deadline passed first: the timer fails the request
            try:
                send_once()
            except SessionExpired as exc:
                if self._renewal.here:
                    raise  # a renewal's own request: the renewal fails with it
                if self._renew(exc, deadline) and request_id in self._pending:
                    send_once()  # else the deadline passed first: the timer fails it

        def send_once() -> None:
            if send_awaited is not None:
                send_awaited(message, deadline=deadline, answer=entry.future, alone=alone)
            else:
                self.transport.send(message, deadline=deadline)

        try:
            try:
                send()
            except LostInFlight as exc:
                if not self.repeatable(message) or request_id not in self._pending:
                    raise
                log.info("%s: %s was lost in flight (%s); sending it once more", self.name,
                         message.get("method"), exc)
                send()
        except AnswerInBody as exc:  # refused with a status: the body may be the answer
            error = error_in_body(exc.body)
            self._settle_in_order(request_id, {"error": error_of(error) if error is not None
                                               else exc})
        except RequestTimeout:  # the peer took nothing of it in time: the request's own timeout
            self._settle(request_id, error=entry.timeout_error(self._timeout_message(entry)))
        except (TypeError, ValueError) as exc:  # params JSON cannot carry: the caller's error
            self._settle(request_id, error=exc)
        except (KeyboardInterrupt, SystemExit):  # the caller's thread is interrupted mid-send
            entry.future.cancel()  # and so the peer is told (notifications/cancelled)
            raise
        except BaseException as exc:  # noqa: BLE001 - the future carries it
            self._settle(request_id, error=exc if isinstance(exc, RaiderError)
                         else ConnectionClosed(f"could not send to {self.name}: {exc}"))

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

    def run_in_order(self, fn: Callable[..., None], *args: Any) -> None:
        """Run ``fn(*args)`` in the notifications' lane, after the notifications received so
        far; never on the caller's thread. Dropped once the session is closing."""
        self._submit(self._notifier, fn, *args)

    # -- incoming ------------------------------------------------------------------------

    def receive(self, message: Any) -> None:
        """Take one message from the transport (called on the transport's reader thread)."""
        if isinstance(message, list):
            for item in message:
                self.receive(item)
            return
        if isinstance(message, RequestFailed):  # the transport could not complete one request
            self._settle_in_order(message.request_id, {"error": message.error})
            return
        if isinstance(message, StreamHealth):  # no request's outcome: the server's reach
            if isinstance(message.error, SessionExpired):  # a stream found its session gone
                self._submit(self._senders, self._renew_for_stream, message.error)
            else:
                self._tell_settled(message.error)
            return
        if not isinstance(message, dict):
            log.warning("%s: ignored a message that is not an object", self.name)
            return
        if is_response(message):
            self._receive_response(message)
            return
        problem = request_problem(message)
        if problem is not None:
            self._refuse(message, problem)
            return
        method = message["method"]
        if "id" in message:
            lane = self._control if method == "ping" else self._workers
            self._submit(lane, self._answer, message)
        elif method == "notifications/progress":
            self._route_progress(message.get("params") or {})
        elif self._handle_notification is not None:
            self._submit(self._notifier, self._handle_notification, method,
                         message.get("params") or {})

    def _receive_response(self, message: dict) -> None:
        request_id = message.get("id")
        if "error" in message:
            outcome: dict = {"error": error_of(message["error"])}
        else:
            outcome = {"result": message["result"]}
        self._settle_in_order(request_id, outcome)

    def _refuse(self, message: dict, problem: str) -> None:
        """Answer an invalid request with -32600 (off the reader thread, whose write could
        wait on a read); an invalid notification has nobody to answer."""
        if "id" not in message:
            log.warning("%s: ignored an invalid notification: %s", self.name, problem)
            return
        request_id = message["id"] if valid_id(message["id"]) else None
        self._submit(self._control, self._send_reply,
                     error_reply(request_id, INVALID_REQUEST, f"Invalid Request: {problem}"),
                     str(message.get("method")))

    def _settle_in_order(self, request_id: Any, outcome: dict) -> None:
        with self._lock:
            entry = self._pending.get(request_id) if _hashable(request_id) else None
        if entry is not None and entry.on_progress is not None:
            # behind the progress callbacks already queued: a caller sees every step that
            # the server sent before its answer by the time the future is done
            self._step(entry, functools.partial(self._settle, request_id, **outcome))
        else:
            self._settle(request_id, **outcome)

    def current_request_id(self) -> Any:
        """The id of the peer's request the calling handler thread is answering, else None."""
        return getattr(self._local, "request_id", None)

    def _answer(self, message: dict) -> None:
        request_id = message["id"]
        method = message["method"]
        self._local.request_id = request_id
        try:
            if self._handle_request is None:
                raise MethodNotFound(method)
            reply = {"jsonrpc": "2.0", "id": request_id,
                     "result": self._handle_request(method, message.get("params") or {})}
        except MethodNotFound:
            reply = error_reply(request_id, METHOD_NOT_FOUND, f"Method not found: {method}")
        except McpError as exc:
            reply = error_reply(request_id, exc.code, exc.message, exc.data)
        except Exception as exc:  # noqa: BLE001 - a handler's failure is the peer's answer
            log.exception("%s: handler for %s failed", self.name, method)
            reply = error_reply(request_id, INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")
        self._send_reply(reply, method)

    def _send_reply(self, reply: dict, method: str) -> None:
        try:
            self._send_message(reply)
        except (TypeError, ValueError) as exc:  # JSON cannot carry it: the peer must not wait
            log.warning("%s: the answer to %s cannot be sent as JSON: %s", self.name, method, exc)
            if "result" in reply:
                self._send_reply(error_reply(reply["id"], INTERNAL_ERROR,
                                              f"the answer cannot be sent as JSON: {exc}"), method)
        except Exception as exc:  # noqa: BLE001
            log.debug("%s: answer to %s not sent: %s", self.name, method, exc)

    def _route_progress(self, params: dict) -> None:
        """Find the request a progress notification belongs to now, on the reader thread
        (its answer may be next in the stream), and queue its callback in arrival order."""
        token = params.get("progressToken")
        with self._lock:
            entry = self._pending.get(token) if _hashable(token) else None  # type: ignore[arg-type]
        if entry is not None and entry.on_progress is not None:
            self._step(entry, functools.partial(self._progress, entry.on_progress, params))

    def _step(self, entry: _Pending, step: Callable[[], None]) -> None:
        """Run ``step`` on a progress worker after the steps of ``entry`` queued before it."""
        with self._lock:
            entry.steps.append(step)
            if entry.stepping:
                return
            entry.stepping = True
        self._submit(self._progress_pool, self._run_steps, entry)

    def _run_steps(self, entry: _Pending) -> None:
        while True:
            with self._lock:
                if not entry.steps:
                    entry.stepping = False
                    return
                step = entry.steps.popleft()
            step()

    def _progress(self, on_progress: ProgressCallback, params: dict) -> None:
        try:
            on_progress(params.get("progress", 0), params.get("total"), params.get("message"))
        except Exception:  # noqa: BLE001 - a user's callback must not stop dispatch
            log.exception("%s: progress callback failed", self.name)

    # -- settling ------------------------------------------------------------------------

    def _settle(self, request_id: Any, *, result: Any = None,
                error: BaseException | None = None) -> None:
        with self._lock:
            entry = self._pending.pop(request_id, None) if _hashable(request_id) else None
        if entry is None:
            return  # late answer to a cancelled or timed-out request: ignored
        timer.cancel(entry.timer)
        if error is None and entry.transform is not None:
            try:
                result = entry.transform(result)
            except Exception as exc:  # noqa: BLE001 - the future carries it
                error = exc
        self._tell_settled(error)
        try:
            if error is not None:
                entry.future.set_exception(error)
            else:
                entry.future.set_result(result)
        except InvalidStateError:
            pass

    def _cancelled(self, request_id: int) -> None:
        """The future of ``request_id`` was cancelled: drop the request and tell the peer."""
        with self._lock:
            entry = self._pending.pop(request_id, None)
        if entry is None:
            return
        timer.cancel(entry.timer)
        if entry.cancellable:
            self._send_cancelled(request_id, "cancelled by the client")

    def _send_cancelled(self, request_id: int, reason: str) -> None:
        self._submit(self._control, self._cancel_at_peer, request_id, reason)

    def _cancel_at_peer(self, request_id: int, reason: str) -> None:
        """The transport lets go of the request's answer; the peer is told it is cancelled."""
        abandon = getattr(self.transport, "abandon", None)
        if abandon is not None:
            try:
                abandon(request_id)
            except Exception:  # noqa: BLE001 - the cancellation still goes out
                log.exception("%s: abandoning request %s failed", self.name, request_id)
        self.notify("notifications/cancelled", {"requestId": request_id, "reason": reason})

    def _fail_all(self, error: BaseException) -> None:
        with self._lock:
            if self._closed_error is None:
                self._closed_error = error
            pending, self._pending = self._pending, {}
        for entry in pending.values():
            timer.cancel(entry.timer)
            try:
                entry.future.set_exception(error)
            except InvalidStateError:
                pass

    def _tell_settled(self, error: BaseException | None) -> None:
        if self._on_settle is not None:
            try:
                self._on_settle(error)
            except Exception:  # noqa: BLE001
                log.exception("%s: on_settle failed", self.name)

    def _transport_closed(self, error: BaseException) -> None:
        # the owner hears first, so a caller woken by the failure finds it already known
        if self._on_close is not None:
            try:
                self._on_close(error)
            except Exception:  # noqa: BLE001
                log.exception("%s: on_close failed", self.name)
        self._fail_all(error)

    # -- session renewal -----------------------------------------------------------------

    def _send_message(self, message: dict) -> None:
        """Send a message that awaits no answer (a notification, an answer to the peer),
        after a renewal of the session under way; once more in a new session when the
        server forgot the one it went in. Raises what the transport raises."""
        self._await_session(None)
        try:
            self.transport.send(message)
        except SessionExpired as exc:
            if self._renewal.here or not self._renew(exc, Deadline(RENEW_TIMEOUT)):
                raise
            self.transport.send(message)

    def _await_session(self, deadline: Deadline | None, renew: bool = False) -> bool:
        """Wait while another thread renews the session (at most until ``deadline``, else
        RENEW_TIMEOUT s); with ``renew``, renew it first when the last renewal failed. False
        when the deadline passed first. Raises what :meth:`_renew` raises."""
        end = Deadline(RENEW_TIMEOUT) if deadline is None else deadline
        if not self._renewal.wait(end):
            return False
        failed = self._renewal.failed if renew and not self._renewal.here else None
        return failed is None or self._renew(failed, end)

    def _renew(self, expired: SessionExpired, deadline: Deadline) -> bool:
        """Have the owner start a new session in place of the one ``expired`` names, once
        however many requests found it gone: the first renews (``renew_session``, on its
        thread, within ``deadline``), the others wait for it. True when a new session is
        there; False when ``deadline`` passed while waiting. Raises ``expired`` without a
        ``renew_session``, TransportError when the renewal failed."""
        hook = self.renew_session
        if hook is None:
            raise expired

        def renew() -> None:
            log.info("%s: the server forgot the session; starting a new one", self.name)
            drop = getattr(self.transport, "drop_session", None)
            if drop is not None:
                drop(expired.session)
            try:
                hook(deadline)
            except RaiderError as exc:
                # the status is the renewal's when it has one: a server out of reach says so
                status = (exc.status_code if isinstance(exc, TransportError)
                          else expired.status_code)
                raise TransportError(f"{expired}, and a new session could not be started: "
                                     f"{exc}", status, expired.body) from exc
        return self._renewal.run(expired, renew, deadline)

    def _renew_for_stream(self, expired: SessionExpired) -> None:
        """A stream of the transport (HTTP's GET stream) found its session gone: renew it
        (on a sender thread). A failure is told as that stream's health."""
        try:
            self._renew(expired, Deadline(RENEW_TIMEOUT))
        except RaiderError as exc:
            log.warning("%s: %s", self.name, exc)
            self._tell_settled(exc)

    # -- deadlines -----------------------------------------------------------------------

    def _expire(self, request_id: int) -> None:
        """The request's deadline passed (on the timer thread): tell the peer, fail it."""
        with self._lock:
            entry = self._pending.pop(request_id, None)
        if entry is None:
            return
        if entry.cancellable:
            self._send_cancelled(request_id, "timed out")
        try:
            entry.future.set_exception(entry.timeout_error(self._timeout_message(entry)))
        except InvalidStateError:
            pass

    def _timeout_message(self, entry: _Pending) -> str:
        return entry.timeout_message or (
            f"{entry.method} to {self.name} timed out after {_seconds(entry.timeout)} s")

    # -- plumbing ------------------------------------------------------------------------

    def _mark_worker(self) -> None:
        self._local.session = self

    def _submit(self, pool: Lane, fn, *args) -> None:
        try:
            pool.submit(fn, *args)
        except RuntimeError:  # shut down: the session is closing
            log.debug("%s: dropped %s while closing", self.name, getattr(fn, "__name__", fn))


def _hashable(value: Any) -> bool:
    return isinstance(value, (str, int, float, type(None)))


def _seconds(value: float) -> str:
    return f"{value:g}"


def __getattr__(name: str):
    # the error codes moved to raider_sync.protocol.codes; the ones not used here are
    # still handed on under this module's name
    return _moved.moved_name(__name__, name)
