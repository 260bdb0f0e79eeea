"""What tool definitions cost a model's context, estimated in tokens.

The estimate is the length of the tool's definition as compact JSON (name, description,
inputSchema and whatever else the server sent) divided by four, rounded up: the same four
characters per token that the output limit counts (:data:`raider_sync.client.content.CHARS_PER_TOKEN`).
A model's tokenizer and the provider's own wrapping of tool definitions differ, so the number
is an estimate for comparing servers and tools, not an invoice.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Union

from .content import CHARS_PER_TOKEN

#: the share of a model's context the definitions may take before tool search pays
SEARCH_SHARE = 0.10


def estimate_tokens(tool: dict) -> int:
    """The estimated token cost of one tool definition (see the module doc)."""
    text = json.dumps(tool, ensure_ascii=False, separators=(",", ":"), default=str)
    return -(-len(text) // CHARS_PER_TOKEN)


@dataclass(frozen=True)
class ToolBudget:
    """The estimated cost of a set of tools: ``tools`` maps each tool's name to its tokens
    (largest first), ``servers`` maps each server (the ``KEY`` of ``mcp__KEY__TOOL``, or
    ``local`` for unprefixed tools) to the sum of its tools, ``total`` is the sum of all."""
    tools: dict[str, int] = field(default_factory=dict)
    servers: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.tools.values())

    def search_pays(self, context_tokens: int, share: float = SEARCH_SHARE) -> bool:
        """Whether a model with ``context_tokens`` of context is better served by tool
        search (``ToolCaller(..., disclosure="search")``) than by every definition: when the
        definitions would take more than ``share`` of it (Claude Code's rule, a tenth)."""
        return self.total > share * context_tokens

    def __str__(self) -> str:
        lines = [f"{tokens:>7}  {name}" for name, tokens in self.tools.items()]
        lines.append(f"{self.total:>7}  total (about {CHARS_PER_TOKEN} characters a token)")
        return "\n".join(lines)


def budget_of(tools: Union[Iterable[dict], Mapping[str, Iterable[dict]]]) -> ToolBudget:
    """The :class:`ToolBudget` of ``tools``: definitions as ``list_tools()`` gives them, or a
    mapping of server name to its definitions (otherwise the server is read from the
    ``mcp__KEY__TOOL`` name)."""
    groups = tools.items() if isinstance(tools, Mapping) else [(None, tools)]
    costs: dict[str, int] = {}
    servers: dict[str, int] = {}
    for group, definitions in groups:
        for tool in definitions:
            name = str(tool.get("name", ""))
            tokens = estimate_tokens(tool)
            costs[name] = costs.get(name, 0) + tokens
            server = group or _server_of(name)
            servers[server] = servers.get(server, 0) + tokens
    ordered = dict(sorted(costs.items(), key=lambda item: (-item[1], item[0])))
    return ToolBudget(ordered, dict(sorted(servers.items(), key=lambda item: -item[1])))


def _server_of(name: str) -> str:
    if name.startswith("mcp__") and "__" in name[5:]:
        return name[5:].split("__", 1)[0]
    return "local"
