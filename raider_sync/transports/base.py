"""The interface every transport implements."""
from __future__ import annotations

import json
import logging
from typing import Any, Callable, NamedTuple, Optional

Deliver = Callable[[Any], None]
Closed = Callable[[BaseException], None]


class RequestFailed(NamedTuple):
    """Delivered (instead of a message) when a transport cannot complete one request it sent,
    after ``send`` returned: say an HTTP event stream that broke off before the answer. The
    session fails that request with ``error``; the transport never forges an answer."""

    request_id: Any
    error: BaseException


def encode_message(message: Any) -> bytes:
    """One message as compact UTF-8 JSON. Raises ValueError (NaN, infinities) or TypeError
    (objects) for what JSON cannot carry, before anything is sent; a lone surrogate, which
    UTF-8 cannot carry, is sent escaped (still valid JSON)."""
    text = json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    try:
        return text.encode()
    except UnicodeEncodeError:
        return json.dumps(message, separators=(",", ":"), allow_nan=False).encode()


def deliver_json(data: str | bytes, deliver: "Deliver", log: logging.Logger, name: str,
                 where: str) -> Any:
    """Parse one received message and hand it to ``deliver``; the message, or None when
    ``data`` is not JSON. What is not JSON, and what ``deliver`` fails on, is logged and
    skipped: a reader outlives a bad message."""
    try:
        message = json.loads(data)
    except ValueError:
        log.warning("%s: skipped %s that is not JSON: %.200r", name, where, data)
        return None
    try:
        deliver(message)
    except Exception:  # noqa: BLE001 - the reader must outlive a bad message
        log.exception("%s: a message could not be handled", name)
    return message


class Transport:
    """Moves JSON-RPC messages between this process and one MCP peer.

    Subclasses implement the four methods; none of them knows request ids or MCP methods.
    """

    #: the process id of a local server process, or None
    pid: Optional[int] = None

    #: set by the owner: ``renew_session(timeout)`` runs a fresh initialize when a transport
    #: with sessions (Streamable HTTP) learns that the server forgot its session
    renew_session: Optional[Callable[[float], None]] = None

    def start(self, deliver: Deliver, closed: Closed, *, timeout: float | None = None) -> None:
        """Connect (blocks up to ``timeout`` s); then call ``deliver`` for every message received
        and ``closed(error)`` once if the connection ends on its own. Raises RaiderError."""
        raise NotImplementedError

    def send(self, message: dict, *, deadline: float | None = None) -> None:
        """Send one message; ``deadline`` (time.monotonic()) bounds a blocking send.
        Raises ConnectionClosed when the connection is gone."""
        raise NotImplementedError

    def close(self) -> None:
        """End the connection and join the transport's threads. Safe to call twice."""
        raise NotImplementedError

    def negotiated(self, protocol_version: str, timeout: float) -> None:
        """Told the revision the handshake settled on, before ``notifications/initialized``
        is sent (HTTP sends it as MCP-Protocol-Version and opens its GET stream then).
        Nothing to do for most transports."""

    def kill_now(self) -> None:
        """End the connection at once, without grace periods."""
        self.close()

    @property
    def stderr_tail(self) -> list[str]:
        """The last lines a local server wrote to stderr (empty for remote servers)."""
        return []
