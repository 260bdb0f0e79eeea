"""Results of the stateless revision kept for as long as the server says (``ttlMs``).

    cache = ResultCache()
    cache.get("tools/list", params)            # a fresh copy, or None
    cache.put("tools/list", params, result)    # kept for its ttlMs (0 or absent: not kept)
    cache.invalidate("tools/list")             # a change notification came

Cacheable: server/discover, tools/list, prompts/list, resources/list,
resources/templates/list and resources/read, complete results only. The key is the method and
the params that shape the result (``cursor``, ``uri``), so pages are kept apart. A cache
belongs to one McpServer, that is to one authorization context, so ``cacheScope: private``
results are never shared with anyone else. ``ttlMs`` is capped at 24 hours.

Per call, ``cache=`` is ``"use"`` (a fresh entry answers; the default), ``"refresh"`` (ask the
server, keep the answer) or ``"bypass"`` (ask the server, keep nothing).
"""
from __future__ import annotations

import copy
import threading
import time
from typing import Any

from .modern import CACHEABLE, ttl_ms

CACHE_MODES = ("use", "refresh", "bypass")
#: what a change notification makes stale
STALE_AFTER = {"notifications/tools/list_changed": ("tools/list",),
               "notifications/prompts/list_changed": ("prompts/list",),
               "notifications/resources/list_changed": ("resources/list",
                                                        "resources/templates/list")}


def check_mode(mode: str) -> str:
    """``mode`` if it is one of use, refresh, bypass; else raises ValueError naming them."""
    if mode not in CACHE_MODES:
        raise ValueError(f"cache must be one of {', '.join(CACHE_MODES)}, not {mode!r}")
    return mode


def _key(method: str, params: dict | None) -> tuple:
    params = params or {}
    return (method, params.get("cursor"), params.get("uri"))


class ResultCache:
    """Fresh results by method and params; thread-safe."""

    def __init__(self) -> None:
        self._entries: dict[tuple, tuple[float, Any]] = {}
        self._lock = threading.Lock()

    def get(self, method: str, params: dict | None) -> Any:
        """A copy of the fresh result for this request, else None."""
        if method not in CACHEABLE:
            return None
        key = _key(method, params)
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if entry[0] <= time.monotonic():
                del self._entries[key]
                return None
            return copy.deepcopy(entry[1])

    def put(self, method: str, params: dict | None, result: Any) -> None:
        """Keep a complete result for its ``ttlMs``."""
        if method not in CACHEABLE or not isinstance(result, dict):
            return
        if result.get("resultType", "complete") != "complete":
            return
        ttl = ttl_ms(result.get("ttlMs"))
        if ttl <= 0:
            return
        with self._lock:
            self._entries[_key(method, params)] = (time.monotonic() + ttl / 1000,
                                                   copy.deepcopy(result))

    def invalidate(self, *methods: str, uri: str | None = None) -> None:
        """Forget every entry of ``methods`` (every page), and the read of ``uri``."""
        with self._lock:
            for key in list(self._entries):
                if key[0] in methods or (uri is not None and key[0] == "resources/read"
                                         and key[2] == uri):
                    del self._entries[key]

    def notified(self, method: str, params: dict) -> None:
        """Drop what a change notification makes stale."""
        if method in STALE_AFTER:
            self.invalidate(*STALE_AFTER[method])
        elif method == "notifications/resources/updated":
            self.invalidate(uri=params.get("uri"))

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
