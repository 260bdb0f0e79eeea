"""The MCP session of a Streamable HTTP connection, and the headers each request carries.

The ``Mcp-Session-Id`` of the first answer that carries one is sent on every later request,
``MCP-Protocol-Version`` once the revision is known. A request refused with 404 (or with a
400 whose body is about the session, as older TypeScript servers answer) while carrying a
session id means the server forgot the session
(:func:`~raider_sync.transports.statuses.classify` says so): :meth:`SessionHeaders.check`
raises :class:`~raider_sync.errors.SessionExpired`, and whoever sends decides what follows.
The session is left only when the owner says so (:meth:`SessionHeaders.drop`); the next
requests then go without one, and the first answer that carries an id starts the new one.
Nothing here blocks but on a lock (and :meth:`SessionHeaders.check` reading the body of a 400).
"""
from __future__ import annotations

import logging
import threading
from typing import Callable

import requests

from ..errors import SessionExpired
from .http_common import JSON_TYPE, SSE_TYPE, HttpChannel
from .statuses import Status, classify

log = logging.getLogger("raider_sync.transports.http")

_ACCEPT_BOTH = "application/json, text/event-stream"


class SessionHeaders:
    """The session of the server ``name`` that ``channel`` talks to. ``session_id`` and
    ``protocol_version`` are read without a lock (a request sends what it found)."""

    def __init__(self, name: str, channel: HttpChannel):
        self.name = name
        self._channel = channel
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        #: the session the server forgot, until a new one starts
        self.expired: str | None = None
        #: the stateless revision's headers of a message (Mcp-Method, ...); None: the
        #: handshake era
        self.message_headers: Callable[[dict], dict] | None = None
        self._lock = threading.Lock()

    def stateless(self, protocol_version: str | None,
                  message_headers: Callable[[dict], dict] | None = None) -> None:
        """Speak the stateless revision ``protocol_version`` with ``message_headers``; None
        goes back to the handshake era."""
        self.protocol_version = protocol_version
        self.message_headers = message_headers if protocol_version is not None else None

    def headers(self, sid: str | None, *, post: bool = False,
                last_event_id: str | None = None) -> dict[str, str]:
        """The headers of a POST (``post``) or a GET sent in the session ``sid``."""
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

    def learn(self, response: requests.Response) -> None:
        """Start the session ``response`` names, when there is none yet."""
        if self.session_id is None:
            sid = response.headers.get("mcp-session-id")
            if sid:
                with self._lock:
                    if self.session_id is None:
                        self.session_id, self.expired = sid, None

    def drop(self, session: str) -> None:
        """Leave ``session``, which the server forgot, if it is still the one in use: the next
        requests go without a session id (and without MCP-Protocol-Version), and the first
        answer that carries one starts the new session."""
        with self._lock:
            if self.session_id == session:
                self.session_id = None
                self.protocol_version = None
                self.expired = session

    def check(self, response: requests.Response, sid: str) -> None:
        """Raise SessionExpired when the answer to a request sent in session ``sid`` says
        the server forgot it. A 400 not about the session raises its TransportError (its
        body has been read)."""
        status = response.status_code
        body = ""
        if classify(status, session=True) is Status.SESSION_GONE:  # a 404
            response.close()
        elif status == 400:  # a 400 may be about the session: its body says
            failure = self._channel.failure(response, f"MCP server {self.name!r}")
            if classify(status, session=True, body=failure.body) is not Status.SESSION_GONE:
                raise failure
            body = failure.body
        else:
            return
        log.info("%s: the server forgot the session", self.name)
        raise SessionExpired(f"MCP server {self.name!r} no longer knows the session "
                             f"(HTTP {status})", sid, status, body)
