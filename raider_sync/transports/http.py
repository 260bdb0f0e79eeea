"""The Streamable HTTP transport (MCP 2025-03-26 and later): one endpoint, one POST per message.

The transport is a face over parts it owns, each with one job:

- :mod:`.http_answers`: the caller's thread POSTs (one ``requests.Session``, pooled keep-alive
  connections: :class:`~.http_common.HttpChannel`). A JSON answer is delivered on it, so a
  blocking call costs no thread hand-off. An event-stream answer is read by a worker of the
  pool ``raider-<name>-stream`` (up to ``stream_workers``), or, when the caller waits for it
  anyway (:meth:`send_awaited`, the blocking calls), on the caller's thread; a stream that
  ends before the answer is resumed with a GET carrying ``Last-Event-ID``.
- :mod:`.http_listen`: ``raider-<name>-listen``, the GET stream for server-initiated
  messages, opened by :meth:`negotiated` right after initialize (before
  ``notifications/initialized``, so nothing the server announces then is lost); 405 means
  the server has none; a dropped stream is reopened with ``Last-Event-ID``, and its failures
  are delivered as a :class:`~raider_sync.transports.base.StreamHealth`.
- :mod:`.http_session`: the session id and the protocol revision, the headers of each request,
  and what tells a session gone.

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
import threading
from concurrent.futures import Future
from typing import Any, Callable, Mapping

from ..errors import ConnectionClosed, TransportError
from ..protocol.messages import DEFAULT_MAX_MESSAGE_SIZE, encode_message, is_notification, request_id_of
from ..threads.futures import Deadline
from .base import Closed, Deliver, Transport
from .http_answers import DRAIN_SECONDS, END_MISSES, MAX_RESUMES, RECONNECT_DELAY, Answers  # noqa: F401 - importable from here as before
from .http_common import HttpChannel
from .http_listen import (  # noqa: F401 - importable from here as before
    LISTEN_READ_TIMEOUT,
    LISTEN_READY_TIMEOUT,
    MAX_RECONNECT_DELAY,
    RENEW_TIMEOUT,
    GetStream,
)
from .http_session import SessionHeaders
from .statuses import DeadlinePassed

log = logging.getLogger("raider_sync.transports.http")

#: seconds the DELETE of stop() may take
DELETE_TIMEOUT = 5.0


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
        self._closing = threading.Event()  # set once, by close
        self._closed = False
        self._close_lock = threading.Lock()
        self._session = SessionHeaders(name, self.channel)
        self._answers = Answers(url, name, self.channel, self._session,
                                stream_workers=stream_workers, closing=self._closing)
        self._listen = GetStream(url, name, self.channel, self._session, self._answers,
                                 self._closing)

    @property
    def session_id(self) -> str | None:
        """The ``Mcp-Session-Id`` requests are sent with (None: no session, or none yet)."""
        return self._session.session_id

    @property
    def protocol_version(self) -> str | None:
        """The revision sent as MCP-Protocol-Version (None: none yet)."""
        return self._session.protocol_version

    # -- Transport -----------------------------------------------------------------------

    def start(self, deliver: Deliver, closed: Closed, *, timeout: float | None = None) -> None:
        """Run headers_helper if configured (blocks up to ``timeout`` s). No request is sent
        yet. Raises TransportError when the helper fails. ``closed`` is never called: an HTTP
        server that goes away fails requests, and may come back."""
        self._answers.deliver = self._listen.deliver = deliver
        self.channel.open(timeout)

    def negotiated(self, protocol_version: str, timeout: float | None = None) -> None:
        """Told the revision initialize settled on: send it as MCP-Protocol-Version from now
        on, and open the GET stream (blocks until the server answered the GET, at most
        ``timeout`` s or 5)."""
        self._session.protocol_version = protocol_version
        if self._closing.is_set():
            return
        self._listen.open(timeout)

    def stateless(self, protocol_version: str | None,
                  message_headers: Callable[[dict], dict] | None = None) -> None:
        """Speak the stateless revision ``protocol_version``: every POST carries it as
        MCP-Protocol-Version with ``message_headers(message)`` (Mcp-Method, Mcp-Name,
        Mcp-Param-*); an HTTP error status to a request raises AnswerInBody (the revision
        puts the request's JSON-RPC error in the body); notifications are not sent (closing
        a stream is the cancel: :meth:`abandon`). None goes back to the handshake era."""
        self._session.stateless(protocol_version, message_headers)

    def send(self, message: dict, *, deadline: Deadline | None = None) -> None:
        """POST one message (blocks until the server answered its headers, and for a JSON
        answer until it is delivered; never past ``deadline``, a time.monotonic() value).
        Raises ConnectionClosed once closed, TransportError when the server refuses it."""
        self._send(message, deadline, here=False)

    def send_awaited(self, message: dict, *, deadline: Deadline | None = None,
                     answer: Future | None = None, alone: bool = False,
                     idle: float | None = None) -> None:
        """:meth:`send`, and an event-stream answer is read on this thread too: blocks until
        the answer is delivered, the stream fails (the request is failed), ``answer`` is
        settled otherwise (say, for ``idle`` s of silence) or ``deadline``. Every request
        has a stream of its own, so ``alone`` does not matter."""
        self._send(message, deadline, here=True, idle=idle, answer=answer)

    def _send(self, message: dict, deadline: float | None, here: bool,
              idle: float | None = None, answer: Future | None = None) -> None:
        if self._closing.is_set():
            raise ConnectionClosed(f"the connection to MCP server {self.name!r} is closed")
        body = encode_message(message)
        request_id = request_id_of(message)
        headers = self._session.message_headers
        if headers is not None and is_notification(message):
            return  # the stateless revision has no client notifications over HTTP
        try:
            self._answers.post(body, request_id, deadline,
                               headers(message) if headers is not None else None, here,
                               idle=idle, answer=answer)
        except DeadlinePassed:
            if request_id is None:
                raise
            # the process timer fails the request at its deadline and the session cancels it

    def abandon(self, request_id: Any) -> None:
        """The answer to ``request_id`` is no longer wanted. In the stateless revision the
        stream it comes on is shut: closing it is how that revision cancels a request. In the
        handshake era nothing: the cancellation is a message, and the stream is read to its
        answer (or its deadline) so that its connection can be reused."""
        if self._session.message_headers is not None:
            self._answers.close_answer(request_id)

    def drop_session(self, session: str) -> None:
        """Leave ``session``, which the server forgot, if it is still the one in use: the next
        requests go without a session id (and without MCP-Protocol-Version), and the first
        answer that carries one starts the new session. Called by the owner that is about
        to start a new one; the GET stream waits for it."""
        self._session.drop(session)

    def close(self) -> None:
        """DELETE the session (405 and errors ignored), close every stream, join the threads."""
        self._shutdown(delete=True)

    def kill_now(self) -> None:
        """Close every stream and join the threads, without the DELETE."""
        self._shutdown(delete=False)

    def _shutdown(self, delete: bool) -> None:
        with self._close_lock:
            if self._closed:
                return
            self._closing.set()
            sid = self._session.session_id
            if delete and sid is not None:
                try:
                    self.channel.request("DELETE", self.url,
                                         extra_headers=self._session.headers(sid),
                                         deadline=None, read_timeout=DELETE_TIMEOUT).close()
                except TransportError as exc:
                    log.debug("%s: DELETE failed: %s", self.name, exc)
            self._listen.wake()
            self.channel.abort()
            self._answers.shut_all()  # listen streams, answers under way
            self._listen.stop()
            self._answers.join()
            self.channel.close()
            self._closed = True
