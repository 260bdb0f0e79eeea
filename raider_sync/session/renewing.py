"""A new session in place of one the server forgot, for a JSON-RPC session's transport.

When the transport raises :class:`~raider_sync.errors.SessionExpired` (Streamable HTTP's
404), :class:`SessionRenewal` has the owner start a new session (its ``hook``, the
``renew_session`` of :class:`~raider_sync.jsonrpc.Session`), once however many requests
found the old one gone, while every other send waits for it; the senders then send once
more. Waiting blocks at most until the deadline given (else :data:`RENEW_TIMEOUT` s).
"""
from __future__ import annotations

import logging
from typing import Any, Callable

from ..errors import RaiderError, SessionExpired, TransportError
from ..threads.futures import Deadline
from ..threads.renewal import Renewal

log = logging.getLogger("raider_sync.jsonrpc")

#: seconds a renewal of the session may take when no request's deadline bounds it (one the
#: transport's GET stream asked for), and a message without a deadline waits for one
RENEW_TIMEOUT = 30.0


class SessionRenewal:
    """The renewals of the sessions of ``transport`` (its ``drop_session(session)``, when it
    has one, is called before the owner's ``hook(deadline)`` starts a new one). A failed
    renewal of a stream's session is told to ``tell(error)`` (the owner's ``on_settle``)."""

    def __init__(self, name: str, transport: Any, tell: Callable[[BaseException | None], None]):
        self.name = name
        self._transport = transport
        self._tell = tell
        #: ``hook(deadline)``: start a new session within the deadline, or raise RaiderError;
        #: None: a request that finds its session gone fails with the SessionExpired
        self.hook: Callable[[Deadline], None] | None = None
        # one at a time; the others' sends wait for it
        self._renewal = Renewal(key=lambda expired: expired.session)

    @property
    def here(self) -> bool:
        """Whether the calling thread is renewing (its request is the renewal's own)."""
        return self._renewal.here

    @property
    def settled(self) -> bool:
        """Whether a send may go at once: no renewal under way or failed."""
        return self._renewal.settled

    def wait(self, deadline: Deadline | None, renew: bool = False) -> bool:
        """Wait while another thread renews the session (at most until ``deadline``, else
        RENEW_TIMEOUT s); with ``renew``, renew it first when the last renewal failed. False
        when the deadline passed first. Raises what :meth:`renew` raises."""
        end = Deadline(RENEW_TIMEOUT) if deadline is None else deadline
        if not self._renewal.wait(end):
            return False
        failed = self._renewal.failed if renew and not self._renewal.here else None
        return failed is None or self.renew(failed, end)

    def renew(self, expired: SessionExpired, deadline: Deadline) -> bool:
        """Have the owner start a new session in place of the one ``expired`` names, once
        however many requests found it gone: the first renews (``hook``, on its thread,
        within ``deadline``), the others wait for it. True when a new session is there;
        False when ``deadline`` passed while waiting. Raises ``expired`` without a ``hook``,
        TransportError when the renewal failed."""
        hook = self.hook
        if hook is None:
            raise expired

        def renew() -> None:
            log.info("%s: the server forgot the session; starting a new one", self.name)
            drop = getattr(self._transport, "drop_session", None)
            if drop is not None:
                drop(expired.session)
            try:
                hook(deadline)
            except RaiderError as exc:
                # the status is the renewal's when it has one: a server out of reach says so
                status = (exc.status_code if isinstance(exc, TransportError)
                          else expired.status_code)
                raise TransportError(f"{expired}, and a new session could not be started: "
                                     f"{exc}", status, expired.body) from exc
        return self._renewal.run(expired, renew, deadline)

    def for_stream(self, expired: SessionExpired) -> None:
        """A stream of the transport (HTTP's GET stream) found its session gone: renew it
        (called on a sender thread). A failure is told as that stream's health."""
        try:
            self.renew(expired, Deadline(RENEW_TIMEOUT))
        except RaiderError as exc:
            log.warning("%s: %s", self.name, exc)
            self._tell(exc)
