"""Subscriptions: one loop for change notifications in both eras.

    with server.listen(tools=True, uris=["file:///a.txt"]) as sub:
        for event in sub.events(timeout=30):      # ends after 30 s of silence
            print(event["method"], event["params"])

In the stateless era a subscription is one ``subscriptions/listen`` request whose answer
stream carries the notifications asked for (tagged with the request's id); in the handshake
era it is the session's notifications (the GET stream over HTTP) filtered the same way, with
``resources/subscribe`` for each URI (``resources/unsubscribe`` at close).

A stream that ends (the server closed it, or the connection broke) ends the subscription:
:meth:`Subscription.next` then raises :class:`SubscriptionEnded` with the reason, and the
iterators stop. Nothing is replayed; listen again and fetch again.
"""
from __future__ import annotations

import queue
import threading
from concurrent.futures import Future
from typing import Any, Iterator

from ...errors import SubscriptionEnded
from ...threads.timeouts import poll_seconds
from .modern import META_SUBSCRIPTION

ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
KINDS = {"notifications/tools/list_changed": "toolsListChanged",
         "notifications/prompts/list_changed": "promptsListChanged",
         "notifications/resources/list_changed": "resourcesListChanged"}
UPDATED = "notifications/resources/updated"
#: a listen request waits for its answer this long (its stream ends it, or close does)
LISTEN_TIMEOUT = 365 * 24 * 3600.0
_END = object()

__all__ = ["Subscription", "SubscriptionEnded", "listen_params"]


def listen_params(tools: bool, prompts: bool, resources: bool, uris: list[str]) -> dict:
    """The ``notifications`` filter of a ``subscriptions/listen`` request."""
    wanted: dict[str, Any] = {}
    if tools:
        wanted["toolsListChanged"] = True
    if prompts:
        wanted["promptsListChanged"] = True
    if resources:
        wanted["resourcesListChanged"] = True
    if uris:
        wanted["resourceSubscriptions"] = list(uris)
    return {"notifications": wanted}


class Subscription:
    """Change notifications a server sends, as a blocking queue.

    ``honored``: the filter the server acknowledged (the stateless era; in the handshake era
    what was asked). Context manager; :meth:`close` is safe to repeat.
    """

    def __init__(self, wanted: dict, *, on_close=None, store: bool = True):
        self.wanted = wanted
        self._store = store
        self.honored: dict | None = None
        self.subscription_id: Any = None
        self.reason: str | None = None
        self._queue: "queue.Queue[Any]" = queue.Queue()
        self._acked = threading.Event()
        self._on_close = on_close
        self._closed = False
        self._lock = threading.Lock()

    def __enter__(self) -> "Subscription":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __iter__(self) -> Iterator[dict]:
        return self.events()

    @property
    def closed(self) -> bool:
        return self.reason is not None

    def wait_acknowledged(self, timeout: float) -> bool:
        """Block until the server acknowledged the filter (at most ``timeout`` s; 0: only
        look). Raises InvalidArgument for a ``timeout`` :meth:`next` refuses."""
        return self._acked.wait(poll_seconds(timeout, method="Subscription.wait_acknowledged"))

    def next(self, timeout: float | None) -> dict | None:
        """The next notification ``{method, params}``, blocking at most ``timeout`` s (0:
        only one already here; None: until one comes or the subscription ends); None when
        none came. Raises SubscriptionEnded once the stream ended and all it delivered has
        been taken; InvalidArgument for a negative, NaN or infinite ``timeout``."""
        timeout = poll_seconds(timeout, method="Subscription.next")
        try:
            item = self._queue.get(timeout=timeout)
        except queue.Empty:
            return None
        if item is _END:
            self._queue.put(_END)  # every later call ends too
            raise SubscriptionEnded(self.reason or "the subscription ended")
        return item

    def events(self, timeout: float = 60.0) -> Iterator[dict]:
        """The notifications as they come; stops after ``timeout`` s without one (0: once
        none is waiting), or when the subscription ends. Raises InvalidArgument at once for
        a ``timeout`` :meth:`next` refuses."""
        return self._events(poll_seconds(timeout, method="Subscription.events"))

    def _events(self, timeout: float | None) -> Iterator[dict]:
        while True:
            try:
                item = self.next(timeout)
            except SubscriptionEnded:
                return
            if item is None:
                return
            yield item

    def close(self) -> None:
        """End the subscription (the listen request is cancelled, or the resources are
        unsubscribed); blocks at most for the unsubscribe requests' timeouts."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._end("closed by the client")
        if self._on_close is not None:
            self._on_close(self)

    # -- fed by the server ---------------------------------------------------------------

    def matches(self, method: str, params: dict) -> bool:
        """Whether a notification belongs to this subscription."""
        if self.subscription_id is not None:
            meta = params.get("_meta")
            if not isinstance(meta, dict):
                meta = {}
            if meta.get(META_SUBSCRIPTION) != self.subscription_id:
                return False
        wanted = self.honored if self.honored is not None else self.wanted
        if method in KINDS:
            return bool(wanted.get(KINDS[method]))
        if method == UPDATED:
            uris = wanted.get("resourceSubscriptions") or []
            uri = params.get("uri")
            return isinstance(uri, str) and any(uri == u or uri.startswith(u.rstrip("/") + "/")
                                                for u in uris)
        return False

    def offer(self, method: str, params: dict) -> bool:
        """Take a notification if it is this subscription's; True when taken."""
        if method == ACKNOWLEDGED and self.subscription_id is not None:
            meta = params.get("_meta")
            if not isinstance(meta, dict):
                meta = {}
            if meta.get(META_SUBSCRIPTION) == self.subscription_id:
                honored = params.get("notifications")
                self.honored = dict(honored) if isinstance(honored, dict) else {}
                self._acked.set()
                return True
            return False
        if self.reason is None and self.matches(method, params):
            if self._store:
                self._queue.put({"method": method, "params": params})
            return True
        return False

    def acknowledge(self, honored: dict) -> None:
        self.honored = honored
        self._acked.set()

    def follow(self, future: Future, on_end=None) -> None:
        """End when the listen request's ``future`` settles (the stream ended); then
        ``on_end(self)`` unless the client closed it."""
        def done(settled: Future) -> None:
            if settled.cancelled() or self._closed:
                self._end("closed by the client")
                return
            error = settled.exception()
            self._end(f"the server ended the stream: {error}" if error is not None
                      else "the server ended the stream")
            if on_end is not None:
                on_end(self)
        future.add_done_callback(done)

    def _end(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason
            self._acked.set()
            self._queue.put(_END)
