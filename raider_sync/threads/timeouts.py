"""The one rule of every public ``timeout``: what None, 0 and a number of seconds mean.

Every layer checks a caller's timeout with these (the client, the serving side, OAuth, the
shell tools), so they live here, under all of them. Raises InvalidArgument.
"""
from __future__ import annotations

import math
from typing import Any

from ..errors import InvalidArgument


def seconds(timeout: Any, default: float, what: str = "timeout",
            method: str | None = None) -> float:
    """``timeout`` in seconds, ``default`` when it is None: the one rule of every public
    method that takes a timeout. Raises InvalidArgument, naming ``what`` and ``method``, for
    a timeout that is not a finite number above 0 (0, a negative, NaN, infinity, a bool, a
    string): every wait of raider_sync is bounded, and 0 would end a request before it is
    sent."""
    if timeout is None:
        return default
    return _checked(timeout, what, method, zero=False)


def poll_seconds(timeout: Any, what: str = "timeout",
                 method: str | None = None) -> float | None:
    """The timeout of a method that takes what has already arrived (a poll): None stays
    None (the method's documented meaning), 0 means "do not wait", and anything else is
    checked as :func:`seconds` checks it."""
    if timeout is None:
        return None
    return _checked(timeout, what, method, zero=True)


def _checked(timeout: Any, what: str, method: str | None, zero: bool) -> float:
    if (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
            or not math.isfinite(timeout) or timeout < 0 or (timeout == 0 and not zero)):
        where = f" of {method}" if method else ""
        bound = "0 or above" if zero else "above 0"
        raise InvalidArgument(f"{what}{where} must be a number of seconds {bound}, "
                              f"not {timeout!r}")
    return float(timeout)
