"""StoredRecord: one server's record in a token store, read once, read again when asked,
held under the store's lock; the faults come out as AuthError naming the step."""
from __future__ import annotations

import time
from contextlib import ExitStack

import pytest

from raider_sync.auth import AuthError, MemoryTokenStore
from raider_sync.auth.record import StoredRecord, expiring

URL = "https://x/mcp"


def stored(store, url: str | None = URL) -> StoredRecord:
    return StoredRecord(store=lambda: store, server_url=lambda: url)


def test_the_record_is_read_once_and_again_when_asked():
    store = MemoryTokenStore()
    record = stored(store)
    assert record.cached is None and record.load() == {} and record.cached == {}
    store.save(URL, {"tokens": {"access_token": "a"}})  # another process writes it
    assert record.tokens() == {}
    assert record.tokens(again=True) == {"access_token": "a"}
    record.save({"issuer": "i"})
    assert store.load(URL) == {"issuer": "i"} and record.load() == {"issuer": "i"}
    record.forget()
    assert store.load(URL) is None and record.cached == {}


def test_an_unbound_record_and_a_failing_store_raise_auth_error():
    with pytest.raises(AuthError, match="serves no server yet") as unbound:
        stored(MemoryTokenStore(), url=None).load()
    assert unbound.value.step == "authorization"

    class Broken(MemoryTokenStore):
        def load(self, key):
            raise OSError("disk gone")

    with pytest.raises(AuthError, match="the token store failed: disk gone") as broken:
        stored(Broken()).load()
    assert broken.value.step == "authorization"


def test_hold_takes_the_stores_lock_until_the_stack_closes():
    store = MemoryTokenStore()
    record = stored(store)
    with ExitStack() as stack:
        record.hold(stack, 5)
        with pytest.raises(AuthError, match="stayed locked by another refresh for 0.2 s") as held:
            with ExitStack() as other:
                stored(store).hold(other, 0.2)
        assert held.value.step == "refresh"
    with ExitStack() as stack:  # released: free again
        stored(store).hold(stack, 0.2)


def test_a_token_is_expiring_within_the_margin():
    soon, later = time.time() + 5, time.time() + 3600
    assert expiring({"access_token": "a", "expires_at": soon})
    assert not expiring({"access_token": "a", "expires_at": later})
    assert not expiring({"access_token": "a"}) and not expiring({"expires_at": soon})
