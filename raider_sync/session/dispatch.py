"""What the peer of a JSON-RPC session sends, taken from the transport's reader thread.

An answer settles its pending request (:mod:`.pending`). What the peer sends on its own is
dispatched: notifications run one at a time in order, requests a few at once; neither ever
runs on the reader thread. The progress callbacks of one request run in order, a few
requests' at once, and the answer of a request with a progress callback is settled behind
them: every step sent before the answer has been seen when the future is done. Requests are
ordered apart, so a callback may wait for another request that has progress callbacks of its
own. A request the peer sends is answered with what its handler returns, or with the JSON-RPC
error of what it raises; an invalid one with -32600. Nothing here blocks the reader thread
beyond a lock, and nothing is raised to it.
"""
from __future__ import annotations

import collections
import functools
import logging
import threading
from typing import Any, Callable, Optional

from ..errors import McpError, RaiderError, SessionExpired
from ..protocol.codes import INTERNAL_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND
from ..protocol.messages import error_of, error_reply, is_response, request_problem, valid_id
from ..transports.base import RequestFailed, StreamHealth
from .lanes import Lanes
from .pending import Pending, PendingRequests

log = logging.getLogger("raider_sync.jsonrpc")

RequestHandler = Callable[[str, dict], Any]
NotificationHandler = Callable[[str, dict], None]
ProgressCallback = Callable[[float, Optional[float], Optional[str]], None]


class MethodNotFound(RaiderError):
    """Raised by a request handler for a method it does not serve (answered with -32601)."""


class Dispatcher:
    """The incoming side of the session ``name``: answers settle ``pending``; the peer's
    requests go to ``handle_request(method, params)`` and its notifications to
    ``handle_notification(method, params)``, on ``lanes``; replies go out through
    ``send(message)`` (which may raise what the transport raises). A stream that found its
    session gone is handed to ``renew_for_stream(expired)`` on a sender thread."""

    def __init__(self, name: str, pending: PendingRequests, lanes: Lanes, *,
                 send: Callable[[dict], None],
                 renew_for_stream: Callable[[SessionExpired], None],
                 handle_request: RequestHandler | None = None,
                 handle_notification: NotificationHandler | None = None):
        self.name = name
        self._pending = pending
        self._lanes = lanes
        self._send = send
        self._renew_for_stream = renew_for_stream
        self._handle_request = handle_request
        self._handle_notification = handle_notification
        self._local = threading.local()
        self._steps_lock = threading.Lock()  # guards each entry's steps and stepping

    def receive(self, message: Any) -> None:
        """Take one message from the transport (called on the transport's reader thread)."""
        if type(message) is dict and "method" not in message:  # the usual message first
            if "result" in message:  # an answer: its request settles
                self.settle_in_order(message.get("id"), {"result": message["result"]})
                return
            if "error" in message:
                self._receive_response(message)
                return
        if isinstance(message, list):
            for item in message:
                self.receive(item)
            return
        if isinstance(message, RequestFailed):  # the transport could not complete one request
            self.settle_in_order(message.request_id, {"error": message.error})
            return
        if isinstance(message, StreamHealth):  # no request's outcome: the server's reach
            if isinstance(message.error, SessionExpired):  # a stream found its session gone
                self._lanes.submit(self._lanes.senders, self._renew_for_stream, message.error)
            else:
                self._pending.tell(message.error)
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
            lane = self._lanes.control if method == "ping" else self._lanes.requests
            self._lanes.submit(lane, self._answer, message)
        elif method == "notifications/progress":
            self._route_progress(message.get("params") or {})
        elif self._handle_notification is not None:
            self._lanes.submit(self._lanes.notifier, self._handle_notification, method,
                               message.get("params") or {})

    def run_in_order(self, fn: Callable[..., None], *args: Any) -> None:
        """Run ``fn(*args)`` in the notifications' lane, after the notifications received so
        far; never on the caller's thread. Dropped once the session is closing."""
        self._lanes.submit(self._lanes.notifier, fn, *args)

    def current_request_id(self) -> Any:
        """The id of the peer's request the calling handler thread is answering, else None."""
        return getattr(self._local, "request_id", None)

    # -- answers -------------------------------------------------------------------------

    def _receive_response(self, message: dict) -> None:
        request_id = message.get("id")
        if "error" in message:
            outcome: dict = {"error": error_of(message["error"])}
        else:
            outcome = {"result": message["result"]}
        self.settle_in_order(request_id, outcome)

    def settle_in_order(self, request_id: Any, outcome: dict) -> None:
        """Settle ``request_id`` with ``outcome`` (``result=`` or ``error=``), behind the
        progress callbacks of it queued so far."""
        entry = self._pending.take_unless_stepped(request_id)
        if entry is None:
            return  # late answer to a cancelled or timed-out request: ignored
        if entry.on_progress is not None:
            # behind the progress callbacks already queued: a caller sees every step that
            # the server sent before its answer by the time the future is done
            self._step(entry, functools.partial(self._pending.settle, request_id, **outcome))
        else:
            self._pending.settle_taken(entry, **outcome)

    # -- the peer's requests -------------------------------------------------------------

    def _refuse(self, message: dict, problem: str) -> None:
        """Answer an invalid request with -32600 (off the reader thread, whose write could
        wait on a read); an invalid notification has nobody to answer."""
        if "id" not in message:
            log.warning("%s: ignored an invalid notification: %s", self.name, problem)
            return
        request_id = message["id"] if valid_id(message["id"]) else None
        self._lanes.submit(self._lanes.control, self._send_reply,
                           error_reply(request_id, INVALID_REQUEST, f"Invalid Request: {problem}"),
                           str(message.get("method")))

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
            self._send(reply)
        except (TypeError, ValueError) as exc:  # JSON cannot carry it: the peer must not wait
            log.warning("%s: the answer to %s cannot be sent as JSON: %s", self.name, method, exc)
            if "result" in reply:
                self._send_reply(error_reply(reply["id"], INTERNAL_ERROR,
                                              f"the answer cannot be sent as JSON: {exc}"), method)
        except Exception as exc:  # noqa: BLE001
            log.debug("%s: answer to %s not sent: %s", self.name, method, exc)

    # -- progress ------------------------------------------------------------------------

    def _route_progress(self, params: dict) -> None:
        """Find the request a progress notification belongs to now, on the reader thread
        (its answer may be next in the stream), and queue its callback in arrival order."""
        token = params.get("progressToken")
        entry = self._pending.get(token)
        if entry is not None and entry.idle is not None:
            self._pending.progressed(token)  # the request's span of silence begins anew
        if entry is not None and entry.on_progress is not None:
            self._step(entry, functools.partial(self._progress, entry.on_progress, params))

    def _step(self, entry: Pending, step: Callable[[], None]) -> None:
        """Run ``step`` on a progress worker after the steps of ``entry`` queued before it."""
        with self._steps_lock:
            if entry.steps is None:
                entry.steps = collections.deque()
            entry.steps.append(step)
            if entry.stepping:
                return
            entry.stepping = True
        self._lanes.submit(self._lanes.progress, self._run_steps, entry)

    def _run_steps(self, entry: Pending) -> None:
        while True:
            with self._steps_lock:
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
