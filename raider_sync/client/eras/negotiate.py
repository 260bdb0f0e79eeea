"""Which era a server speaks: probe with ``server/discover``, fall back to the handshake.

``protocol`` (``McpServer(protocol=...)`` or the ``.mcp.json`` key) chooses:

- ``"auto"`` (default): ``server/discover`` at the newest stateless revision. A discover
  result sharing a revision, or an error only a stateless server answers (-32020, -32021,
  -32022 naming a revision in common) means the stateless era. Any other error answer, an
  HTTP 4xx without such a body, a result that is not a discover result, or no answer within
  the probe's time means the handshake era: ``initialize``. The probe's time is
  ``probe_timeout``, or two thirds of the startup time left if more (a starting stdio process
  answers nothing until its imports are done; the last third stays for ``initialize``).
  Over stdio a ``ping`` follows a discover request unanswered for a second, and a server
  that answers it but not the discover request is a handshake-era one at once
  (:mod:`.liveness`); a wait of more than a few seconds is logged as a warning naming the
  fix. The fallback is never keyed to one error code. Unreachable servers, 401 and 403 are
  no verdict: they fail the start. The verdict is remembered per server fingerprint, across
  processes (:mod:`.verdicts`); a legacy verdict that a later ``initialize`` contradicts
  (-32022) is dropped and the server probed again.
- ``"modern"``: the same probe, but a handshake-era server fails the start with
  UnsupportedProtocol, naming the revisions on both sides and the fix.
- ``"legacy"``: the handshake only.
- an exact revision: ``"2026-07-28"`` skips the fallback (a handshake-era server fails the
  start as with ``"modern"``); a handshake revision is offered in ``initialize``.
"""
from __future__ import annotations

from typing import Callable

from ...errors import (
    ConnectionClosed,
    McpError,
    RaiderError,
    RequestTimeout,
    TransportError,
    UnsupportedProtocol,
)
from ...protocol.codes import STATELESS_CODES, UNSUPPORTED_VERSION
from ...threads.futures import Deadline
from ...transports.statuses import Status, classify_error
from . import verdicts
from .liveness import Ignored, await_discover
from .modern import (
    LEGACY_VERSIONS,
    META_CAPABILITIES,
    MODERN_VERSIONS,
    NO_TASKS,
    PROTOCOL_CHOICES,
    Description,
    describe,
    no_overlap,
    pick_version,
    request_meta,
    stamp,
    supported_of,
    without_tasks,
)

#: seconds the discover probe may take before the server counts as a handshake-era one
PROBE_TIMEOUT = 10.0
#: what a message says to skip the probe of a handshake-era server
LEGACY_FIX = 'set "protocol": "legacy" in its entry'


def remembered(fingerprint: str) -> str | None:
    """The era last found for the server with ``fingerprint`` ("modern", "legacy"), or None
    (see :mod:`.verdicts`)."""
    return verdicts.recall(fingerprint)


def remember(fingerprint: str, era: str | None) -> None:
    """Remember ``era`` for the server with ``fingerprint`` (None forgets it)."""
    verdicts.keep(fingerprint, era)


def check_choice(protocol: str) -> str:
    """``protocol`` if raider_sync can honour it; raises ValueError naming the choices."""
    if protocol not in PROTOCOL_CHOICES:
        raise ValueError(f"protocol must be one of {', '.join(PROTOCOL_CHOICES)}, "
                         f"not {protocol!r}")
    return protocol


class LegacyVerdict(RaiderError):
    """The probe found a handshake-era server; the message says what it answered.
    ``supported``: the revisions the server named, if it named any; ``unanswered``: the
    verdict is its silence (or its ignoring the probe), which cost the start time."""

    def __init__(self, message: str, *, supported: list | None = None,
                 unanswered: bool = False):
        super().__init__(message)
        self.supported = supported
        self.unanswered = unanswered


Probe = Callable[[str, float], dict]

#: what a refused probe says when it is no verdict on the era: the server is out of reach,
#: wants credentials, or failed (the start fails with it)
_NO_VERDICT = (Status.UNREACHABLE, Status.TIMED_OUT, Status.AUTH, Status.SERVER_ERROR)


def probe(send: Probe, version: str, timeout: float, *, retried: bool = False,
          offered: tuple[str, ...] = MODERN_VERSIONS) -> Description:
    """``server/discover`` at ``version`` through ``send(version, seconds)`` (which returns the
    result or raises). The server's Description when it speaks a stateless revision of
    ``offered``. Raises LegacyVerdict when it speaks only the handshake, UnsupportedProtocol
    when it shares no revision with raider_sync, and passes on what is no verdict (an
    unreachable server, 401/403, a closed connection)."""
    try:
        result = send(version, timeout)
    except McpError as exc:
        if exc.code == UNSUPPORTED_VERSION and supported_of(exc) is not None:
            supported = supported_of(exc) or []
            modern = pick_version(supported, offered)
            if modern is not None and not retried:
                return probe(send, modern, timeout, retried=True, offered=offered)
            if modern is None and pick_version(supported, LEGACY_VERSIONS):
                raise LegacyVerdict(f"the server supports {', '.join(supported)}",
                                    supported=supported) from None
            raise no_overlap(supported, offered + LEGACY_VERSIONS) from None
        if exc.code in STATELESS_CODES:
            raise  # a stateless server refusing the probe itself: its reason is the failure
        raise LegacyVerdict(f"server/discover was answered with error {exc.code}: "
                            f"{exc.message}") from None
    except RequestTimeout:
        raise LegacyVerdict(f"server/discover had no answer within {timeout:g} s",
                            unanswered=True) from None
    except Ignored as exc:
        raise LegacyVerdict(str(exc), unanswered=True) from None
    except TransportError as exc:
        if classify_error(exc) in _NO_VERDICT:
            raise
        raise LegacyVerdict(f"server/discover was refused with HTTP {exc.status_code}") from None
    try:
        return describe(result, offered)
    except UnsupportedProtocol as exc:
        supported = result.get("supportedVersions") or []
        if pick_version(supported, LEGACY_VERSIONS):
            raise LegacyVerdict(f"server/discover names only {', '.join(supported)}",
                                supported=list(supported)) from None
        raise no_overlap(supported, offered + LEGACY_VERSIONS) from exc
    except McpError as exc:
        raise LegacyVerdict(f"server/discover's answer is not a discover result "
                            f"({exc.message})") from None


def era_refused(protocol: str, verdict: LegacyVerdict) -> UnsupportedProtocol:
    """The failure of a start that ``protocol`` ("modern" or a stateless revision) bound to
    the stateless era, when the probe found a handshake-era server: both sides' revisions
    and the fix named."""
    asked = list(MODERN_VERSIONS) if protocol == "modern" else [protocol]
    theirs = (f"the server supports {', '.join(verdict.supported)}" if verdict.supported
              else f"the server speaks only the initialize handshake ({verdict})")
    return UnsupportedProtocol(
        UNSUPPORTED_VERSION,
        f"protocol is {protocol!r}: raider_sync asked for the stateless revision "
        f"{', '.join(asked)}, but {theirs}; set \"protocol\": \"legacy\" (or \"auto\") in "
        f"the server's entry to speak the handshake",
        {"requested": asked, "supported": verdict.supported})


class ModernConnection:
    """What a stateless connection keeps: the revision, the ``_meta`` every request carries,
    and the Mcp-Param-* annotations of the listed tools."""

    def __init__(self, description: Description, capabilities: dict, client_info: dict):
        self.description = description
        self.version = description.protocol_version
        self.meta = request_meta(self.version, capabilities, client_info)
        self.tool_params: dict[str, dict] = {}

    def stamp(self, method: str, params: dict | None) -> dict:
        meta = params.get("_meta") if params else None
        if meta and NO_TASKS in meta:  # a call that must not become a task
            params = {**(params or {}), "_meta": {k: v for k, v in meta.items()
                                                  if k != NO_TASKS}}
            return stamp(params, {**self.meta, META_CAPABILITIES: without_tasks(
                self.meta[META_CAPABILITIES])})
        return stamp(params, self.meta)

    def params_of(self, tool: str) -> dict:
        return self.tool_params.get(tool, {})


def discover_sender(session, transport, capabilities: dict, client_info: dict, *,
                    liveness: bool = False,
                    stalled: Callable[[float], None] | None = None) -> Probe:
    """A :data:`Probe` sending ``server/discover`` through ``session``, the transport told to
    send the stateless headers at that version (a stdio transport ignores that). With
    ``liveness`` (stdio), the wait is :func:`.liveness.await_discover`'s: a ping tells a server
    ignoring the probe from a slow one, and ``stalled(seconds_left)`` hears of a long wait."""
    from ...protocol.http_headers import message_headers

    def send(version: str, timeout: float) -> dict:
        transport.stateless(version, message_headers)
        params = stamp(None, request_meta(version, capabilities, client_info))
        if not liveness:
            return session.request("server/discover", params, timeout=timeout,
                                   cancellable=False)
        discover = session.request_f("server/discover", params, timeout=timeout,
                                     cancellable=False)
        return await_discover(discover, lambda seconds: session.request_f(
            "ping", None, timeout=seconds, cancellable=False), timeout, stalled)
    return send


def probe_time(deadline: Deadline, probe_timeout: float) -> float:
    """Seconds the discover probe may take (see the module doc)."""
    left = deadline.left()
    return min(left, max(probe_timeout, left * 2 / 3))


def open_era(protocol: str, fingerprint: str, send: Probe, handshake: Callable[[str], None],
             deadline: Deadline, probe_timeout: float = PROBE_TIMEOUT,
             remember_era: bool = True,
             warn: Callable[[str], None] | None = None) -> Description | None:
    """Settle the era of a server: the Description of a stateless one (the caller then
    speaks the stateless revision), or None once ``handshake(version)`` (initialize) has run.
    Raises UnsupportedProtocol or McpError with the reason a server cannot be spoken to, and
    what ``send`` and ``handshake`` raise that is no verdict. ``warn(message)`` hears of a
    fallback that the server's silence cost time."""
    if protocol == "legacy" or protocol in LEGACY_VERSIONS:
        handshake(protocol if protocol in LEGACY_VERSIONS else LEGACY_VERSIONS[0])
        return None
    if protocol in MODERN_VERSIONS:
        try:
            return probe(send, protocol, deadline.left(), offered=(protocol,))
        except LegacyVerdict as verdict:
            raise era_refused(protocol, verdict) from None
    if protocol == "auto" and remember_era and remembered(fingerprint) == "legacy":
        try:
            handshake(LEGACY_VERSIONS[0])
            return None
        except McpError as exc:
            if exc.code != UNSUPPORTED_VERSION:
                raise
            remember(fingerprint, None)  # it changed era: probe again
    try:
        description = probe(send, MODERN_VERSIONS[0], probe_time(deadline, probe_timeout))
    except LegacyVerdict as verdict:
        if protocol == "modern":
            raise era_refused(protocol, verdict) from None
        if verdict.unanswered and warn is not None:
            warn(f"{verdict}: speaking the initialize handshake; if it speaks only that, "
                 f"{LEGACY_FIX} to start it without the probe")
        return _fallback(fingerprint, send, handshake, deadline, probe_timeout, remember_era)
    if remember_era:
        remember(fingerprint, "modern")
    return description


def _fallback(fingerprint: str, send: Probe, handshake: Callable[[str], None],
              deadline: Deadline, probe_timeout: float, remember_era: bool) -> Description | None:
    try:
        handshake(LEGACY_VERSIONS[0])
    except McpError as exc:
        # a late probe answer can lock a stdio server into the stateless era: its initialize
        # refusal (-32022) is evidence for that era, so probe once more
        if exc.code != UNSUPPORTED_VERSION or not pick_version(supported_of(exc) or [],
                                                               MODERN_VERSIONS):
            raise
        try:
            description = probe(send, MODERN_VERSIONS[0], probe_time(deadline, probe_timeout))
        except (LegacyVerdict, ConnectionClosed):
            raise exc from None
        if remember_era:
            remember(fingerprint, "modern")
        return description
    if remember_era:
        remember(fingerprint, "legacy")
    return None
