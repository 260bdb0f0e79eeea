"""Waiting for a ``server/discover`` answer over stdio, without stalling in silence.

A handshake-era server may ignore a method it does not know instead of answering -32601;
silence alone cannot tell it from a server still starting (which answers nothing until its
imports are done). So once the discover request has waited :data:`LIVENESS_AFTER` seconds,
a ``ping`` follows it down the same pipe: a server that answers the ping (with a result or
an error) and still not the discover request sent before it is ignoring the discover
request. The ping goes after the discover request, never before: a server of both eras
takes the era of the first message it reads. A wait past :data:`STALL_WARNING` seconds is
reported once, so that the slow start can be logged.
"""
from __future__ import annotations

import time
from concurrent.futures import FIRST_COMPLETED, Future, wait
from typing import Any, Callable

from ...errors import McpError, RaiderError
from ...threads.futures import wait_bounded

#: seconds without a discover answer before the ping is sent
LIVENESS_AFTER = 1.0
#: seconds the discover answer may still take after the ping (sent later) was answered
LIVENESS_GRACE = 1.0
#: seconds without a discover answer before ``stalled`` is called
STALL_WARNING = 3.0


class Ignored(RaiderError):
    """The server answered a ping but not the server/discover request sent before it."""


def await_discover(discover: Future, ping: Callable[[float], Future], timeout: float,
                   stalled: Callable[[float], None] | None = None) -> Any:
    """The result of ``discover`` (a request sent just now that fails by itself after
    ``timeout`` s), raising what it fails with. ``ping(seconds)`` sends the ping; a ping
    answered while the discover answer stays away for :data:`LIVENESS_GRACE` s more raises
    :class:`Ignored`. ``stalled(seconds_left)`` is called once after :data:`STALL_WARNING` s
    without an answer. Blocks at most ``timeout`` s (plus a margin); what is still pending
    when it returns is dropped without a word to the server."""
    start = time.monotonic()
    end = start + timeout
    pinged: Future | None = None
    answered_at: float | None = None
    warned = stalled is None
    try:
        while not discover.done():
            now = time.monotonic()
            if now >= end:
                break  # the request's own deadline fails it, within wait_bounded's margin
            if pinged is None and now - start >= LIVENESS_AFTER:
                pinged = ping(end - now)
            if answered_at is None and pinged is not None and _answered(pinged):
                answered_at = now
            if answered_at is not None and now - answered_at >= LIVENESS_GRACE:
                raise Ignored(f"server/discover had no answer in {now - start:.1f} s, while "
                              f"a ping sent after it was answered")
            if not warned and stalled is not None and now - start >= STALL_WARNING:
                warned = True
                stalled(end - now)
            marks = [end]
            if pinged is None:
                marks.append(start + LIVENESS_AFTER)
            if not warned:
                marks.append(start + STALL_WARNING)
            if answered_at is not None:
                marks.append(answered_at + LIVENESS_GRACE)
            waiting = [discover] + ([pinged] if pinged is not None and answered_at is None
                                    and not pinged.done() else [])
            wait(waiting, timeout=max(0.0, min(marks) - now), return_when=FIRST_COMPLETED)
        return wait_bounded(discover, max(0.0, end - time.monotonic()))
    finally:
        for future in (discover, pinged):  # sent uncancellable: dropped, nothing sent
            if future is not None and not future.done():
                future.cancel()


def _answered(ping: Future) -> bool:
    """Whether the server answered the ping (a result, or an error answer of its own)."""
    if not ping.done() or ping.cancelled():
        return False
    error = ping.exception()
    return error is None or isinstance(error, McpError)
