"""The callbacks told of one kind of change (raider_sync.serve.listeners), on their own."""
from __future__ import annotations

import logging

from raider_sync.serve.listeners import Listeners

log = logging.getLogger("raider_sync.test_listeners")


def test_callbacks_are_told_in_order_first_before_them_and_a_removed_one_not_at_all():
    told: list[tuple[str, int]] = []
    listeners = Listeners("a test callback", log)
    listeners.add(lambda n: told.append(("a", n)))
    gone = lambda n: told.append(("gone", n))  # noqa: E731
    listeners.add(gone)
    listeners.add(lambda n: told.append(("b", n)))
    listeners.remove(gone)
    listeners.remove(gone)  # one not there is no error
    listeners.tell(1, first=lambda n: told.append(("first", n)))
    listeners.tell(2)
    assert told == [("first", 1), ("a", 1), ("b", 1), ("a", 2), ("b", 2)]


def test_a_failing_callback_is_logged_and_spares_the_others(caplog):
    told: list[int] = []
    listeners = Listeners("a test callback", log)

    def broken(_n: int) -> None:
        raise RuntimeError("boom")
    listeners.add(broken)
    listeners.add(told.append)
    with caplog.at_level(logging.ERROR, logger=log.name):
        listeners.tell(7)
    assert told == [7]
    assert [r.getMessage() for r in caplog.records] == ["a test callback failed"]
    assert caplog.records[0].exc_info is not None
