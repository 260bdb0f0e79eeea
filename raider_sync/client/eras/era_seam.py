"""The one place a connection's era is chosen: :func:`open_era`.

It settles the era when a connection starts (:mod:`.negotiate`: probe with
``server/discover``, or the ``initialize`` handshake) and returns the era's strategy, a
:class:`~.handshake.HandshakeEra` or a :class:`~.stateless.StatelessEra`. Both offer the same
narrow interface, and the connection asks its era and never re-derives it:

- ``description``: what the server said of itself (a :class:`~.modern.Description`);
- ``request_f(method, params, cache, **options)``: send a request the era's way;
- ``listen(...)``: a :class:`~.listen.Subscription` to changes;
- ``check_tool(tool)``: why a listed tool is dropped, or None;
- ``connected()``: what the era does once the server is connected;
- ``renew(deadline, message)``: a new session in place of a forgotten one (handshake era).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Union

from ...threads.futures import Deadline
from . import liveness
from .handshake import HandshakeEra, handshake
from .host import EraHost, EraSettings
from .modern import modern_capabilities, with_tasks
from .negotiate import LEGACY_FIX, PROBE_TIMEOUT, check_choice, discover_sender, remembered
from .negotiate import open_era as settle_era
from .rounds import MAX_INPUT_ROUNDS
from .stateless import ACKNOWLEDGE_WAIT, MAX_RELISTEN_DELAY, StatelessEra, relisten_delay

if TYPE_CHECKING:  # pragma: no cover
    from ...jsonrpc import Session

__all__ = ["ACKNOWLEDGE_WAIT", "Era", "EraHost", "EraSettings", "HandshakeEra",
           "MAX_INPUT_ROUNDS", "MAX_RELISTEN_DELAY", "PROBE_TIMEOUT", "StatelessEra",
           "check_choice", "open_era", "relisten_delay"]

#: a connection's era: the strategy its requests are sent by
Era = Union[HandshakeEra, StatelessEra]


def open_era(session: "Session", host: EraHost, deadline: Deadline,
             timeout_message: str) -> Era:
    """Settle the era of a new connection (probe, or handshake) within ``deadline``; the
    era's strategy, whose ``description`` says what the server said of itself. Raises what
    refuses the server (UnsupportedProtocol, McpError) and what the session raises."""
    settings = host.settings
    transport = session.transport
    session.stamp = None
    host.cache.clear()
    capabilities = modern_capabilities(settings.capabilities())
    if settings.tasks is not False:  # calls may become tasks (SEP-2663): every request says so
        capabilities = with_tasks(capabilities)
    stdio = settings.transport == "stdio"
    # over stdio the probe can tell a server ignoring it from a slow one; over HTTP a
    # slow answer may be an authorization under way, and the server answers anyway
    send = discover_sender(session, transport, capabilities, settings.client_info,
                           liveness=stdio, stalled=_stall_warning(host) if stdio else None)
    shaken: list[HandshakeEra] = []

    def run_handshake(version: str) -> None:
        transport.stateless(None)
        session.stamp = None
        shaken[:] = [HandshakeEra(session, host, handshake(session, host, deadline,
                                                           timeout_message, version))]

    protocol = settings.protocol
    if settings.transport == "sse" and protocol == "auto":
        protocol = "legacy"  # HTTP+SSE belongs to the handshake era alone
    description = settle_era(protocol, settings.fingerprint, send, run_handshake, deadline,
                             settings.probe_timeout, warn=host.warn)
    if description is not None:
        return StatelessEra(session, host, description, capabilities)
    return shaken[-1]


def _stall_warning(host: EraHost):
    def stalled(seconds_left: float) -> None:
        """The probe has waited long: say so, and how to skip it, unless the server was
        found to speak the stateless era before (then it is only slow to start)."""
        if remembered(host.settings.fingerprint) == "modern":
            return
        host.warn(f"no answer to server/discover after {liveness.STALL_WARNING:g} s; "
                  f"waiting up to {seconds_left:.0f} s more (a server still starting answers "
                  f"late); if it speaks only the initialize handshake, {LEGACY_FIX} to start "
                  f"it without the probe")
    return stalled
