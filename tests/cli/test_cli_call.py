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
        "a.b": {"command": sys.executable, "args": ["-m", "raider_sync.cli.demo"]}}}))
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
        "demo": {"command": sys.executable, "args": ["-m", "raider_sync.cli.demo"]}}}))
    done = subprocess.run(
        [sys.executable, "-m", "raider_sync", "call", "mcp__nobody__add", "--config",
         str(config)], capture_output=True, text=True, timeout=RUN_TIMEOUT, cwd=str(tmp_path))
    assert done.returncode == 2
    assert "mcp__demo__add" in done.stderr  # the servers were started to list their tools


def test_a_server_that_failed_to_start_is_named_with_its_reason(tmp_path):
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"broken": {
        "command": sys.executable,
        "args": ["-c", "import sys; sys.exit('boom: TOKEN is not set')"]}}}))
    call = [sys.executable, "-m", "raider_sync", "call", "mcp__broken__add", "--config",
            str(config)]
    done = subprocess.run(call, capture_output=True, text=True, timeout=RUN_TIMEOUT,
                          cwd=str(tmp_path))
    assert done.returncode == 1, done.stderr
    assert "broken failed" in done.stderr and "boom: TOKEN is not set" in done.stderr
    done = subprocess.run([*call, "--json"], capture_output=True, text=True,
                          timeout=RUN_TIMEOUT, cwd=str(tmp_path))
    assert done.returncode == 1, done.stderr
    error = json.loads(done.stdout)["error"]
    assert error["type"] == "NotConnected" and "boom: TOKEN is not set" in error["message"]
    [server] = error["servers"]
    assert server["name"] == "broken" and server["status"] == "failed"
    assert "boom: TOKEN is not set" in server["reason"]


def test_json_errors_are_objects_on_stdout(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "raider_sync", "call", "mcp__demo__nope", "--json"],
        capture_output=True, text=True, timeout=RUN_TIMEOUT, cwd=str(tmp_path))
    assert done.returncode == 2  # every server connected: the name is the caller's mistake
    error = json.loads(done.stdout)["error"]
    assert error["type"] == "ConfigError" and "mcp__demo__add" in error["message"]


def test_a_timeout_of_zero_is_a_usage_error_before_any_server_starts(tmp_path):
    mark = tmp_path / "started"
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"slow": {
        "command": sys.executable, "args": [HOSTILE, "silent"],
        "env": {"MARK_FILE": str(mark)}}}}))
    for timeout in ("0", "-1", "nan"):
        done = subprocess.run(
            [sys.executable, "-m", "raider_sync", "call", "mcp__slow__echo", "--timeout",
             timeout, "--config", str(config)], capture_output=True, text=True,
            timeout=RUN_TIMEOUT, cwd=str(tmp_path), env={**os.environ, "MCP_TIMEOUT": "2000"})
        assert done.returncode == 2, done.stderr
        assert "--timeout" in done.stderr
        assert not mark.exists(), f"--timeout {timeout}: the server was started"
