"""A webhook subscription to a server's events, kept alive by refreshing it.

    with WebhookSubscription(server, "deploy.done", "https://hooks.example.com/mcp",
                             arguments={"env": "prod"}, ttl=3600) as hook:
        ...                       # deliveries reach the webhook_app at that URL
    # leaving the block unsubscribes

``events/subscribe`` is sent at once (it blocks until the server verified the endpoint:
the app there must echo its challenge); the server grants a lifetime (``refreshBefore``),
and a thread, ``raider-<key>-webhook-refresh``, subscribes again (the same key: the same
subscription) when three quarters of it have passed, with the newest cursor it knows.
:meth:`unsubscribe` stops it and sends ``events/unsubscribe``; :meth:`close` only stops
refreshing (the subscription lapses at its ``refreshBefore``). The secret (``whsec_``)
is made here unless given: give the same one to the receiving :func:`webhook_app`.
"""
from __future__ import annotations

import base64
import logging
import secrets
import threading
import time
from datetime import datetime
from typing import Any

from ...errors import InvalidArgument
from ...protocol.events import SUBSCRIBE, UNSUBSCRIBE
from ...protocol.webhooks import SECRET_PREFIX, secret_key
from ...threads.timeouts import seconds
from .opening import check_offered

log = logging.getLogger("raider_sync.events.webhooks")

#: the share of a granted lifetime after which the subscription is refreshed
REFRESH_AT = 0.75
#: seconds before a failed refresh is tried again, at the least
RETRY = 1.0


def new_secret(size: int = 32) -> str:
    """A fresh ``whsec_`` secret of ``size`` random bytes (24 to 64), from the operating
    system's random source. Raises ValueError for another size."""
    if not 24 <= size <= 64:
        raise ValueError(f"size must be 24 to 64 bytes, not {size!r}")
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(size)).decode()


def _seconds_left(refresh_before: Any) -> float | None:
    """Seconds from now until an ISO ``refreshBefore`` (None: no expiry, or unreadable)."""
    if not isinstance(refresh_before, str):
        return None
    try:
        when = datetime.fromisoformat(refresh_before.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when.timestamp() - time.time()


class WebhookSubscription:
    """One webhook subscription (``events/subscribe``), refreshed until unsubscribed.

    Subscribing blocks at most ``timeout`` s (default the server's call timeout) and raises
    McpError (-32601 for a server without events; the server's refusal: -32602 a bad URL,
    -32027 an endpoint that failed its challenge, ...), InvalidArgument, NotConnected,
    RequestTimeout. ``ttl`` is the lifetime suggested, in seconds (the server grants what it
    will). Attributes: ``id`` (the server's, as in ``X-MCP-Subscription-Id``), ``secret``,
    ``refresh_before`` (ISO), ``cursor``, ``truncated``, ``delivery_status``, ``refreshes``
    (how many refreshes were answered)."""

    def __init__(self, server: Any, name: str, url: str, *, arguments: dict | None = None,
                 secret: str | None = None, ttl: float = 3600.0, cursor: str | None = None,
                 timeout: float | None = None):
        if not isinstance(name, str) or not name:
            raise InvalidArgument("name: expected a non-empty string")
        if not isinstance(url, str) or not url:
            raise InvalidArgument("url: expected a non-empty string")
        if arguments is not None and not isinstance(arguments, dict):
            raise InvalidArgument("arguments: expected a dict")
        self.secret = new_secret() if secret is None else secret
        try:
            secret_key(self.secret)
        except ValueError as exc:
            raise InvalidArgument(str(exc)) from None
        self.server = server
        self.name = name
        self.url = url
        self.arguments = dict(arguments or {})
        self.ttl = seconds(ttl, 3600.0, "ttl", "WebhookSubscription")
        self.timeout = seconds(timeout, server.call_timeout, "timeout", "WebhookSubscription")
        self.cursor = cursor
        self.id: str | None = None
        self.refresh_before: str | None = None
        self.truncated = False
        self.delivery_status: dict | None = None
        self.refreshes = 0
        self._stop = threading.Event()
        check_offered(server)
        self._subscribe()
        self._thread = threading.Thread(target=self._refresh_loop, daemon=True,
                                        name=f"raider-{server.key}-webhook-refresh")
        self._thread.start()

    def __enter__(self) -> "WebhookSubscription":
        return self

    def __exit__(self, *exc) -> None:
        self.unsubscribe()

    def __repr__(self) -> str:
        return f"<WebhookSubscription {self.name!r} -> {self.url} id={self.id}>"

    def _key(self) -> dict:
        return {"name": self.name, "arguments": self.arguments}

    def _subscribe(self) -> None:
        params = {**self._key(), "cursor": self.cursor, "ttlMs": int(self.ttl * 1000),
                  "delivery": {"mode": "webhook", "url": self.url, "secret": self.secret}}
        result = self.server.request(SUBSCRIBE, params, timeout=self.timeout)
        self.id = result.get("id")
        self.refresh_before = result.get("refreshBefore")
        if result.get("cursor") is not None:
            self.cursor = result["cursor"]
        self.truncated = self.truncated or bool(result.get("truncated"))
        self.delivery_status = result.get("deliveryStatus")

    def note_cursor(self, cursor: str | None) -> None:
        """The cursor of a delivery the receiver kept: the next refresh passes it on."""
        if cursor is not None:
            self.cursor = cursor

    def _refresh_loop(self) -> None:
        while True:
            left = _seconds_left(self.refresh_before)
            if left is None:
                return  # granted no expiry: nothing to refresh
            if self._stop.wait(max(0.0, left * REFRESH_AT) if left > 0 else 0.0):
                return
            try:
                self._subscribe()
                self.refreshes += 1
            except Exception as exc:  # noqa: BLE001 - tried again until the grant runs out
                log.warning("refreshing the webhook subscription %s failed: %s", self.id, exc)
                if self._stop.wait(max(RETRY, (_seconds_left(self.refresh_before) or 0) / 4)):
                    return

    def close(self, timeout: float = 5.0) -> None:
        """Stop refreshing (joins the thread, a refresh under way ends within its own
        timeout); the subscription lapses at ``refresh_before``. Safe to call twice."""
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def unsubscribe(self) -> None:
        """Stop refreshing and end the subscription (``events/unsubscribe``). Blocks at most
        the timeout; raises what the request does (McpError -32023: none by that key)."""
        self.close(self.timeout)
        self.server.request(UNSUBSCRIBE, {**self._key(), "delivery": {"url": self.url}},
                            timeout=self.timeout)
