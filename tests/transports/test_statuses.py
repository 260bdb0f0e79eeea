"""The one place an HTTP status is classified: what each says, for a status or an error."""
from __future__ import annotations

import pytest
import requests

from raider_sync.errors import AnswerInBody, LostInFlight, SessionExpired, TransportError
from raider_sync.transports.http_common import unreachable
from raider_sync.transports.statuses import DeadlinePassed, Status, classify, classify_error


@pytest.mark.parametrize("status, session, body, expected", [
    (None, False, "", Status.UNREACHABLE),
    (502, False, "", Status.UNREACHABLE),
    (503, True, "", Status.UNREACHABLE),
    (504, False, "", Status.UNREACHABLE),
    (200, True, "", Status.ANSWERED),
    (202, False, "", Status.ANSWERED),
    (404, True, "", Status.SESSION_GONE),
    (404, False, "", Status.REFUSED),       # no session was sent: nothing to forget
    (400, True, "Bad Request: No valid session ID provided", Status.SESSION_GONE),
    (400, False, "Bad Request: No valid session ID provided", Status.REFUSED),
    (400, True, "bad json", Status.REFUSED),
    (401, False, "", Status.AUTH),
    (403, True, "", Status.AUTH),
    (400, False, "Unsupported protocol version (supported versions: 2026-07-28)",
     Status.STATELESS_REFUSAL),
    (500, False, "", Status.SERVER_ERROR),
    (501, True, "", Status.SERVER_ERROR),
    (405, False, "", Status.REFUSED),
    (413, False, "", Status.REFUSED),
])
def test_a_status_is_classified_by_what_it_says(status, session, body, expected):
    assert classify(status, session=session, body=body) is expected


def test_an_error_is_classified_by_its_status_message_and_body():
    assert classify_error(TransportError("x answered HTTP 503", 503)) is Status.UNREACHABLE
    assert classify_error(TransportError("x answered HTTP 401", 401)) is Status.AUTH
    # the stateless revision's refusal is found in the message as well as in the body
    refusal = TransportError("x answered HTTP 400: supported versions: 2026-07-28", 400)
    assert classify_error(refusal) is Status.STATELESS_REFUSAL
    assert classify_error(TransportError("x", 400, "only 2026-07-28")) is Status.STATELESS_REFUSAL
    assert classify_error(AnswerInBody("x answered HTTP 500", 500)) is Status.SERVER_ERROR


def test_a_passed_deadline_is_no_sign_of_an_unreachable_server():
    """Its status is none, like an unreachable server's; the request's own timeout says
    what happened, so it is not UNREACHABLE (which makes a server ``degraded``)."""
    assert classify_error(DeadlinePassed("the deadline passed")) is Status.TIMED_OUT


def test_session_expired_is_session_gone_whatever_its_status():
    assert classify_error(SessionExpired("gone", "s1")) is Status.SESSION_GONE
    assert classify_error(SessionExpired("gone", "s1", 400, "no session")) is Status.SESSION_GONE


def test_what_unreachable_makes_of_an_exchange_that_failed_is_unreachable():
    refused = unreachable(requests.exceptions.ConnectionError("refused"), "http://h/mcp")
    assert "cannot connect" in str(refused)
    assert classify_error(refused) is Status.UNREACHABLE
    lost = LostInFlight("the connection was reset during the request")
    assert classify_error(lost) is Status.UNREACHABLE
