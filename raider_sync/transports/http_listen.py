"""The GET stream of a Streamable HTTP connection: what the server sends unasked.

It runs on ``raider-<name>-listen``, opened by the transport's ``negotiated`` right after
initialize (before ``notifications/initialized``, so nothing the server announces then is
lost); 405 means the server has none; a dropped stream is reopened with ``Last-Event-ID``.
A reopening that fails is delivered as a :class:`~raider_sync.transports.base.StreamHealth`
carrying its TransportError (the owner learns the server is out of reach without waiting for
a call), and the next stream that opens as a StreamHealth of None. A stream that finds its
session gone delivers a StreamHealth carrying the
:class:`~raider_sync.errors.SessionExpired`, and opens again once ``negotiated`` tells of a
new session (:meth:`GetStream.wake`). Whatever fails in it is logged, never raised.
"""
from __future__ import annotations

import logging
import threading

import requests

from ..errors import SessionExpired, TransportError
from .base import Deliver, StreamHealth, deliver_parsed
from .http_answers import RECONNECT_DELAY, Answers, not_started, shut_answer
from .http_common import SSE_TYPE, HttpChannel, media_type
from .http_session import SessionHeaders

log = logging.getLogger("raider_sync.transports.http")

#: seconds an idle GET stream is kept before it is reopened
LISTEN_READ_TIMEOUT = 300.0
#: seconds negotiated() waits for the GET stream's first answer
LISTEN_READY_TIMEOUT = 5.0
#: the cap of the reconnect backoff (s)
MAX_RECONNECT_DELAY = 30.0
#: seconds the GET stream waits for a new session after finding its own gone
RENEW_TIMEOUT = 30.0


class GetStream:
    """The GET stream of the server ``name`` at ``url`` through ``channel`` in ``session``;
    its events are delivered by ``answers`` (to its ``deliver``), what it tells of itself
    to :attr:`deliver` (set when the transport starts). ``closing`` is set once the
    transport closes."""

    def __init__(self, url: str, name: str, channel: HttpChannel, session: SessionHeaders,
                 answers: Answers, closing: threading.Event):
        self.url = url
        self.name = name
        self.deliver: Deliver = not_started
        self._channel = channel
        self._session = session
        self._answers = answers
        self._closing = closing
        self._thread: threading.Thread | None = None
        self._listening = threading.Event()
        self._wake = threading.Event()  # set by wake and stop
        #: the open GET response, while one is read (close shuts its socket)
        self.stream: requests.Response | None = None

    def open(self, timeout: float | None = None) -> None:
        """Open the stream, or, when it is open already, have it reconnect now (a new
        session) rather than after a delay. Blocks until the server answered the GET, at
        most ``timeout`` s or LISTEN_READY_TIMEOUT."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._listen, daemon=True,
                                            name=f"raider-{self.name}-listen")
            self._thread.start()
        else:
            self._wake.set()
        bound = LISTEN_READY_TIMEOUT if timeout is None else min(timeout, LISTEN_READY_TIMEOUT)
        self._listening.wait(bound)

    def wake(self) -> None:
        """End the wait between two streams now (closing: the thread ends)."""
        self._wake.set()

    def stop(self) -> None:
        """Shut the stream and join the thread (at most 10 s; not from the thread itself).
        Call once ``closing`` is set."""
        self._wake.set()
        stream = self.stream
        if stream is not None:
            shut_answer(stream)
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(10)

    def _listen(self) -> None:
        """Keep the GET stream open until close; runs on ``raider-<name>-listen``. Whatever
        fails in it is logged, and the stream is reopened after a growing delay."""
        failures = 0
        while not self._closing.is_set():
            try:
                self._listen_until_done()
                return
            except Exception:  # noqa: BLE001 - the listener must not die silently
                log.exception("%s: the GET stream failed; reopening it", self.name)
                self._listening.set()
                failures += 1
                delay = min(MAX_RECONNECT_DELAY, RECONNECT_DELAY * 2 ** (failures - 1))
                if not self._pause(delay):
                    return

    def _listen_until_done(self) -> None:
        last_id: str | None = None
        session = self._session.session_id
        failures = 0
        retry: int | None = None
        while not self._closing.is_set():
            sid, expired = self._session.session_id, self._session.expired
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
                response = self._channel.request(
                    "GET", self.url,
                    extra_headers=self._session.headers(sid, last_event_id=last_id),
                    deadline=None, read_timeout=LISTEN_READ_TIMEOUT)
                self._session.learn(response)
                if response.status_code == 405:
                    response.close()
                    log.debug("%s: the server offers no GET stream (405)", self.name)
                    return
                if sid is not None:
                    self._session.check(response, sid)
                if response.status_code >= 400:
                    raise self._channel.failure(response, f"MCP server {self.name!r} (GET)")
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
                if self._closing.is_set():
                    return
                failures += 1
                (log.warning if failures == 1 else log.debug)(
                    "%s: the GET stream failed: %s", self.name, exc)
                self._listening.set()
                deliver_parsed(StreamHealth(TransportError(
                    f"MCP server {self.name!r}: the GET stream could not be opened: "
                    f"{exc}", exc.status_code, exc.body)), self.deliver, log, self.name)
                delay = min(MAX_RECONNECT_DELAY, RECONNECT_DELAY * 2 ** (failures - 1))
                if retry is not None:
                    delay = max(delay, retry / 1000)
                if not self._pause(delay):
                    return
                continue
            finally:
                self._listening.set()
            if failures:
                deliver_parsed(StreamHealth(None), self.deliver, log, self.name)
            failures = 0
            parser = self._channel.parser(last_id)
            # a server that says Connection: close leaves the socket to the response alone,
            # out of the channel's reach: stop() shuts it through this
            self.stream = response
            if self._closing.is_set():
                shut_answer(response)
            try:
                self._answers.pump(response, parser, None, None,
                                   idle_timeout=LISTEN_READ_TIMEOUT)
            except TransportError as exc:  # an event over the size limit: dropped with its stream
                log.warning("%s: the GET stream was dropped: %s", self.name, exc)
            finally:
                self.stream = None
            last_id, retry = parser.last_event_id, parser.retry
            if not self._pause(retry / 1000 if retry is not None else RECONNECT_DELAY):
                return

    def _await_session(self, expired: SessionExpired) -> bool:
        """The GET stream's session is gone: tell the owner (a StreamHealth carrying
        ``expired``; the owner has a new session started), then wait for :meth:`open`
        to tell of the new one, at most RENEW_TIMEOUT s. False when closing."""
        deliver_parsed(StreamHealth(expired), self.deliver, log, self.name)
        return self._pause(RENEW_TIMEOUT)

    def _pause(self, delay: float) -> bool:
        """Wait ``delay`` s, or until woken (a new session, or closing); False when closing."""
        self._wake.wait(delay)
        self._wake.clear()
        return not self._closing.is_set()
