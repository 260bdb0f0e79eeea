"""What the eras of one server share across its connections: settings, subscriptions, the
result cache and the pool that answers input requests.

An era (:mod:`.handshake`, :mod:`.stateless`) lives as long as one connection; an
:class:`EraHost` as long as its :class:`~raider_sync.McpServer`. The server makes the host
and hands it to each era it opens; an era reaches the server only through the host's few
callbacks (``relist``, ``lists_changed``, ``is_up``), never through its attributes.
"""
from __future__ import annotations

import collections
import logging
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from ...protocol.events import NOTIFICATIONS as EVENT_NOTIFICATIONS
from ...threads.workers import Workers
from .cache import ResultCache
from .listen import ACKNOWLEDGED, KINDS, UPDATED, Subscription
from .modern import META_SUBSCRIPTION


@dataclass
class EraSettings:
    """What a server is told to be when it opens an era: who it is and how it asks."""

    name: str                       # the server's configured name, for messages
    key: str                        # the server's key, for thread names
    transport: str                  # "stdio", "http", "sse", "in-process"
    fingerprint: str                # what the era verdict is remembered by
    protocol: str                   # the ``protocol`` choice (see :mod:`.negotiate`)
    probe_timeout: float
    max_input_rounds: int
    client_info: dict
    capabilities: Callable[[], dict]            # the client capabilities declared
    answer: Callable[[str, dict], Any]          # fulfils a server's input request
    log: logging.Logger = field(default_factory=lambda: logging.getLogger("raider_sync.eras"))
    tasks: Any = "auto"                         # the ``tasks`` choice: "auto", True, False


class EraHost:
    """The part of a server its eras share: :class:`EraSettings`, the subscriptions, the
    stateless result cache, the input pool and the callbacks into the server's catalog.
    :meth:`close` ends it all (the server's stop)."""

    def __init__(self, settings: EraSettings, *, relist: Callable[[float], None],
                 lists_changed: Callable[[], None], is_up: Callable[[], bool]):
        self.settings = settings
        self.relist = relist                  # fetch the tools again within seconds
        self.lists_changed = lists_changed    # every list may have changed unannounced
        self.is_up = is_up
        self.cache = ResultCache()
        self.stopping = threading.Event()
        self.relisten_failures = 0
        #: the log level asked for in the stateless era (every request's ``logLevel``)
        self.log_level: str | None = None
        self._pool: Workers | None = None
        self._closed = False
        self._lock = threading.Lock()
        self._subs: list[Subscription] = []
        # listen notifications that came before their subscription was registered
        self._early: collections.deque = collections.deque(maxlen=64)

    def reopen(self) -> None:
        """A stopped server starts again: its eras may listen and ask for input again."""
        with self._lock:
            self._closed = False
            self._pool = None
            self.stopping = threading.Event()
            self.relisten_failures = 0

    def warn(self, message: str) -> None:
        self.settings.log.warning("MCP server %r: %s", self.settings.name, message)

    # -- subscriptions -------------------------------------------------------------------

    def add(self, sub: Subscription, tag: object = None) -> list[tuple[str, dict]]:
        """Register ``sub``; the early notifications tagged ``tag`` (not yet offered to it)."""
        with self._lock:
            self._subs.append(sub)
            if tag is None:
                return []
            return [item for item in self._early if subscription_tag(item[1]) == tag]

    def remove(self, sub: Subscription) -> None:
        with self._lock:
            if sub in self._subs:
                self._subs.remove(sub)

    def offer(self, method: str, params: dict) -> None:
        """Hand a notification (of a listen, or of an events/stream) to the subscriptions it
        belongs to (on the notification thread); a stateless listen's notification that came
        before its subscription was registered is kept for it."""
        if method != ACKNOWLEDGED and method not in KINDS and method != UPDATED \
                and method not in EVENT_NOTIFICATIONS:
            return
        self.cache.notified(method, params)
        with self._lock:
            taken = False
            for sub in list(self._subs):
                taken = sub.offer(method, params) or taken
            if not taken and subscription_tag(params) is not None:
                self._early.append((method, params))

    # -- the input pool ------------------------------------------------------------------

    def pool(self) -> Workers:
        """The server's own pool, not a lane of its session's: input handlers (a person
        answering an elicitation) and relistens outlive a connection; 4 at once."""
        with self._lock:
            if self._pool is None:
                self._pool = Workers(4, f"raider-{self.settings.key}-input")
                if self._closed:
                    self._pool.shutdown()
            return self._pool

    def close(self) -> None:
        """End every subscription and stop the input pool (waits for handlers under way)."""
        with self._lock:
            self._closed = True
            subs, self._subs = self._subs, []
            pool = self._pool
        self.stopping.set()
        for sub in subs:
            sub._end("the server was stopped")
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def subscription_tag(params: dict) -> object:
    """The subscription a stateless listen's notification names in its ``_meta``."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta.get(META_SUBSCRIPTION) if isinstance(meta, dict) else None
