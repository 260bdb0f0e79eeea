"""The occurrences a ToolServer published, kept in memory for a while: a bounded log with
cursors.

    log = EventLog(capacity=1000)
    log.append("deploy.done", {"ok": True})               # an Entry, and waiters woken
    start = log.start(cursor, max_age_ms=60_000)          # where a subscription begins
    entries, cursor, more = log.after(start.position, "deploy.done", arguments, limit=100)

A cursor is an opaque string naming a position in this log (``<epoch>.<seq>``: the sequence
number of the last entry seen, the epoch a random tag of this log, so a cursor of another
process or of an earlier run is recognised as unknown). ``None`` is now: nothing is replayed.
A cursor older than what the log still keeps, or one it does not know, starts at the oldest
entry kept (or now) with ``truncated`` set: entries were lost. Thread-safe; :meth:`wait`
blocks at most its timeout.
"""
from __future__ import annotations

import collections
import secrets
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Union

#: entries kept by default
CAPACITY = 1000

#: which subscriptions an entry reaches: None (all), a dict of filter values, or a predicate
Match = Union[None, Mapping[str, Any], Callable[[dict], bool]]


@dataclass(frozen=True)
class Entry:
    """One published occurrence."""

    seq: int
    name: str
    event_id: str
    epoch_ms: int
    data: Any
    match: Match = field(default=None, compare=False)

    def reaches(self, name: str, arguments: dict) -> bool:
        """Whether a subscription to ``name`` with ``arguments`` gets this entry: a dict
        ``match`` holds the entry's values of the filters, and every argument it names must
        equal its value (an argument it does not name does not filter); a callable match is
        asked with the arguments."""
        if name != self.name:
            return False
        match = self.match
        if match is None:
            return True
        if callable(match):
            return bool(match(dict(arguments)))
        return all(arguments[key] == value for key, value in match.items() if key in arguments)


@dataclass(frozen=True)
class Start:
    """Where a subscription begins: after ``position``; ``truncated`` when entries were lost."""

    position: int
    truncated: bool


class EventLog:
    """A bounded, in-memory log of published occurrences."""

    def __init__(self, capacity: int = CAPACITY):
        if not isinstance(capacity, int) or isinstance(capacity, bool) or capacity < 1:
            raise ValueError(f"capacity must be a whole number >= 1, not {capacity!r}")
        self.epoch = secrets.token_hex(4)
        self._entries: collections.deque[Entry] = collections.deque(maxlen=capacity)
        self._seq = 0
        self._changed = threading.Condition()

    def cursor(self, position: int) -> str:
        return f"{self.epoch}.{position}"

    @property
    def position(self) -> int:
        """The sequence number of the last entry appended (0: none yet)."""
        with self._changed:
            return self._seq

    def append(self, name: str, data: Any, match: Match = None,
               event_id: str | None = None) -> Entry:
        """Record an occurrence (its id: ``event_id``, else a new one) and wake the waiters."""
        with self._changed:
            self._seq += 1
            entry = Entry(self._seq, name, event_id or f"evt_{uuid.uuid4().hex}",
                          int(time.time() * 1000), data, match)
            self._entries.append(entry)
            self._changed.notify_all()
        return entry

    def start(self, cursor: str | None, max_age_ms: int | None = None) -> Start:
        """Where a subscription from ``cursor`` begins (None: now)."""
        with self._changed:
            now = self._seq
            oldest = self._entries[0].seq if self._entries else now + 1
            if cursor is None:
                return Start(now, False)
            position = self._position(cursor)
            if position is None or position > now:
                return Start(now, True)  # another log's cursor, or one from the future
            if position < oldest - 1:
                return Start(oldest - 1, True)  # entries after it were dropped
            if max_age_ms is not None:
                floor = int(time.time() * 1000) - max_age_ms
                young = [e.seq for e in self._entries if e.seq > position and e.epoch_ms >= floor]
                old = any(e.seq > position and e.epoch_ms < floor for e in self._entries)
                if old:
                    return Start((young[0] - 1) if young else now, True)
            return Start(position, False)

    def _position(self, cursor: str) -> int | None:
        epoch, _, seq = cursor.partition(".")
        if epoch != self.epoch or not seq.isdigit():
            return None
        return int(seq)

    def after(self, position: int, name: str, arguments: dict, limit: int | None = None
              ) -> tuple[list[Entry], int, bool]:
        """The entries after ``position`` a subscription to ``name`` with ``arguments`` gets
        (at most ``limit``), the position after them, and whether more wait. The position
        moves past entries that do not reach the subscription."""
        with self._changed:
            pending = [e for e in self._entries if e.seq > position]
            end = self._seq
        found: list[Entry] = []
        for entry in pending:
            if entry.reaches(name, arguments):
                if limit is not None and len(found) == limit:
                    return found, found[-1].seq, True
                found.append(entry)
        return found, end, False

    def wait(self, position: int, timeout: float) -> bool:
        """Block until an entry is appended after ``position``, at most ``timeout`` s; True
        when one was."""
        with self._changed:
            return self._changed.wait_for(lambda: self._seq > position, timeout)

    def wake(self) -> None:
        """Wake every waiter (one that should look at something else: a stream ending)."""
        with self._changed:
            self._changed.notify_all()
