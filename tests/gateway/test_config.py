"""The gateway config: the issue's example loads; a bad one lists every problem by server/field."""
from __future__ import annotations

import hashlib
import json

import pytest

from raider_sync.errors import ConfigError
from raider_sync.gateway.config import GatewayConfig

BOB_KEY = "bob-secret-key"
EXAMPLE = {
    "public_url": "https://llm.example.com",
    "servers": [
        {"name": "everything", "url": "http://127.0.0.1:3001/mcp", "description": "demo",
         "headers": {"X-Team": "blue"},
         "credential": {"header": "Authorization", "scheme": "Bearer", "env": "EVERYTHING_TOKEN"}},
        {"name": "files", "transport": "stdio", "command": "mcp-files",
         "args": ["--root", "/srv/data"], "env": {}}],
    "keys": [{"id": "alice", "env": "ALICE_KEY", "servers": ["everything", "files"]},
             {"id": "bob", "sha256": hashlib.sha256(BOB_KEY.encode()).hexdigest(),
              "servers": ["everything"]}]}
ENV = {"EVERYTHING_TOKEN": "upstream-token", "ALICE_KEY": "alice-secret-key"}


def test_the_issue_example_loads_with_its_secrets_resolved():
    config = GatewayConfig.from_dict(EXAMPLE, env=ENV)
    assert config.resolved
    assert [s.name for s in config.servers] == ["everything", "files"]
    everything = config.server("everything")
    assert everything.transport == "streamable-http" and everything.relayed
    assert not config.server("files").relayed
    assert config.server("nope") is None
    assert config.upstream_headers(everything) == {"X-Team": "blue",
                                                   "Authorization": "Bearer upstream-token"}
    digests = {key_id: (digest, servers) for key_id, digest, servers in config.key_digests()}
    assert digests["alice"] == (hashlib.sha256(b"alice-secret-key").digest(),
                                frozenset({"everything", "files"}))
    assert digests["bob"][0] == hashlib.sha256(BOB_KEY.encode()).digest()
    assert config.timeouts_for(everything).connect == 10.0
    assert config.timeouts_for(everything).read == 300.0


def test_secrets_stay_out_of_repr_and_dumps():
    config = GatewayConfig.from_dict(EXAMPLE, env=ENV)
    for text in (repr(config), json.dumps(config.model_dump()), str(config)):
        assert "upstream-token" not in text
        assert "alice-secret-key" not in text


def test_load_reads_json_and_reports_syntax_with_line_and_column(tmp_path):
    path = tmp_path / "gateway.json"
    path.write_text(json.dumps(EXAMPLE))
    assert GatewayConfig.load(path, env=ENV).server("everything") is not None
    path.write_text('{"servers": [\n  {"name": }]}')
    with pytest.raises(ConfigError, match="line 2 column"):
        GatewayConfig.load(path, env=ENV)
    with pytest.raises(ConfigError, match="cannot read"):
        GatewayConfig.load(tmp_path / "missing.json", env=ENV)


def test_load_reads_toml(tmp_path):
    """tomllib from Python 3.11, tomli (the toml extra, installed for the tests) on 3.10."""
    path = tmp_path / "gateway.toml"
    path.write_text('public_url = "https://gw.example"\n'
                    '[[servers]]\nname = "a"\nurl = "http://127.0.0.1:1/mcp"\n'
                    '[[keys]]\nid = "k"\nenv = "K"\nservers = ["a"]\n')
    config = GatewayConfig.load(path, env={"K": "v"})
    assert config.server("a").url == "http://127.0.0.1:1/mcp"
    path.write_text('[[servers]\nname = "a"\n')
    with pytest.raises(ConfigError, match="gateway.toml: not valid TOML"):
        GatewayConfig.load(path, env={"K": "v"})
    path.write_bytes(b'public_url = "\xff"\n')
    with pytest.raises(ConfigError, match="not UTF-8"):
        GatewayConfig.load(path, env={"K": "v"})


def test_a_bad_config_lists_every_problem_naming_server_and_field():
    bad = {
        "public_url": "https://op:pw@llm.example.com",
        "servers": [
            {"name": "-bad name", "url": "ftp://x/"},
            {"name": "nourl"},
            {"name": "hdrs", "url": "http://h/mcp",
             "headers": {"Authorization": "x", "Mcp-Session-Id": "y", "Connection": "z",
                         "X-Ok": "fine", "X-Split": "a\r\nb"}},
            {"name": "cred", "url": "http://h/mcp",
             "credential": {"header": "Accept", "env": "T"}},
            {"name": "cmd", "url": "http://h/mcp", "command": "x"},
            {"name": "stdio1", "transport": "stdio", "url": "http://h/"},
            {"name": "weird", "transport": "sse", "url": "http://h/"},
            {"name": "typo", "url": "http://h/", "hedaers": {}},
            {"name": "hdrs", "url": "http://h/mcp2"},
            "not an object"],
        "keys": [
            {"id": "k1", "servers": ["nope"]},
            {"id": "k2", "env": "K2", "sha256": "00" * 32, "servers": []},
            {"id": "k3", "sha256": "xyz", "servers": []},
            {"id": "k4", "env": "UNSET", "servers": ["hdrs"]},
            {"id": "k4", "env": "K4", "servers": []}],
        "timeouts": {"connect": 0},
        "surprise": True}
    with pytest.raises(ConfigError) as caught:
        GatewayConfig.from_dict(bad, env={"K4": "v"})
    problems = caught.value.problems
    text = "\n".join(problems)

    def has(*parts):
        assert any(all(p in line for p in parts) for line in problems), (parts, text)

    has("public_url", "credentials")
    has("servers[0] (-bad name).name", "starts with")
    has("servers[0] (-bad name).url", "absolute")
    has("servers[1] (nourl).url", "needs a url")
    has("servers[2] (hdrs).headers.Authorization", "credential")
    has("servers[2] (hdrs).headers.Mcp-Session-Id", "from the client")
    has("servers[2] (hdrs).headers.Connection", "connection")
    has("servers[2] (hdrs).headers.X-Split", "line break")
    has("servers[3] (cred).credential.header", "cannot carry a credential")
    has("servers[4] (cmd).command", "only a stdio server")
    has("servers[5] (stdio1).command", "needs a command")
    has("servers[5] (stdio1).url", "not relayed")
    has("servers[6] (weird).transport", "stdio, streamable-http")
    has("servers[7] (typo).hedaers", "unknown field")
    has("servers[8] (hdrs).name", "same name")
    has("servers[9]", "expected an object")
    has("keys[0] (k1).env", "exactly one")
    has("keys[0] (k1).servers", "'nope'")
    has("keys[1] (k2).env", "exactly one")
    has("keys[2] (k3).sha256", "64 hex")
    has("keys[4] (k4).id", "same id")
    has("keys[3] (k4).env", "UNSET is not set")
    has("timeouts.connect", "greater than 0")
    has("surprise", "unknown field")
    assert "X-Ok" not in text
    assert "op:pw" not in text and "pw@" not in text
    assert all(problem in str(caught.value) for problem in problems)


def test_missing_secrets_are_problems_too():
    with pytest.raises(ConfigError) as caught:
        GatewayConfig.from_dict(EXAMPLE, env={})
    text = "\n".join(caught.value.problems)
    assert "keys[0] (alice).env: environment variable ALICE_KEY is not set" in text
    assert "servers[0] (everything).credential.env: environment variable EVERYTHING_TOKEN is not set" in text


def test_a_credential_value_with_a_line_break_is_refused():
    with pytest.raises(ConfigError, match="line break"):
        GatewayConfig.from_dict(EXAMPLE, env={**ENV, "EVERYTHING_TOKEN": "a\r\nX-Evil: 1"})


@pytest.mark.parametrize("data,says", [
    ([], "JSON object"), ({"servers": {}}, "servers: expected a list"),
    ({"keys": "alice"}, "keys: expected a list"),
    ({"allowed_origins": ["https://app.example/path"]}, "without a path"),
    ({"max_request_bytes": 0}, "max_request_bytes")])
def test_shape_problems(data, says):
    with pytest.raises(ConfigError, match=says):
        GatewayConfig.from_dict(data, env={})


def test_an_empty_config_is_valid_and_serves_nobody():
    config = GatewayConfig.from_dict({}, env={})
    assert config.servers == [] and config.key_digests() == []
