"""A real round trip: an MCP server of the official Python SDK behind the SDK's own
authorization server (dynamic registration, PKCE checked by the SDK, resource-bound tokens,
refresh tokens), reached through McpServer over Streamable HTTP and legacy SSE."""
from __future__ import annotations

import os
import sys

import pytest

from raider_sync import McpServer
from raider_sync.auth import MemoryTokenStore, OAuth, redirect_consent

from conftest import PEERS
from fakes.http_peers import HttpPeer

SDK_OAUTH_SERVER = os.path.join(PEERS, "sdk_oauth_server.py")


@pytest.fixture(scope="module", params=["streamable-http", "sse"])
def peer(request):
    sse = request.param == "sse"
    server = HttpPeer([sys.executable, SDK_OAUTH_SERVER, "{port}", request.param],
                      "/sse" if sse else "/mcp", kind="sse" if sse else "http")
    server.start()
    yield server
    server.close()


def test_mcp_server_authorizes_and_calls_through_the_sdk_authorization_server(peer):
    store = MemoryTokenStore()
    client = McpServer(peer.spec("sdk"), auth=OAuth(consent=redirect_consent(), store=store),
                       startup_timeout_ms=30000)
    try:
        client.initialize()
        assert client.status == "connected", client.reason
        assert client.call_tool("mcp__sdk__whoami", {}).text == "authorized"
        record = store.load(peer.url)
        assert record["issuer"] == f"http://127.0.0.1:{peer.port}"
        assert record["client"]["token_endpoint_auth_method"] == "client_secret_post"
        assert record["tokens"]["refresh_token"]
    finally:
        client.stop()
