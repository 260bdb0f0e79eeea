"""What a tool call is given, checked before anything is sent: arguments, timeouts, names.

Model APIs hand tool arguments over as a JSON string; raider_sync takes that string when it
holds an object. Anything else that is not a mapping, and a timeout that is not a positive
number, is refused with :class:`~raider_sync.errors.InvalidArgument` naming the argument
(see :func:`seconds` for the rule every public ``timeout`` follows).
"""
from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from typing import Any

from ..errors import InvalidArgument
from ..threads.timeouts import poll_seconds, seconds

__all__ = ["SHOWN_NAMES", "poll_seconds", "seconds", "tool_arguments", "unknown_tool_message"]

#: how many names an unknown-tool error lists
SHOWN_NAMES = 5


def tool_arguments(arguments: Any, tool: str) -> dict:
    """``arguments`` as a fresh dict: None is {}, a mapping is copied, a JSON string of an
    object is parsed. Raises InvalidArgument for anything else."""
    if arguments is None:
        return {}
    if isinstance(arguments, Mapping):
        return dict(arguments)
    if isinstance(arguments, (str, bytes, bytearray)):
        try:
            parsed = json.loads(arguments)
        except (ValueError, RecursionError) as exc:
            raise InvalidArgument(f"arguments of {tool!r}: a string that is not JSON "
                                  f"({exc})") from None
        if isinstance(parsed, dict):
            return parsed
        raise InvalidArgument(f"arguments of {tool!r}: the JSON string holds "
                              f"{_json_kind(parsed)}, not an object")
    raise InvalidArgument(f"arguments of {tool!r}: expected a dict (or a JSON string of an "
                          f"object), got {type(arguments).__name__}")


def unknown_tool_message(lead: str, name: str, names: list[str]) -> str:
    """``lead`` (which says that ``name`` is unknown), then the closest of ``names`` as a
    suggestion and at most :data:`SHOWN_NAMES` of them."""
    message = lead
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.5)
    if not close:  # a model may give the original name, or a prefix of another server
        plain = {n.rsplit("__", 1)[-1]: n for n in names}
        hits = difflib.get_close_matches(name.rsplit("__", 1)[-1], list(plain), n=1, cutoff=0.6)
        close = [plain[hit] for hit in hits]
    if close:
        message += f"; did you mean {close[0]!r}?"
    if names:
        shown = ", ".join(names[:SHOWN_NAMES])
        more = f" and {len(names) - SHOWN_NAMES} more" if len(names) > SHOWN_NAMES else ""
        message += f" (tools: {shown}{more})"
    else:
        message += " (it offers no tools)"
    return message


def _json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return "a number"
