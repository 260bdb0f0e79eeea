"""allowedTools / disabledTools patterns and the token budget of tool definitions."""
from __future__ import annotations

import json

import pytest

from raider_sync import ConfigError, McpConfig
from raider_sync.client.budget import budget_of, estimate_tokens
from raider_sync.client.filters import ToolFilter
from raider_sync.client.launch import fingerprint


def test_names_and_globs_match_the_plain_or_the_prefixed_name():
    only = ToolFilter(allowed=["read_*", "mcp__files__list"])
    assert only.allows("read_file", "mcp__files__read_file")
    assert only.allows("list", "mcp__files__list")
    assert not only.allows("list", "mcp__other__list")
    assert not only.allows("write", "mcp__files__write")
    assert not ToolFilter(allowed=[]).allows("anything")
    assert ToolFilter().allows("anything") and not ToolFilter().active


def test_disabled_wins_over_allowed_and_matching_is_case_sensitive():
    both = ToolFilter(allowed=["*"], disabled=["*secret*", "Drop?"])
    assert both.allows("read")
    assert not both.allows("read_secret") and not both.allows("Drop1")
    assert both.allows("drop1")
    narrowed = ToolFilter(allowed=["a*"]).narrowed(ToolFilter(disabled=["ab"]))
    assert narrowed.allows("ac") and not narrowed.allows("ab") and not narrowed.allows("b")


def test_bad_option_values_name_the_option():
    with pytest.raises(ConfigError, match="allowed_tools: expected a list"):
        ToolFilter(allowed="read_*")
    with pytest.raises(ConfigError, match="disabled_tools: every entry"):
        ToolFilter(disabled=["ok", ""])


def test_the_mcp_json_fields_are_validated_and_change_the_fingerprint():
    config = McpConfig.from_dict({"mcpServers": {
        "a": {"command": "x", "allowedTools": ["read_*"], "disabledTools": ["read_secret"]},
        "b": {"command": "x"}}})
    a, b = config.servers
    assert a.allowed_tools == ["read_*"] and a.disabled_tools == ["read_secret"]
    assert b.allowed_tools is None and b.disabled_tools == []
    plain = McpConfig.from_dict({"mcpServers": {"a": {"command": "x"}}}).server("a")
    assert fingerprint(a, {}) != fingerprint(plain, {})
    with pytest.raises(ConfigError) as error:
        McpConfig.from_dict({"mcpServers": {"a": {"command": "x", "allowedTools": "read"},
                                            "b": {"command": "x", "disabledTools": [""]}}})
    assert any("mcpServers.a.allowedTools" in p for p in error.value.problems)
    assert any("mcpServers.b.disabledTools" in p for p in error.value.problems)


def test_the_estimate_is_a_quarter_of_the_compact_json_rounded_up():
    tool = {"name": "mcp__s__echo", "description": "Echo.", "inputSchema": {"type": "object"}}
    text = json.dumps(tool, separators=(",", ":"))
    assert estimate_tokens(tool) == -(-len(text) // 4)
    big = dict(tool, name="mcp__t__big", description="x" * 4000)
    budget = budget_of([tool, big, {"name": "local_tool"}])
    assert list(budget.tools) == ["mcp__t__big", "mcp__s__echo", "local_tool"]
    assert budget.servers == {"t": estimate_tokens(big), "s": estimate_tokens(tool),
                              "local": estimate_tokens({"name": "local_tool"})}
    assert budget.total == sum(budget.tools.values())
    assert "total" in str(budget)
    grouped = budget_of({"files": [tool]})
    assert grouped.servers == {"files": estimate_tokens(tool)}
