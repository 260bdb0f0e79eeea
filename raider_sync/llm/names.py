"""Tool names a model API accepts, and back.

OpenAI (function ``name``) and Anthropic (tool ``name``) take ``^[a-zA-Z0-9_-]{1,64}$``; MCP
allows ``.``, ``/`` and longer names. :class:`ToolNames` gives every tool a name in that
alphabet and keeps the original for the call:

- a name that is valid already is kept as it is;
- any other is cut to its first 55 safe characters (others become ``_``) and gets ``_`` and
  the first 8 hex digits of the SHA-256 of the original name, so the same original name always
  maps to the same model name, whatever other tools there are;
- if two names still meet (a valid name that looks like another's hashed form), the one that
  sorts later takes a longer hash, so the result does not depend on the order of the tools.
"""
from __future__ import annotations

import hashlib
import re
from typing import Iterable

MODEL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
MAX_NAME = 64
_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")
_HASH_DIGITS = 8


def is_model_name(name: str) -> bool:
    """Whether ``name`` matches ``^[a-zA-Z0-9_-]{1,64}$``."""
    return isinstance(name, str) and MODEL_NAME.fullmatch(name) is not None


def hashed_name(name: str, digits: int = _HASH_DIGITS) -> str:
    """``name`` made safe and unique: its safe head, ``_`` and ``digits`` hex digits of its
    SHA-256; at most 64 characters."""
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:digits]
    head = _UNSAFE.sub("_", name)[:MAX_NAME - digits - 1]
    return f"{head}_{digest}"


class ToolNames:
    """A reversible mapping between tool names and model names (see the module doc).

    ``ToolNames(names)``; ``model_name(original)`` and ``original(model_name)``; both raise
    KeyError for a name not in the mapping. Immutable once made; thread-safe to read.
    """

    def __init__(self, names: Iterable[str]):
        unique = list(dict.fromkeys(names))
        for name in unique:
            if not isinstance(name, str):
                raise TypeError(f"a tool name must be a string, not {type(name).__name__}")
        to_model: dict[str, str] = {}
        taken: dict[str, str] = {}
        # valid names first (they keep their name), then the others in sorted order
        for name in sorted(unique, key=lambda n: (not is_model_name(n), n)):
            digits = _HASH_DIGITS
            candidate = name if is_model_name(name) else hashed_name(name, digits)
            while candidate in taken:
                digits += 4
                if digits > 64:  # cannot happen for distinct names; say so rather than loop
                    raise ValueError(f"no model name found for tool {name!r}")
                candidate = hashed_name(name, digits)[-MAX_NAME:]
            to_model[name] = candidate
            taken[candidate] = name
        self._to_model = {name: to_model[name] for name in unique}
        self._to_original = {model: name for name, model in self._to_model.items()}

    def __len__(self) -> int:
        return len(self._to_model)

    def __contains__(self, model_name: object) -> bool:
        return model_name in self._to_original

    def __repr__(self) -> str:
        changed = {o: m for o, m in self._to_model.items() if o != m}
        return f"<ToolNames {len(self)} names, {len(changed)} changed>"

    def model_name(self, original: str) -> str:
        """The model's name for the tool ``original``."""
        return self._to_model[original]

    def original(self, model_name: str) -> str:
        """The tool's own name for the model's ``model_name``."""
        return self._to_original[model_name]

    def items(self) -> list[tuple[str, str]]:
        """``(original, model_name)`` pairs, in the order the names were given."""
        return list(self._to_model.items())
