"""The POSTs of a Streamable HTTP connection and the answers they get.

A JSON answer is delivered on the caller's thread, so a blocking call costs no thread
hand-off. An event-stream answer is read by a worker of the pool ``raider-<name>-stream`` (up
to ``stream_workers``, each ending after half a second without work), or, when the caller
waits for it anyway (``here``, the blocking calls), on the caller's thread: every message on
it (server requests and notifications too) is delivered as it comes; priming events are
skipped. A stream that ends before the answer is resumed with a GET carrying
``Last-Event-ID``, after the server's ``retry:`` delay. What follows the answer on its stream
is read for a moment so the connection can be reused: on the caller's thread only the
stream's end (see :meth:`Answers.pump`), anything else by a worker.

Failures: an HTTP error status, an unreachable server or a body that is not JSON raise
:class:`TransportError` from :meth:`Answers.post`. A failure found later, while a worker reads
an event stream, is delivered as a :class:`~raider_sync.transports.base.RequestFailed`
carrying the same kind of TransportError, which fails that request only. In the stateless
revision an error status to a request raises :class:`~raider_sync.errors.AnswerInBody`,
since that revision puts the request's JSON-RPC error in the body.
"""
from __future__ import annotations

import logging
import socket
import threading
import time
from concurrent.futures import Future
from typing import Any

import requests

from ..errors import AnswerInBody, ConnectionClosed, TransportError
from ..protocol.messages import answers, decode_message
from ..protocol.sse_events import SseParser
from ..threads.workers import Workers
from .base import Deliver, RequestFailed, deliver_json
from .http_bodies import excerpt, socket_of
from .http_common import JSON_TYPE, SSE_TYPE, HttpChannel, media_type
from .http_session import SessionHeaders
from .statuses import DeadlinePassed, Status, classify

log = logging.getLogger("raider_sync.transports.http")

#: reconnect delay (s) when the server gave no retry:
RECONNECT_DELAY = 1.0
#: seconds to read what follows an answer on its stream (so the connection can be reused)
DRAIN_SECONDS = 0.25
#: seconds past a request's span of silence that its reader on the caller's thread waits:
#: the request's own timer fails it first, with the timeout the caller expects
IDLE_MARGIN = 1.0
#: answered streams in a row whose end did not follow before the caller's thread stops
#: waiting for ends (it waits again once an end is found already there)
END_MISSES = 3
MAX_RESUMES = 50


def not_started(message: Any) -> None:
    """What a transport delivers to before it is started: a message has nowhere to go."""
    raise ConnectionClosed("the transport was not started: a message has nowhere to go")


class Answers:
    """The POSTs to the server ``name`` at ``url`` through ``channel`` in ``session``, and
    the reading of their answers, which go to :attr:`deliver` (set when the transport
    starts). ``closing`` is set once the transport closes: nothing is read after it."""

    def __init__(self, url: str, name: str, channel: HttpChannel, session: SessionHeaders, *,
                 stream_workers: int, closing: threading.Event):
        self.url = url
        self.name = name
        self.deliver: Deliver = not_started
        self._channel = channel
        self._session = session
        self._closing = closing
        #: request id -> the event stream its answer comes on, while it is read
        self.streams: dict[Any, requests.Response] = {}
        self._end_misses = 0  # answered streams in a row whose end did not come at once
        self._local = threading.local()
        # the transport's own: it knows nothing of the session above it, and its close joins
        # these readers before the session's threads are joined
        self._readers = Workers(stream_workers, f"raider-{name}-stream",
                                initializer=self._mark_reader)

    def post(self, body: bytes, request_id: Any, deadline: float | None,
             message_headers: dict | None = None, here: bool = False, *,
             idle: float | None = None, answer: Future | None = None) -> None:
        """POST one message (``request_id`` None: no answer is awaited) and deliver its
        answer: a JSON one before returning; an event stream on this thread (``here``) or a
        worker. Blocks until the server answered the headers (and see above), never past
        ``deadline``. Raises what the module doc says, SessionExpired when the server forgot
        the session the message went in, ConnectionClosed once closing."""
        sid = self._session.session_id
        headers = self._session.headers(sid, post=True)
        if message_headers:
            headers.update(message_headers)
        response = self._channel.request("POST", self.url, extra_headers=headers,
                                         deadline=deadline, data=body)
        self._session.learn(response)
        if sid is not None:
            self._session.check(response, sid)
        status = response.status_code
        if status >= 400:
            failure = self._channel.failure(response, f"MCP server {self.name!r} (POST)")
            if (message_headers is not None and request_id is not None
                    and classify(status) is not Status.AUTH):
                raise AnswerInBody(str(failure), failure.status_code, failure.body)
            raise failure
        kind = media_type(response)
        if kind == SSE_TYPE:
            if here and request_id is not None:
                self._read_answer(response, request_id, deadline, here=True, idle=idle,
                                  answer=answer)
                return
            try:
                self._readers.submit(self._read_answer, response, request_id, deadline)
            except RuntimeError:  # shut down: we are closing
                response.close()
                raise ConnectionClosed(
                    f"the connection to MCP server {self.name!r} is closed") from None
            return
        data = self._channel.read_body(response, deadline)
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
        self.deliver(message)

    def _read_answer(self, response: requests.Response, request_id: Any,
                     deadline: float | None, here: bool = False, idle: float | None = None,
                     answer: Future | None = None) -> None:
        """Deliver the messages of a POST's event stream until its answer; resume a stream
        that ends early. Runs on a ``raider-<name>-stream`` worker, or (``here``) on the
        caller's thread, which ``idle`` s of silence (plus a margin: the request's own
        timer fails it first) or ``answer`` settled without the stream free."""
        parser = self._channel.parser()
        if request_id is not None:
            self.streams[request_id] = response
        silence = None if idle is None else idle + IDLE_MARGIN
        try:
            answered = self.pump(response, parser, deadline, request_id, here=here,
                                 idle_timeout=silence)
            resumes = 0
            while not answered and request_id is not None and not self._closing.is_set():
                if answer is not None and answer.done():
                    return  # failed meanwhile (its silence ran out): nobody waits for more
                if deadline is not None and time.monotonic() >= deadline:
                    return  # the deadline has passed: the session has failed (and cancelled) the request
                if parser.last_event_id is None:
                    self._fail(request_id, TransportError(
                        f"MCP server {self.name!r} ended the answer's event stream before "
                        f"answering (and gave no event id to resume from)"))
                    return
                resumes += 1
                if resumes > MAX_RESUMES or not self._pause(parser.retry, deadline):
                    if not self._closing.is_set() and resumes > MAX_RESUMES:
                        self._fail(request_id, TransportError(
                            f"MCP server {self.name!r}: the answer's stream dropped "
                            f"{MAX_RESUMES} times"))
                    return
                response = self._resume(parser.last_event_id, deadline)
                parser.reconnected()
                answered = self.pump(response, parser, deadline, request_id, here=here,
                                     idle_timeout=silence)
        except DeadlinePassed:
            return
        except TransportError as exc:
            if not self._closing.is_set():
                self._fail(request_id, exc)
        except Exception as exc:  # noqa: BLE001 - a worker must not die silently
            log.exception("%s: reading an answer failed", self.name)
            if not self._closing.is_set():
                self._fail(request_id, TransportError(
                    f"MCP server {self.name!r}: reading the answer failed: "
                    f"{type(exc).__name__}: {exc}"))
        finally:
            self.streams.pop(request_id, None)

    def close_answer(self, request_id: Any) -> None:
        """Shut the stream a request's answer comes on (the stateless revision's cancel)."""
        response = self.streams.pop(request_id, None) if _hashable(request_id) else None
        if response is not None:
            shut_answer(response)

    def _resume(self, last_event_id: str, deadline: float | None) -> requests.Response:
        try:
            response = self._channel.request("GET", self.url, extra_headers=self._session.headers(
                self._session.session_id, last_event_id=last_event_id), deadline=deadline)
        except DeadlinePassed:
            raise
        except TransportError as exc:  # the request was sent: not "cannot connect" alone
            raise TransportError(f"MCP server {self.name!r}: the answer's event stream broke "
                                 f"off and could not be resumed: {exc}", exc.status_code,
                                 exc.body) from exc
        if response.status_code >= 400:
            raise self._channel.failure(response,
                                        f"MCP server {self.name!r} (resuming a stream)")
        if media_type(response) != SSE_TYPE:
            response.close()
            raise TransportError(f"MCP server {self.name!r} answered the resumption with "
                                 f"{media_type(response) or 'no content type'}",
                                 response.status_code)
        return response

    def pump(self, response: requests.Response, parser: SseParser, deadline: float | None,
             request_id: Any, idle_timeout: float | None = None, here: bool = False) -> bool:
        """Deliver the stream's messages; True once the answer to ``request_id`` came (the
        rest of the stream is then drained briefly, or dropped). ``here`` (the caller's
        thread) waits only for the stream's end, and not at all once the end failed to come
        END_MISSES times in a row (a server that keeps answered streams open) until an end
        is found already there: the rest is left to a worker."""
        events = self._channel.events(response, parser, deadline, idle_timeout=idle_timeout)
        handed_off = False
        try:
            for event in events:
                if event.event != "message":
                    continue
                message = deliver_json(event.data, self.deliver, log, self.name, "an event")
                if request_id is not None and answers(message, request_id):
                    if not here:
                        self._channel.drain(response, DRAIN_SECONDS)
                    elif self._channel.finish(response, DRAIN_SECONDS
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
                self._channel.drain(response, DRAIN_SECONDS)
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
        self.deliver(RequestFailed(request_id, error))

    def _pause(self, retry_ms: int | None, deadline: float | None) -> bool:
        """Wait the server's retry delay (or RECONNECT_DELAY) within the deadline; False when
        closing or when the deadline would pass."""
        delay = retry_ms / 1000 if retry_ms is not None else RECONNECT_DELAY
        if deadline is not None and time.monotonic() + delay >= deadline:
            return False
        self._closing.wait(delay)
        return not self._closing.is_set()

    # -- stopping ------------------------------------------------------------------------

    def shut_all(self) -> None:
        """Shut every stream an answer comes on (their readers wake and end)."""
        for request_id in list(self.streams):
            self.close_answer(request_id)

    def join(self) -> None:
        """Take no more streams and join the readers (not when called on one of them):
        queued ones still run (and close their responses) but find their sockets shut."""
        in_reader = getattr(self._local, "reader", False)
        self._readers.shutdown(wait=not in_reader)

    def _mark_reader(self) -> None:
        self._local.reader = True


def answer_socket(response: requests.Response) -> socket.socket | None:
    """The socket an answer is read from. A server that says ``Connection: close`` has its
    connection object let go of the socket (http.client), which then lives only in the
    response's file: found there."""
    sock = socket_of(response.raw)
    if sock is None:
        fp = getattr(getattr(response.raw, "_fp", None), "fp", None)
        sock = getattr(getattr(fp, "raw", None), "_sock", None)
    return sock


def shut_answer(response: requests.Response) -> None:
    """Shut the socket a streamed answer is read from, waking its reader."""
    sock = answer_socket(response)
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def _hashable(value: Any) -> bool:
    return isinstance(value, (str, int, float))
