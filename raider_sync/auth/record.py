"""One server's record in a token store, as an :class:`~raider_sync.auth.OAuth` keeps it.

:class:`StoredRecord` reads the record (registration, issuer, tokens; see
:mod:`raider_sync.auth.store`) from the store the first time and keeps it, reads it again when
asked (another process sharing the store may have written it), writes it back, forgets it,
and holds the store's lock on it while a token is refreshed. Reading and writing block on the
store's file; :meth:`StoredRecord.hold` blocks until the lock is free, at most its bound.
Raised: AuthError (step ``authorization``) for a store that fails or an unbound key, AuthError
(step ``refresh``) for a lock held past the bound; a store's own RaiderError as it is.
"""
from __future__ import annotations

import threading
import time
from contextlib import ExitStack
from typing import Callable

from ..errors import AuthError, RaiderError
from .store import TokenStore

#: seconds before expiry a token is refreshed
REFRESH_MARGIN = 60.0


class StoredRecord:
    """The record of the server ``server_url()`` names in the store ``store()`` (both asked at
    each use: an OAuth may be bound, or given another store, after it was made). Thread-safe."""

    def __init__(self, *, store: Callable[[], TokenStore],
                 server_url: Callable[[], str | None]):
        self._store = store
        self._server_url = server_url
        self._lock = threading.Lock()
        self.cached: dict | None = None  # None until read from the store

    def key(self) -> str:
        """The record's key: the server's canonical URL. Raises AuthError when unbound."""
        url = self._server_url()
        if url is None:
            raise AuthError("authorization: this OAuth object serves no server yet (bind)",
                            step="authorization")
        return url

    def load(self, again: bool = False) -> dict:
        """The record, read from the store the first time (and, with ``again``, now: another
        process sharing the store may have written it)."""
        with self._lock:
            if self.cached is None or again:
                try:
                    self.cached = self._store().load(self.key()) or {}
                except RaiderError:
                    raise
                except (OSError, ValueError) as exc:
                    raise AuthError(f"authorization: the token store failed: {exc}",
                                    step="authorization") from exc
            return self.cached

    def tokens(self, again: bool = False) -> dict:
        """The record's tokens ({} when it has none)."""
        return self.load(again).get("tokens") or {}

    def save(self, record: dict) -> None:
        with self._lock:
            self.cached = record
        self._store().save(self.key(), record)

    def forget(self) -> None:
        """Forget the record, in the store too."""
        with self._lock:
            self.cached = {}
        self._store().delete(self.key())

    def hold(self, stack: ExitStack, bound: float) -> None:
        """Enter the store's lock on this record, when it has one (waiting at most ``bound``
        s); it is released when ``stack`` closes. Raises AuthError when another holder keeps
        it past the bound."""
        lock = getattr(self._store(), "lock", None)
        if lock is None:
            return
        try:
            stack.enter_context(lock(self.key(), bound))
        except TimeoutError as exc:
            raise AuthError(f"refresh: the token store stayed locked by another refresh for "
                            f"{bound:g} s", step="refresh") from exc


def expiring(tokens: dict) -> bool:
    """Whether ``tokens`` hold an access token that expires within :data:`REFRESH_MARGIN`."""
    expires = tokens.get("expires_at")
    return bool(tokens.get("access_token") and expires and expires - REFRESH_MARGIN < time.time())


def left(deadline: float | None, cap: float) -> float:
    """The seconds until ``deadline`` (monotonic; never negative), or ``cap`` without one."""
    if deadline is None:
        return cap
    return max(0.0, deadline - time.monotonic())
