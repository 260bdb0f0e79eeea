"""OAuth through McpServer against a mock authorization server: flows, concurrency, consent
strategies, token stores and the faults a real server will not produce on demand."""
from __future__ import annotations

import json
import os
import re
import stat
import threading

import pytest
import requests

from raider_sync import ConfigError, McpConfig, McpHub, McpServer
from raider_sync.auth import (
    AuthError,
    ConsentRequired,
    FileTokenStore,
    MemoryTokenStore,
    OAuth,
    browser_consent,
    device_consent,
    paste_consent,
    redirect_consent,
)

from conftest import answers_from_threads
from fakes.mock_oauth import MockOAuth


@pytest.fixture
def mock():
    servers = []

    def make(**knobs):
        server = MockOAuth(**knobs)
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.close()


@pytest.fixture
def connect():
    clients = []

    def make(mock_server, auth, **options):
        config = McpConfig.from_dict({"mcpServers": {"svc": {"type": "http",
                                                             "url": mock_server.url}}})
        client = McpServer(config.server("svc"), auth=auth, startup_timeout_ms=20000, **options)
        clients.append(client)
        client.initialize()
        return client

    yield make
    for client in clients:
        client.stop()


def text(result) -> str:
    return result["content"][0]["text"]


def test_a_401_runs_the_flow_and_the_request_goes_through(mock, connect):
    server = mock()
    auth = OAuth(consent=redirect_consent(), store=MemoryTokenStore())
    client = connect(server, auth)
    assert client.status == "connected", client.reason
    assert text(client.call_tool("mcp__svc__echo", {})) == "echo"
    assert auth.status == "authorized" and auth.reason is None
    token_form = server.forms[-1]
    assert token_form["grant_type"] == "authorization_code"
    assert token_form["resource"] == server.url and len(token_form["code_verifier"]) >= 43


def test_twenty_threads_that_meet_a_401_run_one_flow(mock, connect):
    server = mock()
    client = connect(server, OAuth(consent=redirect_consent(), store=MemoryTokenStore()))
    assert server.counts["/authorize"] == 1
    server.revoke_all()
    answers = answers_from_threads(20, 1, lambda message: text(
        client.call_tool("mcp__svc__echo", {"m": message})))
    assert set(answers.values()) == {"echo"}
    assert server.counts["/authorize"] == 2
    assert server.counts["/token"] == 2


def test_a_failed_flow_fails_every_waiting_call_with_the_same_error(mock, connect):
    server = mock()
    auth = OAuth(consent=redirect_consent(), store=MemoryTokenStore())
    client = connect(server, auth)
    server.revoke_all()
    server.wrong_state = True
    # the flow ends only once every call met its 401: a call begun after a failed flow
    # would run a flow of its own (and have an error of its own), as it should
    server.authorize_after = server.counts.get("401", 0) + 10
    errors = []

    def call(_message):
        try:
            client.call_tool("mcp__svc__echo", {})
        except AuthError as exc:
            errors.append(exc)
        return "done"

    answers_from_threads(10, 1, call)
    assert len(errors) == 10 and len({id(e) for e in errors}) == 1
    assert errors[0].step == "consent" and server.counts["/authorize"] == 2
    assert auth.status == "error" and "state" in auth.reason


def test_without_a_consent_handler_the_server_needs_auth_and_says_what_to_run(mock, connect):
    server = mock()
    client = connect(server, OAuth(store=MemoryTokenStore()))
    assert client.status == "needs-auth"
    assert "raider-sync login svc" in client.reason
    assert "/authorize" not in server.counts


def test_an_entry_without_oauth_uses_a_token_a_login_stored(mock, connect, tmp_path,
                                                           monkeypatch):
    server = mock()
    monkeypatch.setenv("RAIDER_SYNC_OAUTH_DIR", str(tmp_path / "oauth"))
    login = OAuth(consent=redirect_consent()).bind(server.url, "svc")
    login.login(timeout=20)
    client = connect(server, None)  # the default: made from the entry, the file store
    assert client.status == "connected", client.reason
    assert server.counts["/authorize"] == 1
    assert stat.S_IMODE(os.stat(tmp_path / "oauth").st_mode) == 0o700


def test_metadata_that_is_html_fails_discovery_with_a_clear_error(mock, connect):
    server = mock(metadata_html=True)
    client = connect(server, OAuth(consent=redirect_consent(), store=MemoryTokenStore()))
    assert client.status == "failed"
    assert "discovery" in client.reason and "text/html, not a JSON object" in client.reason


def test_a_token_endpoint_that_never_answers_fails_within_the_bound(mock, connect):
    server = mock(hang_token=True)
    client = connect(server, OAuth(consent=redirect_consent(), store=MemoryTokenStore(),
                                   timeout=1.0))
    assert client.status == "failed"
    assert re.search(r"token: .*/token did not answer within 1 s", client.reason)


def test_a_redirect_with_the_wrong_state_is_refused_before_the_token_request(mock, connect):
    server = mock(wrong_state=True)
    client = connect(server, OAuth(consent=redirect_consent(), store=MemoryTokenStore()))
    assert client.status == "failed"
    assert "state does not match" in client.reason
    assert "/token" not in server.counts


def test_a_revoked_refresh_token_falls_back_to_a_new_flow(mock, connect):
    server = mock(refresh=True, expires_in=30)  # within the refresh margin: every call refreshes
    client = connect(server, OAuth(consent=redirect_consent(), store=MemoryTokenStore()))
    assert text(client.call_tool("mcp__svc__echo", {})) == "echo"
    assert server.forms[-1]["grant_type"] == "refresh_token"
    assert server.counts["/authorize"] == 1
    server.revoke_all()
    assert text(client.call_tool("mcp__svc__echo", {})) == "echo"
    assert server.counts["/authorize"] == 2


def test_tokens_appear_in_no_repr_and_no_error(mock, connect):
    server = mock(wrong_state=False)
    store = MemoryTokenStore()
    auth = OAuth(consent=redirect_consent(), store=store)
    client = connect(server, auth)
    token = store.load(server.url)["tokens"]["access_token"]
    server.revoke_all()
    server.wrong_state = True
    with pytest.raises(AuthError) as caught:
        client.call_tool("mcp__svc__echo", {})
    for shown in (repr(auth), repr(store), repr(client), str(caught.value), repr(caught.value)):
        assert token not in shown


def test_loopback_consent_serves_the_redirect_and_stops_listening(mock, connect):
    server = mock()
    seen = []

    def browser(url):  # the person's browser: follows the redirect to the listener
        seen.append(url)
        requests.get(url, timeout=10).close()

    client = connect(server, OAuth(consent=browser_consent(timeout=20, open_browser=browser),
                                   store=MemoryTokenStore()))
    assert client.status == "connected", client.reason
    assert "redirect_uri=http%3A%2F%2Flocalhost%3A" in seen[0]


def test_paste_consent_reads_the_landing_url(mock, connect, capsys):
    server = mock()

    def paste(_prompt):
        printed = capsys.readouterr().err
        url = re.search(r"(http://\S+/authorize\S+)", printed).group(1)
        answer = requests.get(url, allow_redirects=False, timeout=10)
        return answer.headers["location"]

    client = connect(server, OAuth(consent=paste_consent(read=paste), store=MemoryTokenStore()))
    assert client.status == "connected", client.reason


def test_device_grant_shows_a_code_and_polls_until_approved(mock, connect):
    server = mock(device=True)
    shown = []
    client = connect(server, OAuth(consent=device_consent(
        show=lambda uri, code, complete: shown.append((uri, code))), store=MemoryTokenStore()))
    assert client.status == "connected", client.reason
    assert shown == [(f"{server.base}/activate", "ABCD-EFGH")]
    assert server.device_polls == 3 and "/authorize" not in server.counts


def test_file_store_writes_0600_files_in_a_0700_folder(tmp_path):
    folder = tmp_path / "tokens"
    store = FileTokenStore(folder)
    store.save("https://x/mcp", {"issuer": "https://as", "tokens": {"access_token": "t"}})
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    (path,) = folder.iterdir()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert store.load("https://x/mcp")["tokens"] == {"access_token": "t"}
    assert store.load("https://other/mcp") is None
    store.delete("https://x/mcp")
    assert list(folder.iterdir()) == []


@pytest.mark.parametrize("kind", ["file", "memory"])
def test_a_store_lock_is_held_by_one_holder_and_the_other_times_out(tmp_path, kind):
    store = FileTokenStore(tmp_path / "tokens") if kind == "file" else MemoryTokenStore()
    other = FileTokenStore(tmp_path / "tokens") if kind == "file" else store  # a 2nd process
    with store.lock("https://x/mcp", 5):
        with pytest.raises(TimeoutError, match="stayed locked for 0.2 s"):
            with other.lock("https://x/mcp", 0.2):
                pass
        with other.lock("https://y/mcp", 0.2):  # another record is not held
            pass
    with other.lock("https://x/mcp", 0.2):
        pass
    if kind == "file":
        locks = list((tmp_path / "tokens").glob("*.lock"))
        assert len(locks) == 2 and {stat.S_IMODE(os.stat(p).st_mode) for p in locks} == {0o600}
        store.save("https://x/mcp", {"issuer": "i"})
        store.delete("https://x/mcp")  # a logout leaves nothing of the record behind
        store.delete("https://y/mcp")
        assert not any((tmp_path / "tokens").iterdir())


def test_file_store_refuses_wrong_permissions_naming_the_fix(tmp_path):
    folder = tmp_path / "tokens"
    store = FileTokenStore(folder)
    store.save("k", {"issuer": "i"})
    (path,) = folder.iterdir()
    os.chmod(path, 0o644)
    with pytest.raises(ConfigError, match=f"chmod 600 {re.escape(str(path))}"):
        store.load("k")
    os.chmod(folder, 0o755)
    with pytest.raises(ConfigError, match=f"chmod 700 {re.escape(str(folder))}"):
        store.load("k")


def test_an_issuer_change_drops_the_registration_and_tokens(mock, connect):
    server = mock()
    store = MemoryTokenStore()
    store.save(server.url, {"issuer": "https://old.example", "client": {
        "client_id": "old-client", "redirect_uris": ["http://localhost/callback"]},
        "tokens": {"access_token": "old"}})
    client = connect(server, OAuth(consent=redirect_consent(), store=store))
    assert client.status == "connected", client.reason
    record = store.load(server.url)
    assert record["issuer"] == server.base and record["client"]["client_id"] != "old-client"


def test_one_oauth_given_to_a_hub_serves_each_server_apart(mock):
    one, two = mock(), mock()
    auth = OAuth(consent=redirect_consent(), store=MemoryTokenStore())
    config = {"mcpServers": {"a": {"type": "http", "url": one.url},
                             "b": {"type": "http", "url": two.url}}}
    with McpHub(config, auth=auth, startup_timeout_ms=20000) as hub:
        assert hub.statuses() == {"a": "connected", "b": "connected"}
        assert hub.client("a").auth is not hub.client("b").auth
    assert one.counts["/authorize"] == two.counts["/authorize"] == 1


def test_login_without_consent_raises_consent_required(mock):
    server = mock()
    auth = OAuth(store=MemoryTokenStore()).bind(server.url, "svc")
    with pytest.raises(ConsentRequired, match="raider-sync login svc"):
        auth.login(timeout=10)
    assert auth.status == "needs-auth"


def test_the_oauth_block_is_read_expanded_and_unknown_keys_warn():
    config = McpConfig.from_dict({"mcpServers": {"r": {
        "type": "http", "url": "https://mcp.example/mcp",
        "oauth": {"clientId": "${CID}", "clientSecret": "${SECRET:-s3}", "callbackPort": 8080,
                  "scopes": "read write", "authServerMetadataUrl": "https://as.example/meta",
                  "bogus": 1}}}}, env={"CID": "abc"})
    oauth = config.server("r").oauth
    assert (oauth.client_id, oauth.client_secret, oauth.callback_port, oauth.scopes) == (
        "abc", "s3", 8080, ["read", "write"])
    assert config.warnings == ["mcpServers.r.oauth: unknown field ignored: bogus"]
    auth = OAuth.for_spec(config.server("r"), store=MemoryTokenStore())
    assert (auth.client_id, auth.callback_port, auth.automatic) == ("abc", 8080, False)
    assert "s3" not in repr(config.server("r"))


@pytest.mark.parametrize("oauth,field", [({"callbackPort": 0}, "callbackPort"),
                                         ({"authServerMetadataUrl": "http://as.example/m"},
                                          "authServerMetadataUrl")])
def test_a_bad_oauth_value_names_its_field(oauth, field):
    with pytest.raises(ConfigError, match=rf"mcpServers\.r\.oauth\.{field}"):
        McpConfig.from_dict({"mcpServers": {"r": {"type": "http", "url": "https://m/mcp",
                                                  "oauth": oauth}}})


def test_a_gate_thread_is_not_left_behind_by_a_consent_that_times_out(mock, connect):
    server = mock()
    gate = threading.Event()
    client = connect(server, OAuth(consent=browser_consent(timeout=0.5,
                                                           open_browser=lambda url: gate.set()),
                                   store=MemoryTokenStore()))
    assert gate.is_set() and client.status == "failed"
    assert "nobody approved within 0.5 s" in client.reason


def test_cli_login_then_servers_connects_and_logout_forgets(mock, tmp_path, monkeypatch,
                                                            capsys):
    from raider_sync.cli import main
    server = mock()
    monkeypatch.setenv("RAIDER_SYNC_OAUTH_DIR", str(tmp_path / "oauth"))
    config = tmp_path / ".mcp.json"
    config.write_text(json.dumps({"mcpServers": {"svc": {"type": "http", "url": server.url}}}))
    assert main(["servers", "--config", str(config), "--json"]) == 1
    assert '"status": "needs-auth"' in capsys.readouterr().out
    assert main(["login", "svc", "--config", str(config), "--consent", "redirect",
                 "--timeout", "20"]) == 0
    assert "Authorized svc" in capsys.readouterr().out
    assert main(["servers", "--config", str(config), "--json"]) == 0
    assert '"status": "connected"' in capsys.readouterr().out
    assert main(["logout", "svc", "--config", str(config)]) == 0
    assert list((tmp_path / "oauth").iterdir()) == []
    assert main(["login", "nope", "--config", str(config)]) == 2


def test_after_a_login_a_reload_retries_a_server_that_needed_auth(mock, tmp_path, monkeypatch):
    server = mock()
    monkeypatch.setenv("RAIDER_SYNC_OAUTH_DIR", str(tmp_path / "oauth"))
    config = {"mcpServers": {"svc": {"type": "http", "url": server.url}}}
    with McpHub(config, startup_timeout_ms=20000) as hub:
        assert hub.statuses() == {"svc": "needs-auth"}
        OAuth(consent=redirect_consent()).bind(server.url, "svc").login(timeout=20)
        assert hub.reload(config).started == ["svc"]
        hub.start(timeout=30)
        assert hub.statuses() == {"svc": "connected"}
