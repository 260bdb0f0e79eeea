"""What an HTTP exchange's outcome says, decided in one place.

    classify(404, session=True)            # Status.SESSION_GONE
    classify(503)                          # Status.UNREACHABLE
    classify_error(transport_error)        # the same, for a TransportError raised

Every HTTP transport, and every owner that looks at a TransportError, asks here: the
transports when a request was refused (:mod:`.http_common`, :mod:`.http`), the client when
it decides whether a server is out of reach (``degraded``), whether a refused initialize is
the stateless revision's, and whether a refused probe is a verdict on the era. Nothing here
blocks or reads anything.
"""
from __future__ import annotations

import enum

from ..errors import SessionExpired, TransportError
from ..protocol.revisions import STATELESS_PROTOCOL_VERSION


class Status(enum.Enum):
    """What an HTTP status (or the lack of one) says about an exchange."""

    #: below 400: the server took the request
    ANSWERED = "answered"
    #: nothing came back (no status: the exchange failed), or the server's gateway gave up
    #: on it (502, 503, 504): the server is out of reach, and may come back
    UNREACHABLE = "unreachable"
    #: the deadline of the request passed during the exchange: its own timeout says so
    TIMED_OUT = "timed out"
    #: 404 to a request that carried a session id (or a 400 whose body is about the session,
    #: as older TypeScript servers answer): the server forgot the session
    SESSION_GONE = "session gone"
    #: 401 or 403: the credentials were refused
    AUTH = "auth"
    #: a 400 naming the stateless revision: the server speaks only that one
    STATELESS_REFUSAL = "stateless refusal"
    #: any other 5xx: the server failed at the request
    SERVER_ERROR = "server error"
    #: any other 4xx: the server refused the request
    REFUSED = "refused"


#: statuses of a server out of reach behind its gateway or balancer
_GATEWAY_GAVE_UP = frozenset({502, 503, 504})


def classify(status: int | None, *, session: bool = False, body: str = "") -> Status:
    """What ``status`` says. ``session``: the request carried a session id; ``body``: what
    is known of the answer's body, or the error's text (needed only for a 400, which may be
    about the session or name the stateless revision)."""
    if status is None or status in _GATEWAY_GAVE_UP:
        return Status.UNREACHABLE
    if status < 400:
        return Status.ANSWERED
    if session and (status == 404 or (status == 400 and "session" in body.lower())):
        return Status.SESSION_GONE
    if status in (401, 403):
        return Status.AUTH
    if status == 400 and STATELESS_PROTOCOL_VERSION in body:
        return Status.STATELESS_REFUSAL
    if status >= 500:
        return Status.SERVER_ERROR
    return Status.REFUSED


def classify_error(error: TransportError) -> Status:
    """What a TransportError raised by an HTTP transport says (its status, message and body
    read as :func:`classify` reads them; a SessionExpired is SESSION_GONE)."""
    if isinstance(error, DeadlinePassed):
        return Status.TIMED_OUT
    if isinstance(error, SessionExpired):
        return Status.SESSION_GONE
    return classify(error.status_code, body=f"{error} {error.body}")


class DeadlinePassed(TransportError):
    """The call's deadline passed during the exchange (the session's deadline, on the
    process timer, fails the call and cancels it at the server; the transport only stops)."""
