"""Shaping of tool results: output limits and the ``raider/`` _meta rule.

The rules are Claude Code's: four characters count as a token; text over the limit is cut and
a note says how much there was and how to raise it; a result with an image passes as it is; an
error text over about 11000 characters keeps its first and last 5000 characters.
"""
from __future__ import annotations

import os
from typing import Any

CHARS_PER_TOKEN = 4
DEFAULT_MAX_OUTPUT_TOKENS = 25000
ERROR_TEXT_LIMIT = 11000
ERROR_TEXT_KEEP = 5000
PRIVATE_META_PREFIX = "raider/"
HIDDEN_RESOURCE_MIME = "text/html;profile=mcp-app"


def default_max_output_tokens() -> int:
    """``MAX_MCP_OUTPUT_TOKENS`` from the environment, else 25000."""
    try:
        value = int(os.environ.get("MAX_MCP_OUTPUT_TOKENS", ""))
    except ValueError:
        return DEFAULT_MAX_OUTPUT_TOKENS
    return value if value > 0 else DEFAULT_MAX_OUTPUT_TOKENS


def truncate_middle(text: str, keep_head: int, keep_tail: int) -> str:
    """``text`` with its middle replaced by ``... [N characters truncated] ...``."""
    removed = len(text) - keep_head - keep_tail
    if removed <= 0:
        return text
    tail = text[len(text) - keep_tail:] if keep_tail else ""
    return f"{text[:keep_head]}\n\n... [{removed} characters truncated] ...\n\n{tail}"


def limit_content(content: list[dict], is_error: bool = False, *,
                  max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS) -> list[dict]:
    """The content blocks with their text held to ``max_output_tokens`` (see module doc).

    Returns a new list; the blocks given are not changed. Blocks other than text are kept.
    """
    if not isinstance(content, list):
        return content
    budget = max_output_tokens * CHARS_PER_TOKEN
    if len(content) == 1:  # the usual result: one block, short
        block = content[0]
        if (type(block) is dict and block.get("type") == "text"
                and type(block.get("text")) is str
                and len(block["text"]) <= min(budget, ERROR_TEXT_LIMIT)):
            return [block]
    if any(isinstance(b, dict) and b.get("type") == "image" for b in content):
        return content
    lengths = [len(t) for t in map(_text_of, content) if t is not None]
    long_error = is_error and any(n > ERROR_TEXT_LIMIT for n in lengths)
    if not long_error and sum(lengths) <= budget:
        return list(content)  # nothing to cut: the blocks themselves are not changed
    blocks = [dict(b) if isinstance(b, dict) else b for b in content]
    if long_error:
        for block in blocks:
            text = _text_of(block)
            if text is not None and len(text) > ERROR_TEXT_LIMIT:
                block["text"] = truncate_middle(text, ERROR_TEXT_KEEP, ERROR_TEXT_KEEP)
    total = sum(len(t) for t in map(_text_of, blocks) if t is not None)
    if total <= budget:
        return blocks
    limited: list[dict] = []
    left = budget
    for block in blocks:
        text = _text_of(block)
        if text is None:
            limited.append(block)
        elif left > 0:
            block["text"] = text[:left]
            left -= len(block["text"])
            limited.append(block)
    limited.append({"type": "text", "text": (
        f"[Output truncated: the result had {total} characters of text (about "
        f"{-(-total // CHARS_PER_TOKEN)} tokens), more than the limit of {max_output_tokens} "
        f"tokens. Raise MAX_MCP_OUTPUT_TOKENS (or max_output_tokens) to see more, or ask the "
        f"tool for less.]")})
    return limited


def strip_private_meta(result: dict) -> dict:
    """A shallow copy of ``result`` without ``_meta`` keys under ``raider/``: a foreign server
    cannot hand instructions to the application through them."""
    meta = result.get("_meta")
    if not isinstance(meta, dict) or not any(str(k).startswith(PRIVATE_META_PREFIX) for k in meta):
        return result
    result = dict(result)
    result["_meta"] = {k: v for k, v in meta.items() if not str(k).startswith(PRIVATE_META_PREFIX)}
    return result


def _text_of(block: Any) -> str | None:
    if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
        return block["text"]
    return None


def visible_resources(resources: list) -> list:
    """The resources an application shows: ``ui://`` ones and those of type
    text/html;profile=mcp-app (an MCP app's own pages) are left out, as Claude Code does."""
    return [r for r in resources if isinstance(r, dict)
            and not str(r.get("uri", "")).startswith("ui://")
            and str(r.get("mimeType", "")).replace(" ", "").lower() != HIDDEN_RESOURCE_MIME]
