"""Sessions of the handshake era over HTTP (``Mcp-Session-Id``), for an app made with
``wsgi_app(tools, sessions=True)``.

An ``initialize`` opens a session: its answer carries a new, unguessable ``Mcp-Session-Id``,
and every later request of that client carries it (a request without it is refused with 400,
one with an unknown or ended id with 404, as the transport says). A session keeps what the
stateless app cannot: the client's capabilities for its handlers' contexts, the level of
``logging/setLevel``, its resource subscriptions, the contexts of its running requests (a
``notifications/cancelled`` reaches the handler), and its event streams, each resumable with
``Last-Event-ID`` (:mod:`.resumable`): the GET stream that carries the tool list's changes
and the updates of subscribed resources, and the stream of each request answered with one
(the last :data:`KEEP_ENDED_STREAMS` of those once they ended).
DELETE ends the session. Sessions live in the process that opened them: several processes
behind a load balancer need sticky routing by ``Mcp-Session-Id`` (or the stateless era).
"""
from __future__ import annotations

import collections
import itertools
import secrets
import threading
import time
from typing import Any

from .resumable import ResumableStream
from .serving import ToolServerAnswers

#: seconds a client is told to wait before it resumes a stream the server cut
RETRY_MS = 500
#: seconds a session with no request is kept before it is forgotten
IDLE_TIMEOUT = 3600.0
#: the ended call streams a session keeps for a client that resumes one (the oldest go first)
KEEP_ENDED_STREAMS = 32


class HttpSession(ToolServerAnswers):
    """One client's session: the answers of :class:`ToolServerAnswers`, with what a session
    keeps. Thread-safe."""

    one_client = True

    def __init__(self, tool_server, session_id: str, *, page_size: int, keepalive: float):
        super().__init__(tool_server, page_size=page_size)
        self.session_id = session_id
        self.keepalive = keepalive
        self.last_used = time.monotonic()
        self._lock = threading.Lock()
        self._numbers = itertools.count(1)
        self._streams: dict[str, ResumableStream] = {}
        self._ended_streams: collections.deque[str] = collections.deque()
        self.ended = False

    # -- streams -------------------------------------------------------------------------

    def new_stream(self, kind: str = "s") -> ResumableStream:
        """A new resumable stream of this session (``kind`` "g" for a GET stream)."""
        stream_id = f"{kind}{next(self._numbers)}"
        stream = ResumableStream(stream_id, keepalive=self.keepalive, retry_ms=RETRY_MS,
                                 on_end=self._stream_ended)
        with self._lock:
            self._streams[stream_id] = stream
        return stream

    def _stream_ended(self, stream: ResumableStream) -> None:
        """Keep the last :data:`KEEP_ENDED_STREAMS` ended streams, not every one a long
        session ever answered with (each keeps its events)."""
        with self._lock:
            if stream.stream_id not in self._streams:
                return  # the session ended
            self._ended_streams.append(stream.stream_id)
            while len(self._ended_streams) > KEEP_ENDED_STREAMS:
                self._streams.pop(self._ended_streams.popleft(), None)

    def stream(self, stream_id: str) -> ResumableStream | None:
        with self._lock:
            return self._streams.get(stream_id)

    def announce(self, message: dict, uri: str | None = None) -> None:
        """Send a notification on the session's GET streams (a resource update only when
        ``uri`` is subscribed)."""
        if uri is not None:
            with self._subscriptions_lock:
                if uri not in self.subscriptions:
                    return
        with self._lock:
            streams = [s for sid, s in self._streams.items() if sid.startswith("g")
                       and not s.ended]
        for stream in streams:
            stream.put(message)

    def end(self) -> None:
        """End the session: its streams end, its handlers are told they are cancelled."""
        with self._lock:
            self.ended = True
            streams, self._streams = list(self._streams.values()), {}
        for stream in streams:
            stream.end()
        self.cancel_running()


class Sessions:
    """The sessions of one app, by id. Thread-safe."""

    def __init__(self, tool_server, *, page_size: int, keepalive: float,
                 idle_timeout: float = IDLE_TIMEOUT):
        self.tool_server = tool_server
        self.page_size = page_size
        self.keepalive = keepalive
        self.idle_timeout = idle_timeout
        self._lock = threading.Lock()
        self._sessions: dict[str, HttpSession] = {}
        tool_server.add_listener(self._tools_changed)
        tool_server.add_resource_listener(self._resource_updated)

    def open(self) -> HttpSession:
        """A new session (sessions idle longer than ``idle_timeout`` are forgotten first)."""
        self._forget_idle()
        session = HttpSession(self.tool_server, secrets.token_urlsafe(24),
                              page_size=self.page_size, keepalive=self.keepalive)
        with self._lock:
            self._sessions[session.session_id] = session
        return session

    def get(self, session_id: str | None) -> HttpSession | None:
        with self._lock:
            session = self._sessions.get(session_id) if session_id else None
        if session is not None:
            session.last_used = time.monotonic()
        return session

    def end(self, session_id: str | None) -> bool:
        """End a session; False when there is none by that id."""
        with self._lock:
            session = self._sessions.pop(session_id, None) if session_id else None
        if session is None:
            return False
        session.end()
        return True

    def close(self) -> None:
        """End every session. Safe to call twice."""
        self.tool_server.remove_listener(self._tools_changed)
        self.tool_server.remove_resource_listener(self._resource_updated)
        with self._lock:
            sessions, self._sessions = list(self._sessions.values()), {}
        for session in sessions:
            session.end()

    def _forget_idle(self) -> None:
        now = time.monotonic()
        with self._lock:
            idle = [sid for sid, s in self._sessions.items()
                    if now - s.last_used > self.idle_timeout]
        for session_id in idle:
            self.end(session_id)

    def _all(self) -> list[HttpSession]:
        with self._lock:
            return list(self._sessions.values())

    def _tools_changed(self, _server: Any) -> None:
        for session in self._all():
            session.announce({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})

    def _resource_updated(self, uri: str) -> None:
        for session in self._all():
            session.announce({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                              "params": {"uri": uri}}, uri=uri)
