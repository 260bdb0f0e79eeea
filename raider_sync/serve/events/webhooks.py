"""Webhook subscriptions of a ToolServer's events, and their deliveries on a worker thread.

    hooks = Webhooks(log, catalog, key="local", loopback=True)
    hooks.subscribe(params)            # events/subscribe: verified, then kept until it lapses
    hooks.published(entry)             # every live subscription it reaches gets a POST
    hooks.unsubscribe(params)          # events/unsubscribe
    hooks.close(timeout=5)             # the worker stops (deliveries left are dropped)

A subscription is keyed by (callback URL, event name, arguments); the draft adds the
authenticated principal, which a ToolServer does not know: whoever can call the server is
one principal. Before the first subscription to a URL is active, the endpoint must echo a
``verification`` challenge in a 2xx answer (compared in constant time); a URL once verified
stays so for this server's life. A subscription lapses at its ``refreshBefore``: the client
subscribes again (the same key) before, which also replaces its secret. Deliveries go out
one after the other on one thread, ``raider-<key>-webhooks`` (it ends after a second
without work, and :meth:`close` joins it), each tried at most
``attempts`` times with a doubling pause; a 410 drops it at once. The cursor of a delivery
is the position after its event, and as they go in order it is safe to keep.
:meth:`subscribe` blocks for the verification POST (at most the poster's timeout).
"""
from __future__ import annotations

import hashlib
import hmac
import json
import queue
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from ...errors import McpError
from ...protocol.codes import CALLBACK_ENDPOINT_ERROR, EVENT_NOT_FOUND, INVALID_PARAMS
from ...protocol.events import event_params, iso_ms
from ...protocol.webhooks import secret_key
from .catalog import EventCatalog
from .feeds import occurrence_of
from .log import Entry, EventLog
from .webhook_posts import GONE, Poster, url_problem

#: the lifetime granted when the client suggests none, and the bounds of a grant (seconds)
DEFAULT_TTL = 3600.0
MAX_TTL = 24 * 3600.0
MIN_TTL = 60.0
ATTEMPTS = 3
RETRY_DELAY = 1.0
#: seconds the delivery worker waits for work before it ends
IDLE = 1.0
_STOP = object()


@dataclass
class Hook:
    """One webhook subscription."""

    id: str
    url: str
    name: str
    arguments: dict
    key: bytes
    expires: float                    # time.time() when it lapses
    position: int                     # the log position delivered up to
    last_delivery_ms: int | None = None
    last_error: str | None = None
    failed_since_ms: int | None = None
    live: bool = field(default=True)


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


class Webhooks:
    """The webhook subscriptions of one ToolServer. Thread-safe."""

    def __init__(self, log: EventLog, catalog: EventCatalog, *, key: str,
                 loopback: bool = False, min_ttl: float = MIN_TTL,
                 attempts: int = ATTEMPTS, retry_delay: float = RETRY_DELAY,
                 timeout: float = 5.0):
        self.log = log
        self.catalog = catalog
        self.key = key
        self.loopback = loopback
        self.min_ttl = min_ttl
        self.attempts = attempts
        self.retry_delay = retry_delay
        self.poster = Poster(timeout)
        self._lock = threading.Lock()
        self._hooks: dict[str, Hook] = {}
        self._verified: set[str] = set()
        self._queue: "queue.Queue[Any]" = queue.Queue()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- events/subscribe and events/unsubscribe -----------------------------------------

    def subscribe(self, params: dict) -> dict:
        """The answer to ``events/subscribe``. Raises McpError: -32602 for a bad URL,
        secret or ttlMs, -32027 for an endpoint that fails verification, and what
        :meth:`EventCatalog.check` raises."""
        name, arguments, cursor, max_age = event_params(params)
        delivery = params.get("delivery")
        if not isinstance(delivery, dict) or delivery.get("mode", "webhook") != "webhook":
            raise McpError(INVALID_PARAMS, "delivery must be an object with mode webhook")
        url = delivery.get("url")
        problem = url_problem(url, self.loopback)
        if problem is not None or not isinstance(url, str):
            raise McpError(INVALID_PARAMS, problem or "delivery.url must be a string")
        try:
            key = secret_key(delivery.get("secret"))
        except ValueError as exc:
            raise McpError(INVALID_PARAMS, f"delivery.{exc}") from None
        ttl = self._ttl(params)
        self.catalog.check(name, arguments, "webhook")
        self._verify(url, key)
        hook_id = "sub_" + hashlib.sha256(canonical([url, name, arguments]).encode()
                                          ).hexdigest()[:16]
        start = self.log.start(cursor, max_age)
        with self._lock:
            hook = self._hooks.get(hook_id)
            lapsed = hook is None or not hook.live or hook.expires <= time.time()
            if lapsed:
                hook = Hook(hook_id, url, name, dict(arguments), key, 0.0, start.position)
                self._hooks[hook_id] = hook
            assert hook is not None
            hook.key, hook.expires, hook.live = key, time.time() + ttl, True
            position = hook.position
        if lapsed:  # what came after the cursor goes out first
            entries, _, _ = self.log.after(start.position, name, arguments)
            for entry in entries:
                self._enqueue(hook, entry)
        status: dict[str, Any] = {"active": True, "lastError": hook.last_error,
                                  "lastDeliveryAt": (iso_ms(hook.last_delivery_ms)
                                                     if hook.last_delivery_ms else None)}
        if hook.failed_since_ms:
            status["failedSince"] = iso_ms(hook.failed_since_ms)
        return {"id": hook_id, "refreshBefore": iso_ms(int(hook.expires * 1000)),
                "cursor": self.log.cursor(position), "truncated": start.truncated,
                "deliveryStatus": status}

    def _ttl(self, params: dict) -> float:
        """The lifetime granted: the suggestion within [min_ttl, MAX_TTL] (no expiry, asked
        for with ``ttlMs: null``, is not granted)."""
        if "ttlMs" not in params or params["ttlMs"] is None:
            return DEFAULT_TTL
        ttl = params["ttlMs"]
        if not isinstance(ttl, int) or isinstance(ttl, bool) or ttl <= 0:
            raise McpError(INVALID_PARAMS, "ttlMs must be a whole number > 0 or null")
        return min(MAX_TTL, max(self.min_ttl, ttl / 1000))

    def _verify(self, url: str, key: bytes) -> None:
        """The endpoint echoes a challenge before its first subscription is active."""
        with self._lock:
            if url in self._verified:
                return
        challenge = secrets.token_urlsafe(24)
        body = canonical({"type": "verification", "challenge": challenge}).encode()
        error, answer = self.poster.post(url, key, f"msg_verification_{secrets.token_hex(8)}",
                                         body)
        if error is None:
            try:
                echoed = json.loads(answer or b"null")
            except ValueError:
                echoed = None
            said = echoed.get("challenge") if isinstance(echoed, dict) else None
            if isinstance(said, str) and hmac.compare_digest(said.encode(), challenge.encode()):
                with self._lock:
                    self._verified.add(url)
                return
            error = "challenge_failed"
        reason = "challenge_failed" if error in (GONE, "http_4xx", "http_5xx") else error
        raise McpError(CALLBACK_ENDPOINT_ERROR, f"the webhook endpoint failed verification "
                                                f"({reason})", {"reason": reason})

    def unsubscribe(self, params: dict) -> dict:
        """The answer to ``events/unsubscribe``. Raises McpError -32023 when no subscription
        has that key."""
        name, arguments, _, _ = event_params(params)
        delivery = params.get("delivery")
        url = delivery.get("url") if isinstance(delivery, dict) else None
        hook_id = "sub_" + hashlib.sha256(canonical([url, name, arguments]).encode()
                                          ).hexdigest()[:16]
        with self._lock:
            hook = self._hooks.pop(hook_id, None)
        if hook is None or not hook.live:
            raise McpError(EVENT_NOT_FOUND, "no webhook subscription by that key",
                           {"kind": "subscription"})
        hook.live = False
        return {}

    # -- deliveries ----------------------------------------------------------------------

    def published(self, entry: Entry) -> None:
        """Queue ``entry`` for every live subscription it reaches (lapsed ones are dropped)."""
        now = time.time()
        with self._lock:
            for hook_id, hook in list(self._hooks.items()):
                if hook.expires <= now:
                    hook.live = False
                    del self._hooks[hook_id]
            hooks = [hook for hook in self._hooks.values()
                     if entry.reaches(hook.name, hook.arguments)]
        for hook in hooks:
            self._enqueue(hook, entry)

    def _enqueue(self, hook: Hook, entry: Entry) -> None:
        self._queue.put((hook, entry))
        self._ensure_worker()

    def _ensure_worker(self) -> None:
        with self._lock:
            if self._thread is not None or self._stop.is_set():
                return
            self._thread = threading.Thread(target=self._work, name=f"raider-{self.key}-webhooks")
            self._thread.start()

    def _work(self) -> None:
        """Deliver what is queued; end after :data:`IDLE` s with nothing to do (the next
        delivery starts a new worker), so a server never closed holds no thread for long."""
        while True:
            try:
                item = self._queue.get(timeout=IDLE)
            except queue.Empty:
                with self._lock:
                    if self._queue.empty() or self._stop.is_set():
                        self._thread = None
                        return
                continue
            if item is _STOP or self._stop.is_set():
                return
            hook, entry = item
            if hook.live:
                self._deliver(hook, entry)

    def _deliver(self, hook: Hook, entry: Entry) -> None:
        body = canonical(occurrence_of(entry, cursor=self.log.cursor(entry.seq))).encode()
        for attempt in range(self.attempts):
            if attempt and self._stop.wait(self.retry_delay * 2 ** (attempt - 1)):
                return
            if not hook.live:
                return
            error, _ = self.poster.post(hook.url, hook.key, entry.event_id, body, hook.id)
            now_ms = int(time.time() * 1000)
            if error is None or error == GONE:
                hook.last_error, hook.failed_since_ms = None, None
                hook.last_delivery_ms = now_ms
                break
            hook.last_error = error
            hook.failed_since_ms = hook.failed_since_ms or now_ms
        hook.position = max(hook.position, entry.seq)  # delivered or given up: past it

    def close(self, timeout: float = 5.0) -> None:
        """Stop the worker (a delivery under way ends within the poster's timeout) and drop
        what is queued. Safe to call twice."""
        self._stop.set()
        self._queue.put(_STOP)
        with self._lock:
            thread = self._thread
        if thread is not None:
            thread.join(timeout)
        self.poster.close()
