"""An upstream behind OAuth: the gateway gets its token with the client credentials grant,
sends it (never the client's credentials) and renews it when it runs out."""
from __future__ import annotations

import json

import pytest
import requests

from raider_sync import ConfigError
from raider_sync.gateway.config import GatewayConfig

from fakes.mock_oauth import MockOAuth
from gateway.support import ALICE


@pytest.fixture
def protected():
    server = MockOAuth(expires_in=3600)
    yield server
    server.close()


def entry(server, **extra):
    return {"name": "tracker", "url": server.url,
            "oauth": {"client_id": "gateway", "client_secret_env": "TRACKER_SECRET",
                      **extra}}


def call(gw, body):
    return requests.post(f"{gw.url}/mcp/tracker", data=json.dumps(body), timeout=20, headers={
        "Authorization": f"Bearer {ALICE}", "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream"})


def test_the_relay_sends_a_client_credentials_token_and_renews_it(make_gateway, protected):
    gw = make_gateway([entry(protected)], env={"TRACKER_SECRET": "s3cret"})
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t"}}}
    answer = call(gw, init)
    assert answer.status_code == 200, answer.text
    assert answer.json()["result"]["serverInfo"]["name"] == "mock"
    grants = [form["grant_type"] for form in protected.forms]
    assert grants == ["client_credentials"]
    assert call(gw, {**init, "id": 2}).status_code == 200
    assert len(protected.forms) == 1  # the token is reused while it lasts
    protected.expires_in = 30          # the next token is about to run out: renewed each time
    gw.relay.config._oauth["tracker"].logout()
    assert call(gw, {**init, "id": 3}).status_code == 200
    assert call(gw, {**init, "id": 4}).status_code == 200
    assert len(protected.forms) == 3


def test_a_token_the_gateway_cannot_get_is_a_502(make_gateway, protected):
    protected.metadata_html = True
    gw = make_gateway([entry(protected)], env={"TRACKER_SECRET": "s3cret"})
    answer = call(gw, {"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert answer.status_code == 502
    assert answer.json()["error"]["type"] == "upstream_auth"


@pytest.mark.parametrize("extra,env,problem", [
    ({}, {}, "oauth.client_secret_env: environment variable TRACKER_SECRET is not set"),
    ({"method": "private_key_jwt"}, {"TRACKER_SECRET": "x"}, "oauth.method"),
])
def test_bad_oauth_entries_are_named(protected, extra, env, problem):
    with pytest.raises(ConfigError, match=problem):
        GatewayConfig.from_dict({"servers": [entry(protected, **extra)], "keys": []}, env=env)
