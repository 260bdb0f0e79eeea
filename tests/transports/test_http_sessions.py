"""The Streamable HTTP transport raises and reports; it never decides, and never calls up.

Against tests/fakes/http_fault_server.py, a server that forgets its sessions on demand: a
forgotten session is a SessionExpired from ``send`` (or, for the GET stream, a StreamHealth
carrying one), the session is left only when the owner says so (``drop_session``), an error
status in the stateless revision is an AnswerInBody, and ``abandon`` is the stateless cancel.
"""
from __future__ import annotations

import queue

import pytest

from raider_sync.errors import AnswerInBody, SessionExpired, TransportError
from raider_sync.protocol.codes import INVALID_REQUEST
from raider_sync.protocol.http_headers import message_headers
from raider_sync.protocol.messages import error_in_body
from raider_sync.transports.base import RequestFailed, StreamHealth
from raider_sync.transports.http import StreamableHttpTransport

from conftest import poll
from fakes.http_fault_server import fault_servers

WAIT = 10.0
STATELESS = "2026-07-28"


@pytest.fixture
def fake():
    yield from fault_servers()


@pytest.fixture
def connect():
    """``connect(fake)``: a started transport to the fake and the queue of what it delivers;
    closed afterwards."""
    made: list[StreamableHttpTransport] = []

    def make(server):
        transport = StreamableHttpTransport(server.url, name="wire")
        delivered: "queue.Queue" = queue.Queue()
        transport.start(delivered.put, delivered.put, timeout=WAIT)
        made.append(transport)
        return transport, delivered

    yield make
    for transport in made:
        transport.close()


def initialize(transport, delivered, request_id: int) -> dict:
    transport.send_awaited({"jsonrpc": "2.0", "id": request_id, "method": "initialize",
                            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                       "clientInfo": {"name": "wire", "version": "1"}}})
    return delivered.get(timeout=WAIT)


def _posted_in(server, method: str) -> list:
    """The session id each POST of ``method`` carried (None: none)."""
    return [headers.get("mcp-session-id") for kind, _path, headers, body in server.seen
            if kind == "POST" and isinstance(body, dict) and body.get("method") == method]


def _got_in(server) -> list:
    """The session id each GET carried."""
    return [headers.get("mcp-session-id") for kind, _path, headers, _body in server.seen
            if kind == "GET"]


def test_a_request_in_a_forgotten_session_raises_session_expired_and_the_owner_drops_it(
        fake, connect):
    server = fake(answer="json")
    transport, delivered = connect(server)
    assert initialize(transport, delivered, 1)["result"]["protocolVersion"] == "2025-11-25"
    assert transport.session_id == "s1"
    server.forget_sessions()
    with pytest.raises(SessionExpired) as caught:
        transport.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    assert caught.value.session == "s1" and caught.value.status_code == 404
    assert "no longer knows the session" in str(caught.value)
    # the transport decides nothing: the session is still the one it had, until told
    assert transport.session_id == "s1" and delivered.empty()
    transport.drop_session("s2")  # not the session in use: nothing changes
    assert transport.session_id == "s1"
    transport.drop_session("s1")
    assert transport.session_id is None and transport.protocol_version is None
    assert initialize(transport, delivered, 3)["id"] == 3
    assert transport.session_id == "s2"
    assert _posted_in(server, "initialize") == [None, None]
    assert _posted_in(server, "ping") == ["s1"]


def test_a_refusal_outside_a_session_is_no_session_expired(fake, connect):
    """A 404 to a request that carried no session says nothing of a session."""
    transport, _ = connect(fake(answer="json"))
    with pytest.raises(TransportError) as caught:
        transport.send({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert caught.value.status_code == 404
    assert not isinstance(caught.value, (SessionExpired, AnswerInBody))


def test_the_get_stream_reports_its_session_gone_and_opens_again_in_the_next(fake, connect):
    server = fake(answer="json")
    transport, delivered = connect(server)
    initialize(transport, delivered, 1)
    server.forget_sessions()
    transport.negotiated("2025-11-25", WAIT)  # opens the GET stream, in the forgotten s1
    health = delivered.get(timeout=WAIT)
    assert isinstance(health, StreamHealth) and isinstance(health.error, SessionExpired)
    assert health.error.session == "s1"
    # the owner starts a new session; negotiated() wakes the stream, which opens in it
    transport.drop_session("s1")
    initialize(transport, delivered, 2)
    transport.negotiated("2025-11-25", WAIT)
    poll(lambda: "s2" in _got_in(server), WAIT, "a GET in the new session")
    poll(lambda: transport._listen.stream is not None, WAIT, "the GET stream open")
    assert _got_in(server)[0] == "s1" and None not in _got_in(server)


def test_in_the_stateless_revision_an_error_status_is_an_answer_in_body(fake, connect):
    """The transport reports the status and the body; reading the error answer out of it
    is the session's (see test_jsonrpc_session)."""
    transport, _ = connect(fake(answer="json"))
    transport.stateless(STATELESS, message_headers)
    with pytest.raises(AnswerInBody) as caught:  # the fake refuses it: no session
        transport.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert caught.value.status_code == 404
    assert error_in_body(caught.value.body)["code"] == INVALID_REQUEST


@pytest.mark.parametrize("era", ["stateless", "handshake"])
def test_abandon_shuts_the_answers_stream_in_the_stateless_revision_only(fake, connect, era):
    server = fake(answer="sse", stateless=era == "stateless")
    transport, delivered = connect(server)
    if era == "stateless":
        transport.stateless(STATELESS, message_headers)
    else:
        initialize(transport, delivered, 1)
    transport.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                    "params": {"name": "endless", "arguments": {}}})
    poll(lambda: 7 in transport._answers.streams, WAIT, "the answer's stream read")
    transport.abandon(7)
    transport.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                    "params": {"requestId": 7}})
    if era == "stateless":
        assert 7 not in transport._answers.streams  # shut: that revision's cancel
        assert "notifications/cancelled" not in server.methods()  # no notifications at all
        # the reader let go of the stream; whatever it reports of it concerns request 7 only
        while not delivered.empty():
            item = delivered.get_nowait()
            assert not isinstance(item, RequestFailed) or item.request_id == 7
    else:
        assert 7 in transport._answers.streams  # still read: the cancellation is a message
        assert server.methods().count("notifications/cancelled") == 1
