"""An entry that sets its own Authorization header (in ``headers`` or from its headersHelper)
in front of a relay that answers 401 with a Bearer challenge of its own: raider_sync's gateway
(``Bearer realm="raider-sync-gateway"``) before the official SDK's server. OAuth stays out
unless the entry asks for it with an ``oauth`` key, and a refused header says so."""
from __future__ import annotations

import json
import sys

import pytest

from raider_sync import McpHub, McpServer
from raider_sync.auth import OAuth, redirect_consent
from raider_sync.gateway.config import GatewayConfig

from conftest import config_of
from fakes.http_peers import HttpPeer
from gateway.support import Gateway

KEY = "relay-key-0123456789"


@pytest.fixture(scope="module")
def upstream():
    peer = HttpPeer.sdk().start()
    try:
        yield peer
    finally:
        peer.close()


@pytest.fixture
def relay(upstream):
    """A relay per test: its pooled connections to the upstream end with it."""
    config = GatewayConfig.from_dict(
        {"servers": [{"name": "sdk", "url": upstream.url}],
         "keys": [{"id": "team", "env": "RELAY_KEY", "servers": ["sdk"]}]},
        env={"RELAY_KEY": KEY})
    gateway = Gateway(config)
    try:
        yield gateway
    finally:
        gateway.stop()


@pytest.fixture
def oauth_dir(tmp_path, monkeypatch):
    folder = tmp_path / "oauth"
    monkeypatch.setenv("RAIDER_SYNC_OAUTH_DIR", str(folder))
    return folder


def entry(relay, tmp_path, how: str, key: str, **extra) -> dict:
    """An http entry for the relay that sends ``key``, set in ``headers`` or by a helper."""
    value = {"type": "http", "url": f"{relay.url}/mcp/sdk", **extra}
    if how == "headers":
        value["headers"] = {"Authorization": f"Bearer {key}"}
    else:
        helper = tmp_path / "helper.py"
        helper.write_text(f"print({json.dumps(json.dumps({'Authorization': f'Bearer {key}'}))})")
        value["headersHelper"] = f"{sys.executable} {helper}"
    return value


def started(spec, **options) -> McpServer:
    server = McpServer(spec, startup_timeout_ms=20000, **options)
    server.initialize()
    return server


@pytest.mark.parametrize("how", ["headers", "headersHelper"])
def test_a_refused_configured_header_fails_saying_so_instead_of_needing_auth(
        relay, tmp_path, oauth_dir, how):
    spec = config_of({"relay": entry(relay, tmp_path, how, "a-wrong-key")}).server("relay")
    server = started(spec)
    try:
        assert server.status == "failed", server.reason
        assert "refused the configured Authorization header (HTTP 401" in server.reason
        assert "a valid key is required" in server.reason  # the relay's own words
        assert "raider-sync login" not in server.reason
    finally:
        server.stop()
    assert not oauth_dir.exists()  # no registration, no token record


@pytest.mark.parametrize("how", ["headers", "headersHelper"])
def test_the_right_configured_header_connects_and_calls(relay, tmp_path, oauth_dir, how):
    spec = config_of({"relay": entry(relay, tmp_path, how, KEY)}).server("relay")
    server = started(spec)
    try:
        assert server.status == "connected", server.reason
        assert server.call_tool("mcp__relay__echo", {"message": "through"}).text == "through"
    finally:
        server.stop()


def test_a_hub_wide_oauth_leaves_an_entry_with_its_own_header_alone(relay, tmp_path, oauth_dir):
    config = config_of({"relay": entry(relay, tmp_path, "headers", "a-wrong-key")})
    with McpHub(config, auth=OAuth(consent=redirect_consent())) as hub:
        server = hub.client("relay")
        assert server.status == "failed", server.reason
        assert "refused the configured Authorization header" in server.reason
        assert "registration" not in server.reason


def test_an_entry_with_an_oauth_key_asks_for_oauth_over_its_own_header(relay, tmp_path,
                                                                       oauth_dir):
    spec = config_of({"relay": entry(relay, tmp_path, "headers", "a-wrong-key",
                                     oauth={})}).server("relay")
    server = started(spec)
    try:
        assert server.status == "needs-auth", server.reason
        assert "raider-sync login relay" in server.reason
    finally:
        server.stop()
