"""The pagination loop of the list methods (tools/list, prompts/list, resources/list, ...).

It sends nothing itself: the caller's ``request`` does.
"""
from __future__ import annotations

import time
from typing import Callable

from ..errors import McpError
from .codes import INTERNAL_ERROR

MAX_PAGES = 1000


def fetch_all_pages(request: Callable[[dict | None, float], dict], field: str,
                    timeout: float) -> list:
    """Every item of a paginated list (tools/list, prompts/list, resources/list, ...).

    ``request(params, seconds)`` sends one page's request and blocks for its result; the
    cursor is followed until the answer has no ``nextCursor`` (or repeats one), all pages
    within ``timeout`` seconds in all. Raises McpError for a page that is not an object with
    a list under ``field``.
    """
    deadline = time.monotonic() + timeout
    items: list = []
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(MAX_PAGES):
        result = request({"cursor": cursor} if cursor else None,
                         max(0.0, deadline - time.monotonic()))
        page = result.get(field) if isinstance(result, dict) else None
        if not isinstance(page, (list, type(None))) or not isinstance(result, dict):
            raise McpError(INTERNAL_ERROR, f"a page of {field} is not an object with a list of "
                                           f"{field}: {str(result)[:100]}")
        items.extend(page or [])
        cursor = result.get("nextCursor")
        if not cursor or cursor in seen:
            break
        seen.add(cursor)
    return items
