"""threads.renewal: one renewal at a time, however many threads find the same thing stale."""
from __future__ import annotations

import threading
import time

import pytest

from raider_sync.threads.renewal import Renewal

WAIT = 5.0


def test_many_finders_of_one_stale_key_renew_it_once():
    """One thread is renewing when the others find the key stale: they wait for it, or,
    coming later, find it renewed; either way it is renewed once, and each goes on."""
    renewal = Renewal(key=str)
    ran: list[str] = []
    went_on: list[bool] = []
    started, release = threading.Event(), threading.Event()

    def renew() -> None:
        ran.append(threading.current_thread().name)
        assert renewal.here
        started.set()
        release.wait(WAIT)

    def find() -> None:
        went_on.append(renewal.run("s1", renew, time.monotonic() + WAIT))

    first = threading.Thread(target=find, name="first-finder")
    first.start()
    finders = []
    try:
        assert started.wait(WAIT)
        assert not renewal.here  # this thread is not the one renewing
        for i in range(7):
            finders.append(threading.Thread(target=find, name=f"finder-{i}"))
            finders[-1].start()
    finally:
        release.set()
    for thread in [first, *finders]:
        thread.join(WAIT)
        assert not thread.is_alive()
    assert ran == ["first-finder"] and went_on == [True] * 8 and renewal.failed is None
    # a late finder of the same stale key does not renew it again; a new key is renewed
    assert renewal.run("s1", renew, time.monotonic() + WAIT) and len(ran) == 1
    assert renewal.run("s2", renew, time.monotonic() + WAIT) and len(ran) == 2


def test_a_failed_renewal_raises_and_is_remembered_until_one_succeeds():
    renewal = Renewal(key=lambda stale: stale["session"])
    stale = {"session": "s1"}

    def fail() -> None:
        raise RuntimeError("the server is still down")

    with pytest.raises(RuntimeError, match="still down"):
        renewal.run(stale, fail, time.monotonic() + WAIT)
    assert renewal.failed is stale
    ran = []
    assert renewal.run(stale, lambda: ran.append(1), time.monotonic() + WAIT)
    assert ran == [1] and renewal.failed is None  # tried again: a failure renews nothing


def test_waiting_for_another_thread_is_bounded_by_the_deadline():
    renewal = Renewal(key=str)
    started, release = threading.Event(), threading.Event()

    def renew() -> None:
        started.set()
        release.wait(WAIT)

    renewer = threading.Thread(target=renewal.run,
                               args=("s1", renew, time.monotonic() + WAIT))
    renewer.start()
    try:
        assert started.wait(WAIT)
        begun = time.monotonic()
        assert renewal.wait(time.monotonic() + 0.2) is False
        assert renewal.run("s2", renew, time.monotonic() + 0.2) is False
        assert time.monotonic() - begun < WAIT
    finally:
        release.set()
        renewer.join(WAIT)
    assert not renewer.is_alive()
    assert renewal.wait(time.monotonic() + WAIT) is True
