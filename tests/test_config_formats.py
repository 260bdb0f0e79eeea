"""The config formats users already have (VS Code's and Cursor's mcp.json), their variables,
shapes that hold no servers, and servers whose keys collide."""
from __future__ import annotations

import json
import os
import sys

import pytest

from raider_sync import McpConfig, McpServer
from raider_sync.config import expand_vars, input_variable


def write(folder, data, name: str = "mcp.json") -> str:
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name)
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(data, fh)
    return path


VSCODE = {
    "inputs": [{"type": "promptString", "id": "api-key", "description": "API key",
                "password": True},
               {"type": "promptString", "id": "region", "description": "Region"}],
    "servers": {
        "memory": {"type": "stdio", "command": "npx", "args": ["-y", "mcp-memory",
                                                               "${workspaceFolder}/data"],
                   "env": {"API_KEY": "${input:api-key}", "REGION": "${input:region}",
                           "HOME_DIR": "${userHome}", "WHO": "${env:USER_NAME}"},
                   "envFile": "${workspaceFolder}/.env"},
        "context7": {"type": "http", "url": "https://mcp.context7.com/mcp",
                     "headers": {"Authorization": "Bearer ${input:api-key}"}},
        "legacy": {"type": "sse", "url": "http://localhost:3000/sse"},
    },
}


def test_vscode_mcp_json_loads_with_inputs_from_the_environment(tmp_path):
    workspace = tmp_path / "project"
    path = write(workspace / ".vscode", VSCODE)
    (workspace / ".env").write_text("# secrets\nexport FROM_FILE=one\nQUOTED='two words'\n"
                                    "API_KEY=overridden by env\n")
    env = {input_variable("api-key"): "k-123", "USER_NAME": "ada", "HOME": "/home/ada"}
    config = McpConfig.load(path, env=env)
    assert config.names() == ["memory", "context7", "legacy"]
    memory = config.server("memory")
    assert memory.transport == "stdio"
    assert memory.args == ["-y", "mcp-memory", f"{workspace}/data"]
    assert memory.env == {"FROM_FILE": "one", "QUOTED": "two words", "API_KEY": "k-123",
                          "REGION": "${input:region}", "HOME_DIR": "/home/ada", "WHO": "ada"}
    # the workspace is the folder above .vscode: CLAUDE_PROJECT_DIR too
    assert memory.project_dir == str(workspace)
    context7 = config.server("context7")
    assert (context7.transport, context7.headers) == ("http", {"Authorization": "Bearer k-123"})
    assert config.server("legacy").transport == "sse"
    assert config.warnings == [
        "servers.memory: inputs without a value: region (set RAIDER_SYNC_INPUT_REGION)"]


def test_input_variables_are_named_after_the_id():
    assert input_variable("api-key") == "RAIDER_SYNC_INPUT_API_KEY"
    assert input_variable("db.url") == "RAIDER_SYNC_INPUT_DB_URL"


def test_cursor_mcp_json_with_env_interpolation_and_url_only_entries(tmp_path):
    path = write(tmp_path / ".cursor", {"mcpServers": {
        "userjot": {"url": "https://api.userjot.com/v1/mcp",
                    "headers": {"Authorization": "Bearer ${env:USERJOT_TOKEN}"}},
        "files": {"command": "npx", "args": ["-y", "server-filesystem", "${workspaceFolder}",
                                             "${workspaceFolderBasename}${/}x"],
                  "env": {"TOKEN": "${env:MISSING}"}},
        "old": {"type": "sse", "url": "http://127.0.0.1:8000/sse"},
        "streamy": {"type": "streamable-http", "url": "http://127.0.0.1:8000/mcp"}}})
    config = McpConfig.load(path, env={"USERJOT_TOKEN": "t0k"})
    userjot = config.server("userjot")
    assert (userjot.transport, userjot.headers) == ("http", {"Authorization": "Bearer t0k"})
    files = config.server("files")
    assert files.args == ["-y", "server-filesystem", str(tmp_path), f"{tmp_path.name}/x"]
    assert config.server("old").transport == "sse"
    assert config.server("streamy").transport == "http"
    assert config.warnings == ["mcpServers.files: Missing environment variables: MISSING"]


def test_an_unreadable_env_file_is_a_warning(tmp_path):
    config = McpConfig.from_dict({"servers": {"a": {"command": "a", "envFile": "nope.env"}}},
                                 env={}, project_dir=str(tmp_path))
    assert config.server("a").env == {}
    [warning] = config.warnings
    assert warning.startswith("servers.a: envFile ") and "cannot be read" in warning


@pytest.mark.parametrize("data", [{"server": {"a": {"command": "a"}}},
                                  {"a": {"command": "a"}}])
def test_a_shape_without_servers_is_a_warning_not_a_silent_empty_config(data):
    config = McpConfig.from_dict(data, env={})
    assert config.servers == []
    [warning] = config.warnings
    assert 'no "mcpServers" (Claude Code, Cursor) or "servers" (VS Code) object' in warning


def test_both_shapes_in_one_file_load_and_a_repeated_name_is_refused():
    config = McpConfig.from_dict({"mcpServers": {"a": {"command": "a"}},
                                  "servers": {"b": {"command": "b"}, "a": {"command": "other"}}},
                                 env={})
    assert config.names() == ["a", "b"]
    assert config.server("a").command == "a"
    assert config.warnings == ["servers.a: refused: a server of that name is already "
                               "configured under mcpServers"]


def test_servers_whose_keys_collide_keep_the_first_and_warn():
    config = McpConfig.from_dict({"mcpServers": {"t.z": {"command": "first"},
                                                 "t_z": {"command": "second"},
                                                 "t z": {"command": "third"},
                                                 "other": {"command": "x"}}}, env={})
    assert config.names() == ["t.z", "other"]
    assert config.server("t_z").command == "first"  # found by key: the one that holds it
    assert config.warnings == [
        "mcpServers.t_z: refused: its tool names (mcp__t_z__...) would be those of server "
        "'t.z'; rename one of them",
        "mcpServers.t z: refused: its tool names (mcp__t_z__...) would be those of server "
        "'t.z'; rename one of them"]


def test_editor_variables_expand_once_and_env_wins_over_predefined_names():
    missing: set[str] = set()
    inputs: set[str] = set()
    predefined = {"workspaceFolder": "/ws", "userHome": "/home/u"}
    env = {"userHome": "/from/env", "A": "${B}", "RAIDER_SYNC_INPUT_X": "x!"}
    text = "${workspaceFolder}|${userHome}|${env:A}|${input:x}|${input:y}|${env:NOPE}|${/}"
    assert expand_vars(text, env, missing, predefined, inputs) == \
        "/ws|/from/env|${B}|x!|${input:y}|${env:NOPE}|/"
    assert missing == {"NOPE"} and inputs == {"y"}


def test_a_vscode_config_runs_a_real_server(tmp_path, everything_js):
    """server-everything over stdio, configured the VS Code way, sees the input's value."""
    path = write(tmp_path / ".vscode", {
        "inputs": [{"type": "promptString", "id": "secret", "description": "A secret"}],
        "servers": {"everything": {"type": "stdio", "command": "node",
                                   "args": [everything_js, "stdio"],
                                   "env": {"MY_SECRET": "${input:secret}"}}}})
    config = McpConfig.load(path, env={**os.environ, "RAIDER_SYNC_INPUT_SECRET": "s3cr3t"})
    with McpServer(config.server("everything")) as server:
        assert server.status == "connected", server.reason
        result = server.call_tool("mcp__everything__get-env", {}, timeout=30)
        env = json.loads(result["content"][0]["text"])
        assert env["MY_SECRET"] == "s3cr3t"
        assert env["CLAUDE_PROJECT_DIR"] == str(tmp_path)


def test_a_plain_dict_config_is_unchanged():
    config = McpConfig.from_dict({"mcpServers": {"demo": {
        "command": sys.executable, "args": ["-m", "raider_sync.cli.demo"]}}}, env={})
    assert config.names() == ["demo"] and config.warnings == []
