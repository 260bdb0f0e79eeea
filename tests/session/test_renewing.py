"""The JSON-RPC session renews a session its server forgot (raider_sync.session.renewing): once
however many requests found it gone, through the owner's renew_session, and sends again."""
from __future__ import annotations

import threading

import pytest

from raider_sync.errors import SessionExpired, TransportError
from raider_sync.jsonrpc import Session
from raider_sync.threads.futures import Deadline
from raider_sync.transports.base import StreamHealth

from conftest import poll
from fakes.memory_transport import WAIT, MemoryTransport, make


class SessionTransport(MemoryTransport):
    """A transport with sessions, as Streamable HTTP has: every request is answered at once
    (its result names the session it went in); one sent in a forgotten session raises
    SessionExpired; outside a session, the answer starts a new one. ``gate``, when set, holds
    the sends in a forgotten session until that many are under way at once."""

    def __init__(self):
        super().__init__()
        self.session: str | None = "s1"
        self.forgotten: set[str] = set()
        self.dropped: list[str] = []
        self.sent_in: list[tuple[str, str | None]] = []
        self.gate: threading.Barrier | None = None
        self._count = 1

    def send(self, message, *, deadline=None):
        sid = self.session
        if sid in self.forgotten:
            if self.gate is not None:
                self.gate.wait()
            raise SessionExpired("MCP server 'mem' no longer knows the session (HTTP 404)",
                                 sid)
        self.sent_in.append((message.get("method"), sid))
        if sid is None:
            self._count += 1
            self.session = f"s{self._count}"
        super().send(message, deadline=deadline)
        if "method" in message and "id" in message:
            self.deliver({"jsonrpc": "2.0", "id": message["id"],
                          "result": {"session": self.session}})

    def drop_session(self, session):
        self.dropped.append(session)
        if self.session == session:
            self.session = None


def _renewing(session: Session, renewals: list, fail: list | None = None) -> None:
    """Set the owner's renew_session: an initialize through the session, as McpServer's."""
    def renew(deadline: Deadline) -> None:
        renewals.append(threading.current_thread().name)
        if fail:
            raise fail.pop(0)
        session.request("initialize", deadline=deadline, cancellable=False)
    session.renew_session = renew


def test_requests_that_find_the_session_gone_renew_it_once_and_are_sent_again():
    transport = SessionTransport()
    session, _ = make(transport)
    renewals: list[str] = []
    _renewing(session, renewals)
    try:
        assert session.request("tools/list", timeout=WAIT) == {"session": "s1"}
        transport.forgotten.add("s1")
        transport.gate = threading.Barrier(6, timeout=WAIT)  # all six find it gone at once
        results: list = []
        threads = [threading.Thread(target=lambda: results.append(
            session.request("tools/list", timeout=WAIT))) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(WAIT)
            assert not thread.is_alive()
        assert results == [{"session": "s2"}] * 6
        assert len(renewals) == 1 and transport.dropped == ["s1"]
        # the renewal's initialize went outside any session; everything else in one
        assert ("initialize", None) in transport.sent_in
        assert {sid for method, sid in transport.sent_in[1:] if method != "initialize"} == {"s2"}
    finally:
        session.close()


def test_a_renewal_that_fails_fails_the_request_and_the_next_request_renews_first():
    transport = SessionTransport()
    session, _ = make(transport)
    renewals: list[str] = []
    _renewing(session, renewals, fail=[TransportError("the server is down", None)])
    try:
        transport.forgotten.add("s1")
        with pytest.raises(TransportError, match="no longer knows the session") as caught:
            session.request("tools/list", timeout=WAIT)
        assert "could not be started: the server is down" in str(caught.value)
        assert caught.value.status_code is None  # the renewal's: the server is out of reach
        assert not isinstance(caught.value, SessionExpired)
        # the session was dropped; the next request does not go out in none, it renews first
        assert session.request("tools/list", timeout=WAIT) == {"session": "s2"}
        assert len(renewals) == 2
        assert transport.sent_in[-2:] == [("initialize", None), ("tools/list", "s2")]
    finally:
        session.close()


def test_a_notification_in_a_forgotten_session_renews_it_and_goes_again():
    transport = SessionTransport()
    session, _ = make(transport)
    renewals: list[str] = []
    _renewing(session, renewals)
    try:
        transport.forgotten.add("s1")
        session.notify("notifications/roots/list_changed")
        assert len(renewals) == 1
        assert transport.sent_in[-1] == ("notifications/roots/list_changed", "s2")
    finally:
        session.close()


def test_without_renew_session_a_request_fails_with_session_expired():
    transport = SessionTransport()
    session, _ = make(transport)
    try:
        transport.forgotten.add("s1")
        with pytest.raises(SessionExpired) as caught:
            session.request("tools/list", timeout=WAIT)
        assert caught.value.session == "s1" and caught.value.status_code == 404
        assert transport.dropped == []
    finally:
        session.close()


def test_a_stream_that_finds_its_session_gone_has_it_renewed_on_a_session_thread():
    transport = SessionTransport()
    settled: list = []
    session, _ = make(transport, on_settle=settled.append)
    renewals: list[str] = []
    _renewing(session, renewals)
    try:
        transport.forgotten.add("s1")
        transport.deliver(StreamHealth(SessionExpired("the GET stream's session is gone", "s1")))
        poll(lambda: renewals, WAIT, "the renewal")
        assert renewals[0].startswith("raider-mem-session")
        poll(lambda: transport.session == "s2", WAIT, "the new session")
        # no request's outcome: the owner hears only of the renewal's initialize answer
        assert all(error is None for error in settled)
    finally:
        session.close()
