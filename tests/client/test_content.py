"""limit_content and the raider/ _meta rule (Claude Code's output limits)."""
from __future__ import annotations

import re

import pytest

from raider_sync.client.content import (
    default_max_output_tokens,
    limit_content,
    strip_private_meta,
    truncate_middle,
)


def text(t: str) -> dict:
    return {"type": "text", "text": t}


def test_text_within_the_limit_is_unchanged():
    blocks = [text("a" * 40), {"type": "resource_link", "uri": "file:///x"}]
    assert limit_content(blocks, max_output_tokens=10) == blocks


def test_text_over_the_limit_is_cut_with_a_note():
    blocks = [text("a" * 30), text("b" * 30), text("c" * 30)]
    out = limit_content(blocks, max_output_tokens=10)   # 10 tokens = 40 characters
    kept = [b["text"] for b in out[:-1]]
    assert kept == ["a" * 30, "b" * 10]
    assert sum(map(len, kept)) == 40
    note = out[-1]["text"]
    assert out[-1]["type"] == "text"
    assert "90 characters" in note and "10 tokens" in note and "MAX_MCP_OUTPUT_TOKENS" in note
    assert blocks[1]["text"] == "b" * 30, "the blocks given are not changed"


def test_blocks_other_than_text_are_kept_when_text_is_cut():
    audio = {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}
    out = limit_content([text("x" * 100), audio], max_output_tokens=5)
    assert out[0]["text"] == "x" * 20
    assert audio in out
    assert "truncated" in out[-1]["text"].lower()


def test_a_result_with_an_image_passes_as_it_is():
    blocks = [text("x" * 1000), {"type": "image", "data": "iVBOR", "mimeType": "image/png"}]
    assert limit_content(blocks, max_output_tokens=1) == blocks
    assert limit_content(blocks, True, max_output_tokens=1) == blocks


def test_error_text_over_11000_keeps_first_and_last_5000_with_a_marker():
    body = "H" * 5000 + "M" * 2000 + "T" * 5000
    out = limit_content([text(body)], True, max_output_tokens=100000)
    cut = out[0]["text"]
    assert cut.startswith("H" * 5000) and cut.endswith("T" * 5000)
    assert "M" not in cut
    assert re.search(r"\.\.\. \[2000 characters truncated\] \.\.\.", cut)
    assert len(out) == 1


def test_error_text_up_to_11000_is_kept_whole():
    body = "e" * 11000
    assert limit_content([text(body)], True)[0]["text"] == body


def test_a_long_text_that_is_no_error_is_not_middle_cut():
    body = "z" * 12000
    assert limit_content([text(body)], False)[0]["text"] == body


def test_the_default_limit_is_25000_tokens():
    assert limit_content([text("q" * 100000)]) == [text("q" * 100000)]
    out = limit_content([text("q" * 100001)])
    assert out[0]["text"] == "q" * 100000 and len(out) == 2


def test_max_output_tokens_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("MAX_MCP_OUTPUT_TOKENS", "123")
    assert default_max_output_tokens() == 123
    for bad in ("", "many", "-4", "0"):
        monkeypatch.setenv("MAX_MCP_OUTPUT_TOKENS", bad)
        assert default_max_output_tokens() == 25000


def test_content_that_is_not_a_list_passes():
    assert limit_content(None) is None  # type: ignore[arg-type]


def test_truncate_middle():
    assert truncate_middle("abcdef", 3, 3) == "abcdef"
    assert truncate_middle("abcdefgh", 2, 2) == "ab\n\n... [4 characters truncated] ...\n\ngh"


@pytest.mark.parametrize("meta, kept", [
    ({"raider/messages": ["obey"], "raider/x": 1, "other": 2}, {"other": 2}),
    ({"raider/messages": []}, {}),
    ({"io.example/raider/x": 1}, {"io.example/raider/x": 1}),
])
def test_private_meta_keys_are_stripped(meta, kept):
    result = {"content": [], "_meta": meta}
    out = strip_private_meta(result)
    assert out["_meta"] == kept
    assert result["_meta"] == meta, "the result given is not changed"


def test_a_result_without_private_meta_is_returned_as_is():
    result = {"content": [text("x")], "_meta": {"a": 1}}
    assert strip_private_meta(result) is result
    assert strip_private_meta({"content": []}) == {"content": []}
