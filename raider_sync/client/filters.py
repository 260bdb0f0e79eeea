"""Which tools of a server are offered: ``allowedTools`` / ``disabledTools``, names or globs.

    ToolFilter(allowed=["read_*", "list"], disabled=["read_secret"])

A pattern is a tool's name on the server (``read_file``) or its prefixed name
(``mcp__files__read_file``), with the shell's ``*``, ``?`` and ``[...]`` wildcards matched
case-sensitively. A tool is offered when ``allowed`` is None or one of its patterns matches,
and no pattern of ``disabled`` matches: disabled wins. A filtered tool is not listed and is
unknown to calls.
"""
from __future__ import annotations

import fnmatch
import re
from typing import Iterable, Optional

from ..errors import ConfigError

_NOTHING = re.compile(r"(?!)")  # allowedTools: [] offers no tool


def _patterns(value: Optional[Iterable[str]], what: str) -> Optional[tuple[str, ...]]:
    if value is None:
        return None
    if isinstance(value, str):
        raise ConfigError(f"{what}: expected a list of tool names or globs, not a string")
    patterns = tuple(value)
    bad = [p for p in patterns if not isinstance(p, str) or not p]
    if bad:
        raise ConfigError(f"{what}: every entry must be a non-empty string, got {bad[0]!r}")
    return patterns


class ToolFilter:
    """``allowed`` (None: every tool) and ``disabled`` name patterns; see the module doc.
    Raises ConfigError naming the option for a value that is not a list of strings."""

    def __init__(self, allowed: Optional[Iterable[str]] = None,
                 disabled: Optional[Iterable[str]] = None):
        self.allowed = _patterns(allowed, "allowed_tools")
        self.disabled = _patterns(disabled, "disabled_tools") or ()
        self._allowed = (_compile(self.allowed) or _NOTHING) if self.allowed is not None else None
        self._disabled = _compile(self.disabled)

    def __repr__(self) -> str:
        return f"ToolFilter(allowed={self.allowed!r}, disabled={self.disabled!r})"

    @property
    def active(self) -> bool:
        """Whether the filter can leave any tool out."""
        return self.allowed is not None or bool(self.disabled)

    def allows(self, name: str, prefixed: Optional[str] = None) -> bool:
        """Whether the tool named ``name`` on the server (``prefixed`` for the model) is offered."""
        names = (name,) if prefixed is None else (name, prefixed)
        if self._allowed is not None and not any(self._allowed.match(n) for n in names):
            return False
        return not (self._disabled is not None and any(self._disabled.match(n) for n in names))

    def narrowed(self, other: "ToolFilter") -> "ToolFilter":
        """A filter that offers what both this one and ``other`` offer."""
        if not other.active:
            return self
        if not self.active:
            return other
        return _Both(self, other)


class _Both(ToolFilter):
    def __init__(self, first: ToolFilter, second: ToolFilter):
        self.first, self.second = first, second
        self.allowed = None if first.allowed is None and second.allowed is None else (
            (first.allowed or ()) + (second.allowed or ()))
        self.disabled = first.disabled + second.disabled

    def __repr__(self) -> str:
        return f"{self.first!r} & {self.second!r}"

    def allows(self, name: str, prefixed: Optional[str] = None) -> bool:
        return self.first.allows(name, prefixed) and self.second.allows(name, prefixed)


def _compile(patterns: tuple[str, ...]) -> Optional[re.Pattern]:
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns))
