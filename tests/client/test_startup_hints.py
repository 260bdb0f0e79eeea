"""Failure reasons that say what to fix: an ``sse`` entry pointed at a real Streamable HTTP
endpoint (server-everything's)."""
from __future__ import annotations

import pytest

from raider_sync import McpServer

from conftest import config_of
from fakes.http_peers import HttpPeer


@pytest.fixture(scope="module")
def everything(everything_js):
    peer = HttpPeer.everything().start()
    yield peer
    peer.close()


def test_an_sse_entry_at_a_streamable_http_endpoint_hints_at_type_http(everything):
    spec = config_of({"wrong": {"type": "sse", "url": everything.url}}).server("wrong")
    server = McpServer(spec, startup_timeout_ms=10000)
    try:
        server.initialize(timeout=30)
        assert server.status == "failed"
        assert 'use "type": "http"' in server.reason, server.reason
    finally:
        server.stop()
    # and the same URL as "type": "http" connects
    spec = config_of({"right": {"type": "http", "url": everything.url}}).server("right")
    with McpServer(spec) as server:
        assert server.status == "connected", server.reason
