"""raider_sync.protocol: the pagination loop and the handshake's rules, without a server."""
from __future__ import annotations

import pytest

from raider_sync.errors import McpError
from raider_sync.protocol import fetch_all_pages


def pages(*answers):
    asked = []

    def request(params, seconds):
        asked.append(params)
        return answers[len(asked) - 1]
    return request, asked


def test_every_page_is_followed_until_no_cursor():
    request, asked = pages({"tools": [1], "nextCursor": "a"}, {"tools": [2], "nextCursor": "b"},
                           {"tools": [3]})
    assert fetch_all_pages(request, "tools", 5) == [1, 2, 3]
    assert asked == [None, {"cursor": "a"}, {"cursor": "b"}]


def test_a_repeated_cursor_ends_the_loop():
    request, asked = pages({"tools": [1], "nextCursor": "a"}, {"tools": [2], "nextCursor": "a"})
    assert fetch_all_pages(request, "tools", 5) == [1, 2]
    assert len(asked) == 2


@pytest.mark.parametrize("page", [["not", "an", "object"], {"tools": {"a": 1}}, {"tools": "ab"}])
def test_a_malformed_page_is_an_error_naming_the_list(page):
    request, _ = pages(page)
    with pytest.raises(McpError, match="tools"):
        fetch_all_pages(request, "tools", 5)
