"""McpConfig: Claude Code's .mcp.json shape, ${VAR} expansion, names, and one error per bad file."""
from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from raider_sync import ConfigError, McpConfig, ServerSpec, tool_name
from raider_sync.config import expand_vars, normalize_name


def load(servers: dict, env: dict | None = None) -> McpConfig:
    return McpConfig.from_dict({"mcpServers": servers}, env=env or {})


def write(tmp_path, data) -> str:
    path = tmp_path / ".mcp.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


# -- loading ---------------------------------------------------------------------------------

def test_load_keeps_file_order_and_fields(tmp_path):
    path = write(tmp_path, {"mcpServers": {
        "zeta": {"command": "z", "args": ["-v"], "env": {"A": "1"}, "cwd": "/tmp", "timeout": 1500},
        "alpha": {"type": "http", "url": "https://mcp.example/mcp", "headers": {"X-A": "b"}},
        "mid": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
    }})
    config = McpConfig.load(path, env={})
    assert [s.name for s in config.servers] == ["zeta", "alpha", "mid"]
    assert config.names() == ["zeta", "alpha", "mid"]
    assert config.path == path
    assert config.warnings == []
    zeta = config.server("zeta")
    assert (zeta.transport, zeta.command, zeta.args, zeta.env, zeta.cwd, zeta.timeout) == \
        ("stdio", "z", ["-v"], {"A": "1"}, "/tmp", 1500)
    alpha = config.server("alpha")
    assert (alpha.transport, alpha.url, alpha.headers) == \
        ("http", "https://mcp.example/mcp", {"X-A": "b"})
    assert config.server("mid").transport == "sse"


def test_load_sets_the_project_dir_to_the_files_folder(tmp_path):
    path = write(tmp_path, {"mcpServers": {"a": {"command": "a"}}})
    assert McpConfig.load(path, env={}).server("a").project_dir == str(tmp_path)


def test_from_dict_has_no_project_dir_unless_given():
    assert load({"a": {"command": "a"}}).server("a").project_dir is None
    config = McpConfig.from_dict({"mcpServers": {"a": {"command": "a"}}}, env={},
                                 project_dir="/proj")
    assert config.server("a").project_dir == "/proj"


def test_type_defaults_to_stdio_with_a_command_and_http_with_only_a_url():
    config = load({"cmd": {"command": "x"}, "web": {"url": "http://127.0.0.1:1/mcp"}})
    assert config.server("cmd").transport == "stdio"
    assert config.server("web").transport == "http"


@pytest.mark.parametrize("kind, transport", [("stdio", "stdio"), ("http", "http"),
                                             ("streamable-http", "http"), ("sse", "sse")])
def test_type_names(kind, transport):
    entry = {"type": kind, "command": "x"} if kind == "stdio" else {"type": kind, "url": "http://h/x"}
    assert load({"s": entry}).server("s").transport == transport


def test_an_empty_file_has_no_servers():
    config = McpConfig.from_dict({}, env={})
    assert config.servers == [] and config.warnings == []


# -- keys and tool names ---------------------------------------------------------------------

def test_plugin_server_keys_are_normalised():
    config = load({"plugin:github:issues": {"command": "gh"}, "my server.v2": {"command": "x"}})
    assert config.server("plugin:github:issues").key == "plugin_github_issues"
    assert config.server("my server.v2").key == "my_server_v2"
    # a server can also be found by its key
    assert config.server("plugin_github_issues").name == "plugin:github:issues"


def test_tool_name_normalises_both_parts():
    assert tool_name("github", "create_issue") == "mcp__github__create_issue"
    assert tool_name("plugin:a:b", "do.it now") == "mcp__plugin_a_b__do_it_now"
    assert tool_name("k-1", "t-2") == "mcp__k-1__t-2"
    assert normalize_name("ä/b:c") == "__b_c"
    spec = load({"plugin:x:y": {"command": "c"}}).server("plugin:x:y")
    assert spec.tool_name("a.b") == "mcp__plugin_x_y__a_b"


# -- ${VAR} expansion ------------------------------------------------------------------------

def test_variables_are_expanded_in_command_args_env_url_and_headers():
    env = {"BIN": "/usr/bin/srv", "ARG": "--fast", "TOKEN": "t0k", "HOST": "mcp.example"}
    config = load({
        "s": {"command": "${BIN}", "args": ["${ARG}", "x${ARG}y"], "env": {"K": "${TOKEN}"}},
        "h": {"type": "http", "url": "https://${HOST}/mcp",
              "headers": {"Authorization": "Bearer ${TOKEN}"}},
    }, env)
    s, h = config.server("s"), config.server("h")
    assert (s.command, s.args, s.env) == ("/usr/bin/srv", ["--fast", "x--fasty"], {"K": "t0k"})
    assert (h.url, h.headers) == ("https://mcp.example/mcp", {"Authorization": "Bearer t0k"})
    assert config.warnings == []


def test_defaults_are_used_for_unset_variables_only():
    config = load({"s": {"command": "x", "args": ["${A:-one}", "${B:-two}", "${C:-}"]}},
                  {"A": "set"})
    assert config.server("s").args == ["set", "two", ""]
    assert config.warnings == []


def test_bare_dollar_variables_are_left_alone():
    config = load({"s": {"command": "x", "args": ["$HOME", "$A-b", "${A}"]}}, {"HOME": "/h", "A": "a"})
    assert config.server("s").args == ["$HOME", "$A-b", "a"]


def test_missing_variables_stay_as_written_and_warn_once_per_server():
    config = load({"s": {"command": "${NOPE_B}", "args": ["${NOPE_A}", "${NOPE_B}"],
                         "env": {"X": "${NOPE_A}"}},
                   "ok": {"command": "fine"}})
    spec = config.server("s")
    assert spec.command == "${NOPE_B}" and spec.args == ["${NOPE_A}", "${NOPE_B}"]
    assert len(config.warnings) == 1
    assert "Missing environment variables: NOPE_A, NOPE_B" in config.warnings[0]
    assert "s" in config.warnings[0]


def test_variables_come_from_os_environ_by_default(monkeypatch):
    monkeypatch.setenv("RAIDER_TEST_CFG", "from-env")
    config = McpConfig.from_dict({"mcpServers": {"s": {"command": "${RAIDER_TEST_CFG}"}}})
    assert config.server("s").command == "from-env"


def test_expand_vars_reports_missing_names():
    missing: set[str] = set()
    assert expand_vars("${A}/${B:-b}/${C}", {"A": "a"}, missing) == "a/b/${C}"
    assert missing == {"C"}


# -- bad configs -----------------------------------------------------------------------------

@pytest.mark.parametrize("entry, field", [
    ({"command": 5}, "command"),
    ({"command": "x", "args": "not-a-list"}, "args"),
    ({"command": "x", "args": [1, 2]}, "args"),
    ({"command": "x", "env": {"A": 1}}, "env"),
    ({"command": "x", "env": ["A=1"]}, "env"),
    ({"command": "x", "timeout": "soon"}, "timeout"),
    ({"command": "x", "timeout": -5}, "timeout"),
    ({"command": "x", "timeout": True}, "timeout"),
    ({"command": "x", "timeout": "5000"}, "timeout"),
    ({"command": "x", "timeout": 1.5}, "timeout"),
    ({"args": ["a"]}, "command"),
    ({}, "command"),
    ({"type": "http"}, "url"),
    ({"type": "sse", "url": "not a url"}, "url"),
    ({"type": "websocket", "url": "ws://x"}, "type"),
    ({"type": 7, "command": "x"}, "type"),
    ({"type": "http", "url": "http://h/x", "headers": {"A": 1}}, "headers"),
])
def test_a_bad_entry_names_the_server_and_the_field(entry, field):
    with pytest.raises(ConfigError) as info:
        load({"good": {"command": "x"}, "broken": entry})
    message = str(info.value)
    assert "broken" in message and field in message, message
    assert "good" not in message.replace("mcpServers.broken", "")


def test_every_bad_entry_is_reported_in_one_error_and_nothing_is_loaded(tmp_path):
    path = write(tmp_path, {"mcpServers": {"a": {"command": "ok"}, "b": {"args": []},
                                           "c": "not an object", "d": {"type": "nope"}}})
    with pytest.raises(ConfigError) as info:
        McpConfig.load(path, env={})
    problems = info.value.problems
    assert len(problems) == 3
    assert any("mcpServers.b" in p and "command" in p for p in problems)
    assert any("mcpServers.c" in p and "object" in p for p in problems)
    assert any("mcpServers.d" in p and "type" in p for p in problems)
    assert isinstance(info.value, ValueError)


def test_mcp_servers_must_be_an_object():
    with pytest.raises(ConfigError, match="mcpServers"):
        McpConfig.from_dict({"mcpServers": ["a"]}, env={})
    with pytest.raises(ConfigError):
        McpConfig.from_dict([], env={})


def test_a_name_field_inside_an_entry_is_refused():
    with pytest.raises(ConfigError, match="mcpServers.s"):
        load({"s": {"command": "x", "name": "other"}})


def test_bad_json_names_line_and_column(tmp_path):
    path = write(tmp_path, '{\n  "mcpServers": {\n    "a": {"command": "x",}\n  }\n}\n')
    with pytest.raises(ConfigError) as info:
        McpConfig.load(path)
    message = str(info.value)
    assert path in message and "line 3" in message and "column" in message


def test_an_unreadable_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        McpConfig.load(tmp_path / "missing.json")


def test_a_file_that_is_not_utf8_is_a_config_error_that_says_so(tmp_path):
    path = tmp_path / "latin1.json"
    path.write_bytes('{"mcpServers": {"caf\u00e9": {"command": "x"}}}'.encode("latin-1"))
    with pytest.raises(ConfigError, match="latin1.json: not UTF-8 text"):
        McpConfig.load(path)


def test_an_unknown_server_name_lists_the_configured_ones():
    config = load({"files": {"command": "x"}, "github": {"command": "y"}})
    with pytest.raises(ConfigError) as info:
        config.server("gitlab")
    assert "gitlab" in str(info.value) and "files, github" in str(info.value)
    with pytest.raises(ConfigError, match="none"):
        load({}).server("x")


def test_specs_are_frozen():
    spec = load({"s": {"command": "x"}}).server("s")
    with pytest.raises(ValidationError):
        spec.command = "y"
    assert isinstance(spec, ServerSpec) and not spec.is_plugin
    assert load({"plugin:a:b": {"command": "x"}}).server("plugin:a:b").is_plugin


def test_plugin_folders_are_kept():
    spec = load({"plugin:p:s": {"command": "x", "pluginRoot": "/plug", "pluginData": "/data"}}
                ).server("plugin:p:s")
    assert (spec.plugin_root, spec.plugin_data, spec.key) == ("/plug", "/data", "plugin_p_s")


def test_unknown_fields_are_ignored_with_a_warning():
    """Claude Code writes fields raider_sync does not use: the file still loads."""
    config = load({"remote": {"type": "http", "url": "https://h/mcp", "autoApprove": []},
                   "local": {"command": "x", "disabled": False, "alwaysAllow": []}})
    assert config.server("remote").url == "https://h/mcp"
    assert config.warnings == ["mcpServers.remote: unknown field ignored: autoApprove",
                               "mcpServers.local: unknown fields ignored: alwaysAllow, disabled"]


def test_aliases_and_field_names_are_both_known():
    config = load({"s": {"command": "x", "headersHelper": "helper.sh", "pluginRoot": "/r"}})
    assert config.warnings == []
    assert config.server("s").headers_helper == "helper.sh"


def test_a_whole_float_timeout_is_accepted():
    assert load({"s": {"command": "x", "timeout": 1500.0}}).server("s").timeout == 1500


def test_a_file_with_a_byte_order_mark_loads(tmp_path):
    path = tmp_path / ".mcp.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"mcpServers": {"a": {"command": "x"}}}).encode())
    assert McpConfig.load(path, env={}).names() == ["a"]
