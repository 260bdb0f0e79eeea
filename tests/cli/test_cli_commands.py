"""The command line, run as a user runs it: a subprocess, its output and exit code."""
import json
import subprocess
import sys

import pytest

from raider_sync.cli.client_cli import REASON_CELL_CHARS
from raider_sync.errors import STDERR_QUOTE_CHARS

from conftest import FAKE_SERVER

RUN_TIMEOUT = 60


def cli(*args: str, cwd: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "raider_sync", *args], capture_output=True,
                          text=True, timeout=RUN_TIMEOUT, cwd=cwd)


@pytest.fixture
def empty_dir(tmp_path):
    """A folder without .mcp.json, so the embedded default applies."""
    return str(tmp_path)


def test_servers_on_the_embedded_default(empty_dir):
    done = cli("servers", "--json", cwd=empty_dir)
    assert done.returncode == 0, done.stderr
    [row] = json.loads(done.stdout)
    assert row["name"] == "demo" and row["status"] == "connected" and row["tools"] >= 4


def test_tools_table_and_call(empty_dir):
    done = cli("tools", cwd=empty_dir)
    assert done.returncode == 0, done.stderr
    assert "mcp__demo__add" in done.stdout
    done = cli("call", "mcp__demo__add", "--args", '{"a": 2, "b": 3}', cwd=empty_dir)
    assert done.returncode == 0 and done.stdout.strip() == "5"


def test_call_with_bad_arguments_is_a_tool_error(empty_dir):
    done = cli("call", "mcp__demo__add", "--args", '{"a": 2}', cwd=empty_dir)
    assert done.returncode == 1
    assert "b: Field required" in done.stdout


def test_unknown_tool_and_bad_json_are_usage_errors(empty_dir):
    done = cli("call", "mcp__demo__nope", cwd=empty_dir)
    assert done.returncode == 2 and "mcp__demo__add" in done.stderr
    done = cli("call", "mcp__demo__add", "--args", "{oops", cwd=empty_dir)
    assert done.returncode == 2 and "--args" in done.stderr


def test_config_file_and_failing_server(tmp_path):
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {
        "demo": {"command": sys.executable, "args": ["-m", "raider_sync.cli.demo"]},
        "broken": {"command": "/nonexistent/raider-server"}}}))
    done = cli("servers", "--config", str(config), "--json")
    assert done.returncode == 1
    rows = {row["name"]: row for row in json.loads(done.stdout)}
    assert rows["demo"]["status"] == "connected"
    assert rows["broken"]["status"] == "failed" and "not found" in rows["broken"]["reason"]


def test_servers_bounds_a_reason_that_quotes_a_long_stderr_line(tmp_path):
    """Regression: a server that wrote 65,000 characters of stderr without a newline had
    them all in its reason, and the table printed them in one row."""
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {"loud": {
        "command": sys.executable, "args": [FAKE_SERVER, "exit-at-start,long-words"]}}}))
    line = "x" * 65000 + "boom: cannot start"  # what the fake wrote, then it exited
    done = cli("servers", "--config", str(config), "--json")
    assert done.returncode == 1, done.stderr
    [row] = json.loads(done.stdout)
    assert row["reason"] == ("MCP server 'loud' exited with code 1: …"
                             + line[-STDERR_QUOTE_CHARS:])
    done = cli("servers", "--config", str(config))
    assert done.returncode == 1, done.stderr
    header, table_row = done.stdout.splitlines()
    reason = table_row[header.index("REASON"):]
    assert len(reason) == REASON_CELL_CHARS
    assert reason.startswith("MCP server 'loud' exited with code 1: …")
    assert reason.endswith("x" * 20 + "boom: cannot start")  # the end of the last words
    assert reason.count("…") == 2  # the quote's cut, and the table's


def test_bad_config_names_the_field(tmp_path):
    config = tmp_path / ".mcp.json"
    config.write_text(json.dumps({"mcpServers": {"x": {"command": "a", "args": "not-a-list"}}}))
    done = cli("servers", cwd=str(tmp_path))
    assert done.returncode == 2
    assert "mcpServers.x.args" in done.stderr


def test_read_and_prompt(empty_dir):
    done = cli("read", "demo", "demo://guide.md", cwd=empty_dir)
    assert done.returncode == 0 and "raider_sync demo" in done.stdout
    done = cli("prompt", "demo", "review", "--args", '{"topic": "locks"}', cwd=empty_dir)
    assert done.returncode == 0 and "Please review locks" in done.stdout


def test_demo_runs(empty_dir):
    done = cli("demo", cwd=empty_dir)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "demo: connected" in out and "hello from raider_sync" in out
    assert "Full contents of resource:" in out  # the @demo:demo://guide.md mention
    assert "<status>completed</status>" in out  # the background bash's notification
    assert "<event>ERROR disk full</event>" in out  # the monitor's event
    assert "nothing left running" in out


def test_resources_table_and_json(empty_dir):
    done = cli("resources", cwd=empty_dir)
    assert done.returncode == 0 and "demo://guide.md" in done.stdout
    done = cli("resources", "--json", cwd=empty_dir)
    [row] = json.loads(done.stdout)
    assert row["server"] == "demo" and row["uri"] == "demo://guide.md"


def test_help_documents_the_exit_codes():
    done = cli("--help")
    assert done.returncode == 0
    assert "exit codes:" in done.stdout and "2  bad usage" in done.stdout


def test_tools_as_model_definitions(empty_dir):
    done = cli("tools", "--format", "openai", cwd=empty_dir)
    assert done.returncode == 0, done.stderr
    chat = json.loads(done.stdout)
    add = next(d["function"] for d in chat if d["function"]["name"] == "mcp__demo__add")
    assert add["strict"] is True and add["parameters"]["additionalProperties"] is False
    done = cli("tools", "--format", "openai-responses", "--no-strict", cwd=empty_dir)
    responses = json.loads(done.stdout)
    assert all(d["type"] == "function" and d["strict"] is False for d in responses)
    assert [d["name"] for d in responses] == [d["function"]["name"] for d in chat]
    done = cli("tools", "--format", "anthropic", cwd=empty_dir)
    anthropic = json.loads(done.stdout)
    assert [d["name"] for d in anthropic] == [d["name"] for d in responses]
    assert all(d["input_schema"]["type"] == "object" for d in anthropic)
    done = cli("tools", "--format", "gemini", cwd=empty_dir)
    assert done.returncode == 2 and "invalid choice" in done.stderr
