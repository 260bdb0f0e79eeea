"""The parts of the Streamable HTTP transport and its channel, each on its own: the session
and its headers (http_session), delivering before start (http_answers), the pooled
connections told to the channel (http_pool)."""
from __future__ import annotations

import pytest
import requests

from raider_sync.errors import ConnectionClosed
from raider_sync.transports.http import StreamableHttpTransport
from raider_sync.transports.http_common import HttpChannel
from raider_sync.transports.http_pool import pooled_session
from raider_sync.transports.http_session import SessionHeaders

from fakes.http_fault_server import fault_servers

WAIT = 10.0


@pytest.fixture
def fake():
    yield from fault_servers()


def _answer(session_id: str | None = None) -> requests.Response:
    response = requests.Response()
    if session_id is not None:
        response.headers["Mcp-Session-Id"] = session_id
    return response


def test_the_first_answer_naming_a_session_starts_it_and_only_the_one_in_use_is_dropped():
    channel = HttpChannel("http://127.0.0.1:9/mcp", name="x")
    try:
        session = SessionHeaders("x", channel)
        session.learn(_answer())
        assert session.session_id is None
        session.learn(_answer("s1"))
        session.learn(_answer("s2"))  # a session is started once
        session.protocol_version = "2025-11-25"
        assert session.headers("s1", post=True) == {
            "Accept": "application/json, text/event-stream", "Content-Type": "application/json",
            "Mcp-Session-Id": "s1", "MCP-Protocol-Version": "2025-11-25"}
        session.drop("s0")
        assert session.session_id == "s1"
        session.drop("s1")
        assert (session.session_id, session.protocol_version, session.expired) == \
            (None, None, "s1")
        assert session.headers(None, last_event_id="7") == {"Accept": "text/event-stream",
                                                            "Last-Event-ID": "7"}
        session.learn(_answer("s2"))
        assert (session.session_id, session.expired) == ("s2", None)
    finally:
        channel.close()


def test_an_answer_to_a_transport_that_was_not_started_fails_with_connection_closed(fake):
    transport = StreamableHttpTransport(fake(answer="json").url, name="unstarted")
    try:
        with pytest.raises(ConnectionClosed, match="not started"):
            transport.send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                       "clientInfo": {"name": "wire", "version": "1"}}},
                           deadline=None)
    finally:
        transport.close()


def test_the_pooled_session_tells_each_connection_as_it_opens_and_closes(fake):
    url = fake(answer="json").url
    told: list[tuple[str, bool]] = []
    http = pooled_session(url, lambda connection, opened: told.append(
        (type(connection).__name__, opened)))
    try:
        http.get(url, timeout=WAIT).close()
        assert told == [("HTTPConnection", True)]
    finally:
        http.close()
    assert told == [("HTTPConnection", True), ("HTTPConnection", False)]
