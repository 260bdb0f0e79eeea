"""Tool search: a model is handed two small tools instead of every tool's schema.

A hub with hundreds of tools spends a large part of a model's context on their definitions
before the conversation starts. With ``ToolCaller(hub, disclosure="search")`` the model sees

- :data:`SEARCH_TOOL` ``{"query": words, "limit": n}``: the names and one-line descriptions
  of the tools that best match the words, and
- :data:`LOAD_TOOL` ``{"names": [...]}``: the whole definitions of those tools, which from
  then on are among the definitions the caller gives the model (``to_openai()``,
  ``to_anthropic()``), so the next turn can call them as usual.

Matching is BM25 over the words of a tool's name (split at ``_``, ``-``, ``.`` and case
changes), title, description and argument names; names count three times. Thread-safe.
"""
from __future__ import annotations

import json
import math
import re
import threading
from collections import Counter
from typing import Any, Iterable

from ..client.results import ToolResult

#: the names the model calls them by
SEARCH_TOOL = "search_tools"
LOAD_TOOL = "load_tools"
#: how many matches a search gives unless the model asks for a number (and at most)
DEFAULT_LIMIT, MAX_LIMIT = 5, 20
#: how much a word of the name counts against one of the description
NAME_WEIGHT = 3
#: BM25's constants
_K1, _B = 1.2, 0.75

_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z]|\b|_|\d)|[A-Z]?[a-z]+|[A-Z]+|\d+")


def words(text: str) -> list[str]:
    """The lower-case words of ``text``: ``getWeatherForecast`` and ``get_weather-forecast``
    are both ``get weather forecast``."""
    return [w.lower() for w in _WORD.findall(text)]


def search_definitions() -> list[dict]:
    """The two tools the model is given, as MCP tool dicts."""
    return [
        {"name": SEARCH_TOOL,
         "description": "Search the available tools by what they do. Returns the names and "
                        "one-line descriptions of the best matches; load a tool with "
                        f"{LOAD_TOOL} before calling it.",
         "inputSchema": {"type": "object", "properties": {
             "query": {"type": "string", "description": "words describing the task"},
             "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                       "description": f"how many matches (default {DEFAULT_LIMIT})"}},
             "required": ["query"]}},
        {"name": LOAD_TOOL,
         "description": "Load the full definitions of tools found with "
                        f"{SEARCH_TOOL}, so that they can be called.",
         "inputSchema": {"type": "object", "properties": {
             "names": {"type": "array", "items": {"type": "string"},
                       "description": "tool names as the search gave them"}},
             "required": ["names"]}},
    ]


class ToolIndex:
    """The tools a model may search, by their model-facing names (``name_of(tool)``)."""

    def __init__(self, tools: Iterable[dict], name_of: Any = None):
        name_of = name_of or (lambda tool: tool["name"])
        self._docs: list[tuple[str, dict, Counter]] = []
        frequency: Counter = Counter()
        for tool in tools:
            counts: Counter = Counter()
            for word in words(tool["name"]):
                counts[word] += NAME_WEIGHT
            for field in (tool.get("title"), tool.get("description")):
                if isinstance(field, str):
                    counts.update(words(field))
            schema = tool.get("inputSchema")
            if isinstance(schema, dict) and isinstance(schema.get("properties"), dict):
                for argument in schema["properties"]:
                    counts.update(words(str(argument)))
            self._docs.append((name_of(tool), tool, counts))
            frequency.update(counts.keys())
        total = len(self._docs) or 1
        self._idf = {w: math.log(1 + (total - n + 0.5) / (n + 0.5)) for w, n in frequency.items()}
        self._mean = sum(sum(c.values()) for _, _, c in self._docs) / total or 1.0

    def search(self, query: str, limit: int = DEFAULT_LIMIT) -> list[tuple[str, dict]]:
        """The ``(model name, tool)`` of at most ``limit`` tools that match a word of
        ``query``, best first (ties in listing order)."""
        asked = set(words(query))
        scored = []
        for order, (name, tool, counts) in enumerate(self._docs):
            length = sum(counts.values())
            score = 0.0
            for word in asked & counts.keys():
                tf = counts[word]
                score += self._idf[word] * tf * (_K1 + 1) / (
                    tf + _K1 * (1 - _B + _B * length / self._mean))
            if score > 0:
                scored.append((-score, order, name, tool))
        scored.sort(key=lambda item: (item[0], item[1]))
        return [(name, tool) for _, _, name, tool in scored[:limit]]


class SearchDisclosure:
    """What a model has been shown: the two search tools, and the tools it loaded."""

    def __init__(self, tools: list[dict], names: Any):
        self._tools = {names.model_name(t["name"]): t for t in tools}
        clash = {SEARCH_TOOL, LOAD_TOOL} & set(self._tools)
        if clash:
            raise ValueError(f"a tool is named {sorted(clash)[0]!r}, as the search tool is; "
                             f"rename it or give the model every tool")
        self.index = ToolIndex(tools, lambda tool: names.model_name(tool["name"]))
        self._loaded: dict[str, dict] = {}
        self._lock = threading.Lock()

    def definitions(self) -> list[dict]:
        """The tools to give the model now: the two search tools, then those loaded."""
        with self._lock:
            return search_definitions() + list(self._loaded.values())

    def handles(self, name: str) -> bool:
        return name in (SEARCH_TOOL, LOAD_TOOL)

    def answer(self, name: str, arguments: dict) -> ToolResult:
        """The result of the model's call of a search tool (an error result the model can
        read for bad arguments)."""
        if name == SEARCH_TOOL:
            return self._search(arguments)
        return self._load(arguments)

    def _search(self, arguments: dict) -> ToolResult:
        query = arguments.get("query")
        limit = arguments.get("limit", DEFAULT_LIMIT)
        if not isinstance(query, str) or not query.strip():
            return _text(f"{SEARCH_TOOL} needs a 'query': words describing the task", True)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            limit = DEFAULT_LIMIT
        found = self.index.search(query, min(limit, MAX_LIMIT))
        if not found:
            return _text(f"no tool matches {query!r}; try other words", False,
                         {"tools": []})
        rows = [{"name": name, "description": _first_line(tool)} for name, tool in found]
        text = "\n".join(f"{row['name']}: {row['description']}" for row in rows)
        return _text(text, False, {"tools": rows})

    def _load(self, arguments: dict) -> ToolResult:
        asked = arguments.get("names", arguments.get("name"))
        if isinstance(asked, str):
            asked = [asked]
        if not isinstance(asked, list) or not asked or not all(isinstance(n, str) for n in asked):
            return _text(f"{LOAD_TOOL} needs 'names': a list of tool names from "
                         f"{SEARCH_TOOL}", True)
        unknown = [n for n in asked if n not in self._tools]
        if unknown:
            return _text(f"no tool named {unknown[0]!r}; use the names {SEARCH_TOOL} gives",
                         True)
        loaded = []
        with self._lock:
            for model_name in asked:
                tool = self._tools[model_name]
                self._loaded[model_name] = tool
                loaded.append({"name": model_name, "description": tool.get("description", ""),
                               "input_schema": tool.get("inputSchema")
                               or {"type": "object", "properties": {}}})
        return _text(json.dumps(loaded, ensure_ascii=False), False, {"tools": loaded})


def _first_line(tool: dict) -> str:
    text = tool.get("description") or tool.get("title") or ""
    return str(text).strip().split("\n", 1)[0][:160]


def _text(text: str, error: bool, structured: dict | None = None) -> ToolResult:
    result: dict = {"content": [{"type": "text", "text": text}], "isError": error}
    if structured is not None:
        result["structuredContent"] = structured
    return ToolResult(result)
