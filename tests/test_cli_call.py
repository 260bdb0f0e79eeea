"""``raider-sync call`` starts only the server that owns the tool, so a hanging server
configured beside it costs the call nothing."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import FAKES

HOSTILE = os.path.join(FAKES, "hostile_server.py")
RUN_TIMEOUT = 60


def test_call_starts_only_the_server_that_owns_the_tool(tmp_path):
    mark = tmp_path / "hanging-was-started"
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {
        # never answers initialize; writes MARK_FILE when started
        "hanging": {"command": sys.executable, "args": [HOSTILE, "silent"],
                    "env": {"MARK_FILE": str(mark)}},
        "a.b": {"command": sys.executable, "args": ["-m", "raider_sync.demo"]}}}))
    done = subprocess.run(
        [sys.executable, "-m", "raider_sync", "call", "mcp__a_b__add", "--args",
         '{"a": 2, "b": 3}', "--config", str(config)],
        capture_output=True, text=True, timeout=RUN_TIMEOUT, cwd=str(tmp_path),
        env={**os.environ, "MCP_TIMEOUT": "20000"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "5"
    assert not mark.exists(), "the hanging server was started"


def test_a_tool_name_without_a_known_prefix_still_searches_every_server(tmp_path):
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {
        "demo": {"command": sys.executable, "args": ["-m", "raider_sync.demo"]}}}))
    done = subprocess.run(
        [sys.executable, "-m", "raider_sync", "call", "mcp__nobody__add", "--config",
         str(config)], capture_output=True, text=True, timeout=RUN_TIMEOUT, cwd=str(tmp_path))
    assert done.returncode == 2
    assert "mcp__demo__add" in done.stderr  # the servers were started to list their tools
