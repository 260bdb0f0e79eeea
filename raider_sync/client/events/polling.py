"""The poll loop of an event subscription (``events/poll``), on a thread of its own.

    loop = PollLoop(send, sub, floor=1.0)     # send(params, timeout) -> the poll's result
    loop.first()                              # one poll on the caller's thread: raises a refusal
    loop.start()                              # thread raider-<key>-events-poll
    loop.stop()                               # wakes it and joins it

A poll answers ``{events, cursor, truncated, hasMore, nextPollMs}``: the events go to the
subscription (each but the last with the cursor before the batch, the last with the new one:
a cursor kept midway repeats rather than loses), ``hasMore`` polls again at once, else the
loop waits ``nextPollMs``, never less than ``floor`` seconds. A refusal (an McpError) ends the
subscription; a poll that fails otherwise (a timeout, a connection that broke) is tried again
after ``floor`` seconds, from the same cursor, while the server is up.
"""
from __future__ import annotations

import threading
from typing import Any, Callable

from ...errors import McpError, NotConnected, RaiderError
from ...protocol.codes import INTERNAL_ERROR
from .subscription import EventSubscription

#: the least pause between two polls, unless told otherwise (seconds)
POLL_FLOOR = 1.0

Send = Callable[[dict, float], dict]


class PollLoop:
    """Polls one subscription until stopped. ``send(params, timeout)`` makes one request."""

    def __init__(self, send: Send, sub: EventSubscription, *, key: str, floor: float,
                 max_age_ms: int | None, timeout: float, is_up: Callable[[], bool]):
        self.send = send
        self.sub = sub
        self.key = key
        self.floor = floor
        self.max_age_ms = max_age_ms
        self.timeout = timeout
        self.is_up = is_up
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._next = floor

    def _params(self) -> dict:
        params: dict[str, Any] = {"name": self.sub.name, "arguments": self.sub.arguments,
                                  "cursor": self.sub.latest}
        if self.max_age_ms is not None and self.sub.latest is not None:
            params["maxAgeMs"] = self.max_age_ms
        return params

    def first(self) -> None:
        """The first poll, on this thread. Raises what it fails with."""
        self._take(self.send(self._params(), self.timeout))

    def _take(self, result: Any) -> bool:
        """Hand a poll's events to the subscription; True when more wait at once."""
        if not isinstance(result, dict) or not isinstance(result.get("events", []), list):
            raise McpError(INTERNAL_ERROR, "events/poll answered without an events list")
        before = self.sub.latest
        cursor = result.get("cursor")
        events = [event for event in result.get("events") or [] if isinstance(event, dict)]
        for index, event in enumerate(events):
            self.sub.deliver(event, cursor if index == len(events) - 1 else before)
        self.sub.advance(cursor, bool(result.get("truncated")))
        wait = result.get("nextPollMs")
        self._next = max(self.floor, wait / 1000 if isinstance(wait, (int, float)) else 0.0)
        return bool(result.get("hasMore"))

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"raider-{self.key}-events-poll")
        self._thread.start()

    def _run(self) -> None:
        more = False
        while not self._stop.wait(0 if more else self._next):
            try:
                more = self._take(self.send(self._params(), self.timeout))
            except McpError as exc:
                self.sub.end(f"the server refused events/poll: {exc}")
                return
            except NotConnected as exc:
                self.sub.end(f"the server is not connected: {exc}")
                return
            except RaiderError:  # a timeout, a broken connection: poll again, later
                more = False
                if not self.is_up():
                    self.sub.end("the server is not connected")
                    return

    def stop(self, timeout: float) -> None:
        """Stop polling; joins the thread (a poll under way ends within its timeout)."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
