"""Tool names: a server's key and the ``mcp__KEY__TOOL`` name a model sees (Claude Code's
rules), and finding a server by its name or its key. Nothing blocks; nothing is raised."""
from __future__ import annotations

import re

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def normalize_name(part: str) -> str:
    """Replace every character outside ``[A-Za-z0-9_-]`` with ``_`` (Claude Code's rule)."""
    return _UNSAFE.sub("_", part)


def tool_name(key: str, tool: str) -> str:
    """The name the model sees: ``mcp__KEY__TOOL``, both parts normalised."""
    return f"mcp__{normalize_name(key)}__{normalize_name(tool)}"


def find_named(items, name: str):
    """The first of ``items`` (anything with ``name`` and ``key``) named ``name``, else the
    first whose key is ``name`` (``plugin:a:b`` is also found as ``plugin_a_b``), else None."""
    items = list(items)
    for item in items:
        if item.name == name:
            return item
    for item in items:
        if item.key == name:
            return item
    return None
