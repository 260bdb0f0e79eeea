"""The handshake era (2024-11-05 .. 2025-11-25): ``initialize``, a session, requests as they are.

:func:`handshake` runs ``initialize`` and ``notifications/initialized`` and returns what the
server said of itself; :class:`HandshakeEra` sends a connection's requests unchanged and
listens through the session's own notifications (with ``resources/subscribe`` per URI).
"""
from __future__ import annotations

from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from ...errors import McpError, TransportError, UnsupportedProtocol
from ...protocol import (
    CLIENT_PROTOCOL_VERSION,
    STATELESS_REASON,
    UNSUPPORTED_PROTOCOL_VERSION,
    check_initialize_result,
    initialize_params,
    translate_initialize_error,
)
from ...threads.futures import Deadline
from ...transports.statuses import Status, classify_error
from .cache import check_mode
from .host import EraHost
from .listen import Subscription, listen_params
from .modern import Description

if TYPE_CHECKING:  # pragma: no cover
    from ...jsonrpc import Session


def handshake(session: "Session", host: EraHost, deadline: Deadline,
              timeout_message: str, version: str = CLIENT_PROTOCOL_VERSION) -> Description:
    """``initialize``, then ``notifications/initialized``, within ``deadline``; what the server
    said of itself. Over HTTP the transport sends MCP-Protocol-Version from then on and opens
    its GET stream. Raises UnsupportedProtocol or McpError for a server that refuses, and
    what the session raises."""
    settings = host.settings
    try:
        result = session.request(
            "initialize", initialize_params(settings.capabilities(), settings.client_info,
                                            version),
            deadline=deadline, cancellable=False, timeout_message=timeout_message)
    except McpError as exc:
        raise translate_initialize_error(exc) from None
    except TransportError as exc:  # the stateless revision's refusal over HTTP
        if classify_error(exc) is Status.STATELESS_REFUSAL:
            raise UnsupportedProtocol(UNSUPPORTED_PROTOCOL_VERSION, STATELESS_REASON) from None
        raise
    negotiated = check_initialize_result(result)
    info = result.get("serverInfo")
    instructions = result.get("instructions")
    description = Description("legacy", negotiated, dict(result.get("capabilities") or {}),
                              dict(info) if isinstance(info, dict) else {},
                              instructions if isinstance(instructions, str) else None,
                              raw=dict(result))
    session.transport.negotiated(negotiated, deadline.left())
    session.notify("notifications/initialized")
    return description


class HandshakeEra:
    """A connection in the handshake era: requests go as they are."""

    name = "legacy"

    def __init__(self, session: "Session", host: EraHost, description: Description):
        self.session = session
        self.host = host
        self.description = description

    def renew(self, deadline: Deadline, timeout_message: str) -> Description:
        """A fresh ``initialize`` on the same transport (a Streamable HTTP server forgot the
        session); what the server now says of itself."""
        self.description = handshake(self.session, self.host, deadline, timeout_message)
        return self.description

    def connected(self) -> None:
        """Nothing to do: the handshake era announces list changes unasked."""

    def check_tool(self, tool: dict) -> str | None:
        return None

    def request_f(self, method: str, params: dict | None, cache: str = "use",
                  **options: Any) -> Future:
        if cache != "use":
            check_mode(cache)  # the handshake era caches nothing, but a bad mode is an error
        return self.session.request_f(method, params, **options)

    def listen(self, *, tools: bool, prompts: bool, resources: bool, uris: list[str],
               timeout: float, store: bool = True, on_end=None,
               opened: bool = True) -> Subscription:
        """The session's notifications, with ``resources/subscribe`` for each URI (blocks up
        to ``timeout`` s for each)."""
        wanted = listen_params(tools, prompts, resources, uris)
        sub = Subscription(wanted["notifications"], store=store,
                           on_close=lambda s: self._unsubscribe(s, uris, timeout))
        for uri in uris:
            self.session.request("resources/subscribe", {"uri": uri}, timeout=timeout)
        sub.acknowledge(dict(wanted["notifications"]))
        self.host.add(sub)
        return sub

    def _unsubscribe(self, sub: Subscription, uris: list[str], timeout: float) -> None:
        self.host.remove(sub)
        for uri in uris:
            if self.session.closed:
                return
            try:
                self.session.request("resources/unsubscribe", {"uri": uri}, timeout=timeout)
            except Exception as exc:  # noqa: BLE001 - the subscription is gone anyway
                self.host.settings.log.debug("resources/unsubscribe %s failed: %s", uri, exc)
