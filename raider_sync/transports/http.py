"""The Streamable HTTP transport (MCP 2025-03-26 and later): one endpoint, one POST per message.

Threads, named after the server:

- the caller's thread POSTs (one ``requests.Session``, pooled keep-alive connections). A JSON
  answer is delivered on it, so a blocking call costs no thread hand-off.
- an event-stream answer is read by a worker of the pool ``raider-<name>-stream`` (up to
  ``stream_workers``, each ending after half a second without work), or, when
  the caller waits for it anyway (:meth:`send_awaited`, the blocking calls), on the caller's
  thread: every message on it (server requests and notifications too) is delivered as it
  comes; priming events are skipped. A stream that ends before the answer is resumed with a
  GET carrying ``Last-Event-ID``, after the server's ``retry:`` delay. What follows the
  answer on its stream is read for a moment so the connection can be reused: on the caller's
  thread only the stream's end (see :meth:`_pump`), anything else by a worker.
- ``raider-<name>-listen``: the GET stream for server-initiated messages, opened by
  :meth:`negotiated` right after initialize (before ``notifications/initialized``, so nothing
  the server announces then is lost); 405 means the server has none; a dropped stream is reopened
  with ``Last-Event-ID``. A reopening that fails is delivered as a
  :class:`~raider_sync.transports.base.StreamHealth` carrying its TransportError (the owner
  learns the server is out of reach without waiting for a call), and the next stream that
  opens as a StreamHealth of None.

Sessions: the ``Mcp-Session-Id`` of the first answer that carries one is sent on every later
request, ``MCP-Protocol-Version`` once :meth:`negotiated` is told the revision. A request refused
with 404 (or with a 400 whose body is about the session, as older TypeScript servers answer)
while carrying a session id means the server forgot the session
(:func:`~raider_sync.transports.statuses.classify` says so): :meth:`send` raises
:class:`~raider_sync.errors.SessionExpired`, and whoever sends decides what follows. The
JSON-RPC session calls :meth:`drop_session` (the next request goes without a session, and
the first answer carrying an id starts the new one), has a new session started, then sends
the request once more. The GET stream that finds its session gone delivers a
:class:`~raider_sync.transports.base.StreamHealth` carrying the SessionExpired, and opens
again once :meth:`negotiated` tells of a new session. The transport knows no MCP method; it
tells a request (it expects an answer with the same id) from a notification or an answer
(202, no body) by the rules of :mod:`raider_sync.protocol.messages`.

Failures: an HTTP error status, an unreachable server or a body that is not JSON raise
:class:`TransportError` from :meth:`send`, and the session fails that request with it. A failure
found later, while a worker reads an event stream, is delivered as a
:class:`~raider_sync.transports.base.RequestFailed` carrying the same kind of TransportError,
which fails that request only. In the stateless revision (:meth:`stateless`) an error status
to a request raises :class:`~raider_sync.errors.AnswerInBody`, since that revision puts the
request's JSON-RPC error in the body; :meth:`abandon` shuts the stream a request's answer
comes on, which is how that revision cancels, and notifications are not sent at all.
"""
from __future__ import annotations

import logging
import socket
import threading
import time
from concurrent.futures import Future
from typing import Any, Callable, Mapping

import requests

from ..errors import AnswerInBody, ConnectionClosed, SessionExpired, TransportError
from ..protocol.messages import (DEFAULT_MAX_MESSAGE_SIZE, answers, decode_message,
                                 encode_message, is_notification, request_id_of)
from ..protocol.sse_events import SseParser
from ..threads.workers import Workers
from ..threads.futures import Deadline
from .base import Closed, Deliver, RequestFailed, StreamHealth, Transport, deliver_json, deliver_parsed
from .http_common import JSON_TYPE, SSE_TYPE, HttpChannel, _socket_of, excerpt, media_type
from .statuses import DeadlinePassed, Status, classify

log = logging.getLogger("raider_sync.transports.http")

#: seconds an idle GET stream is kept before it is reopened
LISTEN_READ_TIMEOUT = 300.0
#: seconds negotiated() waits for the GET stream's first answer
LISTEN_READY_TIMEOUT = 5.0
#: reconnect delay (s) when the server gave no retry:, and the cap of the backoff
RECONNECT_DELAY = 1.0
MAX_RECONNECT_DELAY = 30.0
#: seconds the GET stream waits for a new session after finding its own gone
RENEW_TIMEOUT = 30.0
#: seconds the DELETE of stop() may take
DELETE_TIMEOUT = 5.0
#: seconds to read what follows an answer on its stream (so the connection can be reused)
DRAIN_SECONDS = 0.25
#: answered streams in a row whose end did not follow before the caller's thread stops
#: waiting for ends (it waits again once an end is found already there)
END_MISSES = 3
MAX_RESUMES = 50
_ACCEPT_BOTH = "application/json, text/event-stream"


class StreamableHttpTransport(Transport):
    """An MCP server behind one Streamable HTTP endpoint ``url``.

    ``headers`` are sent on every request, with those printed by ``headers_helper`` (run with
    ``env`` at :meth:`start` and again once after a 401/403) and ``auth``'s (OAuth).
    """

    def __init__(self, url: str, *, name: str, headers: Mapping[str, str] | None = None,
                 headers_helper: str | None = None, env: Mapping[str, str] | None = None,
                 stream_workers: int = 64, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
                 auth=None):
        self.url = url
        self.name = name
        self.channel = HttpChannel(url, name=name, headers=headers,
                                   headers_helper=headers_helper, env=env,
                                   max_message_size=max_message_size, auth=auth)
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self._expired: str | None = None  # the session the server forgot, until a new one
        self._session_lock = threading.Lock()
        self._message_headers: Callable[[dict], dict] | None = None  # set: stateless era
        self._answer_streams: dict[Any, requests.Response] = {}  # request id -> its stream
        self._get_stream: requests.Response | None = None
        self._end_misses = 0  # answered streams in a row whose end did not come at once
        self._deliver: Deliver | None = None
        self._closing = False
        self._closed = False
        self._close_lock = threading.Lock()
        self._local = threading.local()
        # the transport's own: it knows nothing of the session above it, and its close joins
        # these readers before the session's threads are joined
        self._readers = Workers(stream_workers, f"raider-{name}-stream",
                                initializer=self._mark_reader)
        self._listener: threading.Thread | None = None
        self._listening = threading.Event()
        self._stopped = threading.Event()        # set once, by close
        self._wake_listener = threading.Event()  # set by negotiated and close

    # -- Transport -----------------------------------------------------------------------

    def start(self, deliver: Deliver, closed: Closed, *, timeout: float | None = None) -> None:
        """Run headers_helper if configured (blocks up to ``timeout`` s). No request is sent
        yet. Raises TransportError when the helper fails. ``closed`` is never called: an HTTP
        server that goes away fails requests, and may come back."""
        self._deliver = deliver
        self.channel.open(timeout)

    def negotiated(self, protocol_version: str, timeout: float | None = None) -> None:
        """Told the revision initialize settled on: send it as MCP-Protocol-Version from now
        on, and open the GET stream (blocks until the server answered the GET, at most
        ``timeout`` s or 5)."""
        self.protocol_version = protocol_version
        if self._closing:
            return
        if self._listener is None:
            self._listener = threading.Thread(target=self._listen, daemon=True,
                                              name=f"raider-{self.name}-listen")
            self._listener.start()
        else:
            self._wake_listener.set()  # a new session: reconnect now rather than after a delay
        bound = LISTEN_READY_TIMEOUT if timeout is None else min(timeout, LISTEN_READY_TIMEOUT)
        self._listening.wait(bound)

    def stateless(self, protocol_version: str | None,
                  message_headers: Callable[[dict], dict] | None = None) -> None:
        """Speak the stateless revision ``protocol_version``: every POST carries it as
        MCP-Protocol-Version with ``message_headers(message)`` (Mcp-Method, Mcp-Name,
        Mcp-Param-*); an HTTP error status to a request raises AnswerInBody (the revision
        puts the request's JSON-RPC error in the body); notifications are not sent (closing
        a stream is the cancel: :meth:`abandon`). None goes back to the handshake era."""
        self.protocol_version = protocol_version
        self._message_headers = message_headers if protocol_version is not None else None

    def send(self, message: dict, *, deadline: Deadline | None = None) -> None:
        """POST one message (blocks until the server answered its headers, and for a JSON
        answer until it is delivered; never past ``deadline``, a time.monotonic() value).
        Raises ConnectionClosed once closed, TransportError when the server refuses it."""
        self._send(message, deadline, here=False)

    def send_awaited(self, message: dict, *, deadline: Deadline | None = None,
                     answer: Future | None = None, alone: bool = False) -> None:
        """:meth:`send`, and an event-stream answer is read on this thread too: blocks until
        the answer is delivered, the stream fails (the request is failed) or ``deadline``.
        Every request has a stream of its own, so ``answer`` and ``alone`` do not matter."""
        self._send(message, deadline, here=True)

    def _send(self, message: dict, deadline: float | None, here: bool) -> None:
        if self._closing:
            raise ConnectionClosed(f"the connection to MCP server {self.name!r} is closed")
        body = encode_message(message)
        request_id = request_id_of(message)
        headers = self._message_headers
        if headers is not None and is_notification(message):
            return  # the stateless revision has no client notifications over HTTP
        try:
            self._post(body, request_id, deadline,
                       headers(message) if headers is not None else None, here)
        except DeadlinePassed:
            if request_id is None:
                raise
            # the process timer fails the request at its deadline and the session cancels it

    def abandon(self, request_id: Any) -> None:
        """The answer to ``request_id`` is no longer wanted. In the stateless revision the
        stream it comes on is shut: closing it is how that revision cancels a request. In the
        handshake era nothing: the cancellation is a message, and the stream is read to its
        answer (or its deadline) so that its connection can be reused."""
        if self._message_headers is not None:
            self._close_answer(request_id)

    def close(self) -> None:
        """DELETE the session (405 and errors ignored), close every stream, join the threads."""
        self._shutdown(delete=True)

    def kill_now(self) -> None:
        """Close every stream and join the threads, without the DELETE."""
        self._shutdown(delete=False)

    # -- POST ----------------------------------------------------------------------------

    def _post(self, body: bytes, request_id: Any, deadline: float | None,
              message_headers: dict | None = None, here: bool = False) -> None:
        sid = self.session_id
        headers = self._headers(sid, post=True)
        if message_headers:
            headers.update(message_headers)
        response = self.channel.request("POST", self.url, extra_headers=headers,
                                        deadline=deadline, data=body)
        self._learn_session(response)
        if sid is not None:
            self._check_session(response, sid)
        status = response.status_code
        if status >= 400:
            failure = self.channel.failure(response, f"MCP server {self.name!r} (POST)")
            if (message_headers is not None and request_id is not None
                    and classify(status) is not Status.AUTH):
                raise AnswerInBody(str(failure), failure.status_code, failure.body)
            raise failure
        kind = media_type(response)
        if kind == SSE_TYPE:
            if here and request_id is not None:
                self._read_answer(response, request_id, deadline, here=True)
                return
            try:
                self._readers.submit(self._read_answer, response, request_id, deadline)
            except RuntimeError:  # shut down: we are closing
                response.close()
                raise ConnectionClosed(
                    f"the connection to MCP server {self.name!r} is closed") from None
            return
        data = self.channel.read_body(response, deadline)
        if status == 202 or not data.strip():
            return
        try:
            message = decode_message(data)
        except ValueError:
            message = None
        if kind != JSON_TYPE or not isinstance(message, (dict, list)) or (
                request_id is not None and not answers(message, request_id)):
            shown = excerpt(data.decode("utf-8", "replace"))
            what = "JSON" if kind == JSON_TYPE else (kind or "no content type")
            raise TransportError(f"MCP server {self.name!r} answered with {what} that is not a "
                                 f"JSON-RPC answer: {shown}", status, shown)
        self._deliver(message)  # type: ignore[misc]

    def _headers(self, sid: str | None, *, post: bool = False,
                 last_event_id: str | None = None) -> dict[str, str]:
        if post:
            headers = {"Accept": _ACCEPT_BOTH, "Content-Type": JSON_TYPE}
        else:
            headers = {"Accept": SSE_TYPE}
        if sid is not None:
            headers["Mcp-Session-Id"] = sid
        if self.protocol_version is not None:
            headers["MCP-Protocol-Version"] = self.protocol_version
        if last_event_id is not None:
            headers["Last-Event-ID"] = last_event_id
        return headers

    # -- sessions ------------------------------------------------------------------------

    def _learn_session(self, response: requests.Response) -> None:
        if self.session_id is None:
            sid = response.headers.get("mcp-session-id")
            if sid:
                with self._session_lock:
                    if self.session_id is None:
                        self.session_id, self._expired = sid, None

    def drop_session(self, session: str) -> None:
        """Leave ``session``, which the server forgot, if it is still the one in use: the next
        requests go without a session id (and without MCP-Protocol-Version), and the first
        answer that carries one starts the new session. Called by the owner that is about
        to start a new one; the GET stream waits for it (see :meth:`_await_session`)."""
        with self._session_lock:
            if self.session_id == session:
                self.session_id = None
                self.protocol_version = None
                self._expired = session

    def _check_session(self, response: requests.Response, sid: str) -> None:
        """Raise SessionExpired when the answer to a request sent in session ``sid`` says
        the server forgot it. A 400 not about the session raises its TransportError (its
        body has been read)."""
        status = response.status_code
        body = ""
        if classify(status, session=True) is Status.SESSION_GONE:  # a 404
            response.close()
        elif status == 400:  # a 400 may be about the session: its body says
            failure = self.channel.failure(response, f"MCP server {self.name!r}")
            if classify(status, session=True, body=failure.body) is not Status.SESSION_GONE:
                raise failure
            body = failure.body
        else:
            return
        log.info("%s: the server forgot the session", self.name)
        raise SessionExpired(f"MCP server {self.name!r} no longer knows the session "
                             f"(HTTP {status})", sid, status, body)

    # -- reading event streams ----------------------------------------------------------

    def _read_answer(self, response: requests.Response, request_id: Any,
                     deadline: float | None, here: bool = False) -> None:
        """Deliver the messages of a POST's event stream until its answer; resume a stream
        that ends early. Runs on a ``raider-<name>-stream`` worker, or (``here``) on the
        caller's thread."""
        parser = self.channel.parser()
        if request_id is not None:
            self._answer_streams[request_id] = response
        try:
            answered = self._pump(response, parser, deadline, request_id, here=here)
            resumes = 0
            while not answered and request_id is not None and not self._closing:
                if deadline is not None and time.monotonic() >= deadline:
                    return  # the deadline has passed: the session has failed (and cancelled) the request
                if parser.last_event_id is None:
                    self._fail(request_id, TransportError(
                        f"MCP server {self.name!r} ended the answer's event stream before "
                        f"answering (and gave no event id to resume from)"))
                    return
                resumes += 1
                if resumes > MAX_RESUMES or not self._pause(parser.retry, deadline):
                    if not self._closing and resumes > MAX_RESUMES:
                        self._fail(request_id, TransportError(
                            f"MCP server {self.name!r}: the answer's stream dropped "
                            f"{MAX_RESUMES} times"))
                    return
                response = self._resume(parser.last_event_id, deadline)
                parser.reconnected()
                answered = self._pump(response, parser, deadline, request_id, here=here)
        except DeadlinePassed:
            return
        except TransportError as exc:
            if not self._closing:
                self._fail(request_id, exc)
        except Exception as exc:  # noqa: BLE001 - a worker must not die silently
            log.exception("%s: reading an answer failed", self.name)
            if not self._closing:
                self._fail(request_id, TransportError(
                    f"MCP server {self.name!r}: reading the answer failed: "
                    f"{type(exc).__name__}: {exc}"))
        finally:
            self._answer_streams.pop(request_id, None)

    def _close_answer(self, request_id: Any) -> None:
        """Shut the stream a request's answer comes on (the stateless revision's cancel)."""
        response = self._answer_streams.pop(request_id, None) if _hashable(request_id) else None
        if response is not None:
            _shut_answer(response)

    def _resume(self, last_event_id: str, deadline: float | None) -> requests.Response:
        try:
            response = self.channel.request("GET", self.url, extra_headers=self._headers(
                self.session_id, last_event_id=last_event_id), deadline=deadline)
        except DeadlinePassed:
            raise
        except TransportError as exc:  # the request was sent: not "cannot connect" alone
            raise TransportError(f"MCP server {self.name!r}: the answer's event stream broke "
                                 f"off and could not be resumed: {exc}", exc.status_code,
                                 exc.body) from exc
        if response.status_code >= 400:
            raise self.channel.failure(response, f"MCP server {self.name!r} (resuming a stream)")
        if media_type(response) != SSE_TYPE:
            response.close()
            raise TransportError(f"MCP server {self.name!r} answered the resumption with "
                                 f"{media_type(response) or 'no content type'}",
                                 response.status_code)
        return response

    def _pump(self, response: requests.Response, parser: SseParser, deadline: float | None,
              request_id: Any, idle_timeout: float | None = None, here: bool = False) -> bool:
        """Deliver the stream's messages; True once the answer to ``request_id`` came (the
        rest of the stream is then drained briefly, or dropped). ``here`` (the caller's
        thread) waits only for the stream's end, and not at all once the end failed to come
        END_MISSES times in a row (a server that keeps answered streams open) until an end
        is found already there: the rest is left to a worker."""
        events = self.channel.events(response, parser, deadline, idle_timeout=idle_timeout)
        handed_off = False
        try:
            for event in events:
                if event.event != "message":
                    continue
                message = deliver_json(event.data, self._deliver,  # type: ignore[arg-type]
                                       log, self.name, "an event")
                if request_id is not None and answers(message, request_id):
                    if not here:
                        self.channel.drain(response, DRAIN_SECONDS)
                    elif self.channel.finish(response, DRAIN_SECONDS
                                             if self._end_misses < END_MISSES else 0):
                        self._end_misses = 0
                    else:
                        self._end_misses += 1
                        handed_off = self._hand_off(response, events)
                    return True
            return False
        finally:
            if not handed_off:
                events.close()

    def _hand_off(self, response: requests.Response, events) -> bool:
        """Have a worker drain the rest of an answered stream, then close it (``events``,
        the suspended reader of it). False when closing: the caller closes it."""
        def drain() -> None:
            try:
                self.channel.drain(response, DRAIN_SECONDS)
            finally:
                events.close()
        try:
            self._readers.submit(drain)
        except RuntimeError:  # shut down: we are closing
            return False
        return True

    def _fail(self, request_id: Any, error: TransportError) -> None:
        """Fail one request with ``error`` (see the module doc)."""
        if request_id is None:
            log.warning("%s: %s", self.name, error)
            return
        self._deliver(RequestFailed(request_id, error))  # type: ignore[misc]

    def _pause(self, retry_ms: int | None, deadline: float | None,
               default: float = RECONNECT_DELAY, listener: bool = False) -> bool:
        """Wait the server's retry delay (or ``default``) within the deadline; False when
        closing or when the deadline would pass. The listener is also woken by a new session."""
        delay = retry_ms / 1000 if retry_ms is not None else default
        if deadline is not None and time.monotonic() + delay >= deadline:
            return False
        if listener:
            self._wake_listener.wait(delay)
            self._wake_listener.clear()
        else:
            self._stopped.wait(delay)
        return not self._closing

    # -- the GET stream ------------------------------------------------------------------

    def _listen(self) -> None:
        """Keep the GET stream open until close; runs on ``raider-<name>-listen``. Whatever
        fails in it is logged, and the stream is reopened after a growing delay."""
        failures = 0
        while not self._closing:
            try:
                self._listen_until_done()
                return
            except Exception:  # noqa: BLE001 - the listener must not die silently
                log.exception("%s: the GET stream failed; reopening it", self.name)
                self._listening.set()
                failures += 1
                delay = min(MAX_RECONNECT_DELAY, RECONNECT_DELAY * 2 ** (failures - 1))
                if not self._pause(None, None, delay, listener=True):
                    return

    def _listen_until_done(self) -> None:
        last_id: str | None = None
        session = self.session_id
        failures = 0
        retry: int | None = None
        while not self._closing:
            sid, expired = self.session_id, self._expired
            if sid is None and expired is not None:
                # the session was dropped and no new one has started (its renewal failed,
                # or is slow): say so again rather than listen outside any session
                self._listening.set()
                if not self._await_session(SessionExpired(
                        f"MCP server {self.name!r} no longer knows the session", expired)):
                    return
                continue
            if sid != session:
                session, last_id = sid, None  # event ids of a gone session mean nothing
            try:
                response = self.channel.request(
                    "GET", self.url, extra_headers=self._headers(sid, last_event_id=last_id),
                    deadline=None, read_timeout=LISTEN_READ_TIMEOUT)
                self._learn_session(response)
                if response.status_code == 405:
                    response.close()
                    log.debug("%s: the server offers no GET stream (405)", self.name)
                    return
                if sid is not None:
                    self._check_session(response, sid)
                if response.status_code >= 400:
                    raise self.channel.failure(response, f"MCP server {self.name!r} (GET)")
                if media_type(response) != SSE_TYPE:
                    response.close()
                    log.info("%s: the GET stream is not an event stream; not listening",
                             self.name)
                    return
            except SessionExpired as exc:
                self._listening.set()
                if not self._await_session(exc):
                    return
                continue
            except TransportError as exc:
                if self._closing:
                    return
                failures += 1
                (log.warning if failures == 1 else log.debug)(
                    "%s: the GET stream failed: %s", self.name, exc)
                self._listening.set()
                deliver_parsed(StreamHealth(TransportError(
                    f"MCP server {self.name!r}: the GET stream could not be opened: "
                    f"{exc}", exc.status_code, exc.body)), self._deliver, log, self.name)
                delay = min(MAX_RECONNECT_DELAY, RECONNECT_DELAY * 2 ** (failures - 1))
                if retry is not None:
                    delay = max(delay, retry / 1000)
                if not self._pause(None, None, delay, listener=True):
                    return
                continue
            finally:
                self._listening.set()
            if failures:
                deliver_parsed(StreamHealth(None), self._deliver, log, self.name)
            failures = 0
            parser = self.channel.parser(last_id)
            # a server that says Connection: close leaves the socket to the response alone,
            # out of the channel's reach: close() shuts it through this
            self._get_stream = response
            if self._closing:
                _shut_answer(response)
            try:
                self._pump(response, parser, None, None, idle_timeout=LISTEN_READ_TIMEOUT)
            except TransportError as exc:  # an event over the size limit: dropped with its stream
                log.warning("%s: the GET stream was dropped: %s", self.name, exc)
            finally:
                self._get_stream = None
            last_id, retry = parser.last_event_id, parser.retry
            if not self._pause(retry, None, listener=True):
                return

    def _await_session(self, expired: SessionExpired) -> bool:
        """The GET stream's session is gone: tell the owner (a StreamHealth carrying
        ``expired``; the owner has a new session started), then wait for :meth:`negotiated`
        to tell of the new one, at most RENEW_TIMEOUT s. False when closing."""
        deliver_parsed(StreamHealth(expired), self._deliver, log, self.name)
        return self._pause(None, None, RENEW_TIMEOUT, listener=True)

    # -- stopping ------------------------------------------------------------------------

    def _shutdown(self, delete: bool) -> None:
        with self._close_lock:
            if self._closed:
                return
            self._closing = True
            sid = self.session_id
            if delete and sid is not None:
                try:
                    self.channel.request("DELETE", self.url, extra_headers=self._headers(sid),
                                         deadline=None, read_timeout=DELETE_TIMEOUT).close()
                except TransportError as exc:
                    log.debug("%s: DELETE failed: %s", self.name, exc)
            self._stopped.set()
            self._wake_listener.set()
            self.channel.abort()
            for request_id in list(self._answer_streams):  # listen streams, answers under way
                self._close_answer(request_id)
            get_stream = self._get_stream
            if get_stream is not None:
                _shut_answer(get_stream)
            listener = self._listener
            if listener is not None and listener is not threading.current_thread():
                listener.join(10)
            # queued readers still run (and close their responses) but find their sockets shut
            in_reader = getattr(self._local, "reader", False)
            self._readers.shutdown(wait=not in_reader)
            self.channel.close()
            self._closed = True

    def _mark_reader(self) -> None:
        self._local.reader = True


def _answer_socket(response: requests.Response):
    """The socket an answer is read from. A server that says ``Connection: close`` has its
    connection object let go of the socket (http.client), which then lives only in the
    response's file: found there."""
    sock = _socket_of(response.raw)
    if sock is None:
        fp = getattr(getattr(response.raw, "_fp", None), "fp", None)
        sock = getattr(getattr(fp, "raw", None), "_sock", None)
    return sock


def _shut_answer(response: requests.Response) -> None:
    """Shut the socket a streamed answer is read from, waking its reader."""
    sock = _answer_socket(response)
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def _hashable(value: Any) -> bool:
    return isinstance(value, (str, int, float))
