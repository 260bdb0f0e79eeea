"""Other clients' configuration files: Codex's config.toml, Claude Desktop's file and the
draft standard mcp.json, read as they are, and .mcp.json written in each of them, with a
warning per field a format has no place for and no variable ever expanded into a file."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from raider_sync import McpConfig, McpServer
from raider_sync.config import dialects, expand_vars
from raider_sync.errors import ConfigError

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

CODEX = """
model = "o4"

[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-server"]
env = { "LEVEL" = "debug" }
env_vars = ["DOCS_TOKEN"]
cwd = "/srv/docs"
startup_timeout_sec = 20
tool_timeout_sec = 45.5
enabled_tools = ["search", "read"]
disabled_tools = ["read"]

[mcp_servers.docs.tools.search]
approval_mode = "approve"

[mcp_servers.figma]
url = "https://mcp.figma.com/mcp"
bearer_token_env_var = "FIGMA_TOKEN"
http_headers = { "X-Region" = "us-east-1" }
env_http_headers = { "X-Org" = "FIGMA_ORG" }
scopes = ["files:read"]
oauth = { client_id = "raider" }

[mcp_servers.off]
command = "off-server"
enabled = false
"""

SEP_2633 = {"mcpServers": {
    "weather": {"type": "streamable-http", "url": "https://weather.example/mcp",
                "title": "Weather", "description": "Forecasts by city",
                "headers": {"Authorization": "Bearer ${env:WEATHER_KEY | value:anonymous}"},
                "oauth": {"clientId": "raider", "scopes": ["read"],
                          "redirectUri": "http://localhost:8765/callback"}},
    "notes": {"type": "stdio", "command": "notes-server",
              "args": ["--root", "${env:NOTES_ROOT | env:HOME_DIR | value:/tmp/notes}"],
              "env": {"MODE": "${value:quiet}"}},
}}

NATIVE = {"mcpServers": {
    "files": {"command": "npx", "args": ["-y", "files", "${ROOT:-/data}"],
              "env": {"TOKEN": "${TOKEN}", "LEVEL": "info"}, "timeout": 30000,
              "allowedTools": ["read_*"], "restart": True},
    "remote": {"type": "http", "url": "https://mcp.example/mcp",
               "headers": {"Authorization": "Bearer ${API_TOKEN}", "X-Team": "${TEAM}",
                           "X-Fixed": "yes"},
               "oauth": {"clientId": "raider", "scopes": "read write", "callbackPort": 8765}},
}}


def write(folder, name: str, text: str) -> str:
    path = os.path.join(folder, name)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return path


def test_a_codex_config_toml_loads_with_its_keys_mapped(tmp_path):
    path = write(tmp_path, "config.toml", CODEX)
    config = McpConfig.load(path, env={"DOCS_TOKEN": "t0k", "FIGMA_TOKEN": "f1g",
                                       "FIGMA_ORG": "acme"})
    assert config.names() == ["docs", "figma"]
    docs, figma = config.servers
    assert (docs.command, docs.args, docs.cwd) == ("npx", ["-y", "docs-server"], "/srv/docs")
    assert docs.env == {"LEVEL": "debug", "DOCS_TOKEN": "t0k"}  # env_vars pass through
    assert docs.timeout == 45500
    assert (docs.allowed_tools, docs.disabled_tools) == (["search", "read"], ["read"])
    assert figma.transport == "http" and figma.url == "https://mcp.figma.com/mcp"
    assert figma.headers == {"X-Region": "us-east-1", "X-Org": "acme",
                             "Authorization": "Bearer f1g"}
    assert figma.oauth.client_id == "raider" and figma.oauth.scopes == ["files:read"]
    warnings = "\n".join(config.warnings)
    assert "mcp_servers.off: enabled = false; left out" in warnings
    assert "mcp_servers.docs: no place for startup_timeout_sec, tools" in warnings


def test_a_codex_config_runs_a_real_server_with_a_variable_passed_through(tmp_path,
                                                                           everything_js):
    path = write(tmp_path, "config.toml", f"""
[mcp_servers.everything]
command = "node"
args = [{json.dumps(everything_js)}, "stdio"]
env_vars = ["PASSED_ON"]
tool_timeout_sec = 30
""")
    config = McpConfig.load(path, env={**os.environ, "PASSED_ON": "from-the-shell"})
    with McpServer(config.server("everything")) as server:
        assert server.status == "connected", server.reason
        env = json.loads(server.call_tool("mcp__everything__get-env", {})["content"][0]["text"])
    assert env["PASSED_ON"] == "from-the-shell"


def test_bad_toml_names_the_file_and_the_place(tmp_path):
    path = write(tmp_path, "config.toml", "[mcp_servers.x\ncommand = 1\n")
    with pytest.raises(ConfigError, match=r"config.toml: not valid TOML: .*line 1"):
        McpConfig.load(path)


def test_a_bad_codex_entry_names_its_field(tmp_path):
    path = write(tmp_path, "config.toml", '[mcp_servers.x]\nurl = "ftp://nope"\n')
    with pytest.raises(ConfigError, match=r"mcpServers\.x\.url: .*absolute http"):
        McpConfig.load(path)


def test_the_draft_standard_mcp_json_loads_as_it_is(tmp_path):
    path = write(tmp_path, "mcp.json", json.dumps(SEP_2633))
    config = McpConfig.load(path, env={"HOME_DIR": "/home/ada"})
    weather, notes = config.servers
    assert weather.transport == "http" and weather.title == "Weather"
    assert weather.description == "Forecasts by city"
    assert weather.headers["Authorization"] == "Bearer anonymous"  # the chain's fallback
    assert weather.oauth.callback_port == 8765 and weather.oauth.scopes == ["read"]
    assert notes.args == ["--root", "/home/ada"]  # the first of the chain that is set
    assert notes.env == {"MODE": "quiet"}
    assert config.warnings == []


def test_a_redirect_uri_that_is_not_the_loopback_listener_is_refused():
    with pytest.raises(ConfigError, match=r"oauth: .*redirectUri: must be http://localhost"):
        McpConfig.from_dict({"mcpServers": {"w": {
            "type": "http", "url": "https://w.example/mcp",
            "oauth": {"redirectUri": "https://app.example/cb"}}}})


@pytest.mark.parametrize("text, env, expanded, missing", [
    ("${env:A | value:B}", {"A": "a"}, "a", set()),
    ("${env:A | value:B}", {}, "B", set()),
    ("${env:A | env:C}", {"C": "c"}, "c", set()),
    ("${env:A | env:C}", {}, "${env:A | env:C}", {"A", "C"}),
    ("${value:}", {}, "", set()),
    ("x${env:A}y", {"A": "1"}, "x1y", set()),
])
def test_chains_take_their_first_alternative_that_has_a_value(text, env, expanded, missing):
    unset: set[str] = set()
    assert expand_vars(text, env, unset) == expanded
    assert unset == missing


def test_claude_desktop_files_load_as_they_are(tmp_path):
    path = write(tmp_path, "claude_desktop_config.json", json.dumps({
        "mcpServers": {"fs": {"command": "npx", "args": ["-y", "fs", "/Users/ada"]}},
        "globalShortcut": "Ctrl+Space"}))
    config = McpConfig.load(path)
    assert config.names() == ["fs"] and config.warnings == []


@pytest.mark.parametrize("format", ["claude", "claude-desktop", "vscode", "mcp-json", "codex"])
def test_every_format_round_trips_what_it_can_hold_and_warns_of_the_rest(format):
    secrets = {"TOKEN": "s3cr3t-token", "API_TOKEN": "s3cr3t-api", "TEAM": "t", "ROOT": "/r"}
    converted, warnings = dialects.from_native(NATIVE, format)
    text = dialects.render(converted, format)
    assert "s3cr3t" not in text  # references stay references
    back, _ = dialects.to_native(dialects.parse(text, format), format)
    original = McpConfig.from_dict(NATIVE, env=secrets)
    again = McpConfig.from_dict(back, env=secrets)
    if format == "claude-desktop":
        assert again.names() == ["files"]
        assert any("remote: Claude Desktop's file holds stdio servers only" in w
                   for w in warnings)
    else:
        assert again.names() == ["files", "remote"]
        assert again.server("remote").headers["Authorization"] == "Bearer s3cr3t-api"
        oauth = again.server("remote").oauth
        if format == "vscode":  # VS Code signs in by itself: no oauth block to keep
            assert oauth is None
        else:
            assert oauth.client_id == "raider"
            assert oauth.callback_port == (None if format == "codex" else 8765)
    files = again.server("files")
    assert files.command == "npx" and files.env["TOKEN"] == "s3cr3t-token"
    if format in ("claude", "mcp-json"):
        assert files.args == original.server("files").args  # a default survives
    if format in ("claude", "codex"):
        assert files.timeout == 30000 and files.allowed_tools == ["read_*"]
    if format != "claude":
        assert any("restart" in w for w in warnings)  # no format but ours restarts servers


def test_codex_output_says_what_it_cannot_hold():
    converted, warnings = dialects.from_native(NATIVE, "codex")
    figma = tomllib.loads(dialects.render(converted, "codex"))["mcp_servers"]
    assert figma["remote"]["bearer_token_env_var"] == "API_TOKEN"
    assert figma["remote"]["env_http_headers"] == {"X-Team": "TEAM"}
    assert figma["remote"]["http_headers"] == {"X-Fixed": "yes"}
    assert figma["files"]["env_vars"] == ["TOKEN"] and figma["files"]["env"] == {"LEVEL": "info"}
    assert "files.args: Codex does not expand variables; written as it is" in warnings
    assert any("restart" in w for w in warnings)
    assert any("remote.oauth: no place for callbackPort" in w for w in warnings)


def test_vscode_output_uses_its_variables_and_says_a_default_is_lost():
    converted, warnings = dialects.from_native(NATIVE, "vscode")
    files = converted["servers"]["files"]
    assert files["type"] == "stdio" and files["args"][-1] == "${env:ROOT}"
    assert files["env"]["TOKEN"] == "${env:TOKEN}"
    assert any("default '/data' left out" in w for w in warnings)


def test_an_unknown_format_is_named():
    with pytest.raises(ConfigError, match="unknown configuration format 'yaml'"):
        dialects.from_native(NATIVE, "yaml")


def cli(*args: str, cwd: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "raider_sync", *args], capture_output=True,
                          text=True, timeout=60, cwd=cwd)


def test_cli_import_prints_and_writes_keeping_servers_already_there(tmp_path):
    write(tmp_path, "config.toml", CODEX)
    shown = cli("config", "import", "config.toml", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert list(json.loads(shown.stdout)["mcpServers"]) == ["docs", "figma"]
    assert "warning: mcp_servers.off: enabled = false; left out" in shown.stderr
    assert not os.path.exists(tmp_path / ".mcp.json")  # shown, not written
    write(tmp_path, ".mcp.json", json.dumps({"mcpServers": {"docs": {"command": "mine"}}}))
    done = cli("config", "import", "config.toml", "--write", ".mcp.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    written = json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]
    assert written["docs"] == {"command": "mine"} and "figma" in written
    assert "docs: already in .mcp.json" in done.stderr and "added figma" in done.stderr


def test_cli_export_writes_a_new_file_and_refuses_to_overwrite(tmp_path):
    write(tmp_path, ".mcp.json", json.dumps(NATIVE))
    done = cli("config", "export", "--format", "codex", "--write", "config.toml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "restart" in done.stderr  # the warning for what Codex cannot hold
    loaded = McpConfig.load(tmp_path / "config.toml", env={"TOKEN": "x", "API_TOKEN": "y"})
    assert loaded.names() == ["files", "remote"]
    again = cli("config", "export", "--format", "vscode", "--write", "config.toml",
                cwd=tmp_path)
    assert again.returncode == 2 and "config.toml exists" in again.stderr


def test_cli_import_of_a_broken_file_is_a_usage_error(tmp_path):
    write(tmp_path, "config.toml", "[mcp_servers.x]\nurl = 3\n")
    done = cli("config", "import", "config.toml", cwd=tmp_path)
    assert done.returncode == 2 and "mcpServers.x.url" in done.stderr
