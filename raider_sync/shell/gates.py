"""The gates a command passes before it starts: ``allowed_commands`` and the ``validator``.

    refusal("rm -rf /", "/repo", allowed=["ls", "git"])   # "Command not allowed: rm"
    refusal("make", "/repo", validator=lambda c, d: "blocked by policy")  # "Command blocked by policy"

The texts are those of the Perl MCP::Run the seed names. The first word is the command's
first whitespace-separated word, as written: a gate on it limits what a well-behaved caller
runs, it is not a sandbox (``ls; rm x`` starts with ``ls;``).
"""
from __future__ import annotations

import logging
from typing import Any, Callable, Iterable, Optional

log = logging.getLogger("raider_sync.shell")

Validator = Callable[[str, str], Any]


def first_word(command: str) -> str:
    words = command.split()
    return words[0] if words else ""


def refusal(command: str, working_directory: str, *,
            allowed: Optional[Iterable[str]] = None,
            validator: Optional[Validator] = None) -> str | None:
    """Why ``command`` may not start in ``working_directory``, or None when it may.

    ``validator(command, working_directory)`` lets it run by returning True (or 1); a
    non-empty string is the reason (``Command REASON``); anything else, or an exception,
    refuses it with ``Command denied``.
    """
    if allowed is not None:
        word = first_word(command)
        if word not in set(allowed):
            return f"Command not allowed: {word}"
    if validator is None:
        return None
    try:
        verdict = validator(command, working_directory)
    except Exception as exc:  # noqa: BLE001 - a failing validator refuses, it does not crash
        log.warning("command validator failed", exc_info=True)
        return f"Command denied: {exc}" if str(exc) else "Command denied"
    if verdict is True or (type(verdict) is int and verdict == 1):
        return None
    if isinstance(verdict, str) and verdict.strip():
        return f"Command {verdict.strip()}"
    return "Command denied"
