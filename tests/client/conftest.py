"""Fixtures shared by the client tests."""
from __future__ import annotations

import pytest

from raider_sync import McpServer

from conftest import config_of, fake_spec
from fakes.http_fault_server import fault_servers

WAIT = 30.0


@pytest.fixture
def fake():
    """``fake(**options)``: a started FaultServer, stopped afterwards."""
    yield from fault_servers()


@pytest.fixture
def started():
    """``started(mode, **options)``: a started McpServer on the fake, stopped afterwards."""
    servers: list[McpServer] = []

    def start(mode: str = "plain", spec_extra: dict | None = None, **options) -> McpServer:
        options.setdefault("kill_grace", 0.2)
        server = McpServer(fake_spec(mode, **(spec_extra or {})), **options)
        servers.append(server)
        server.start_f().result(WAIT)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def connect():
    """``connect(url_or_fake, **options)``: a started McpServer, stopped afterwards."""
    clients: list[McpServer] = []

    def make(target, entry: dict | None = None, env: dict | None = None, **options):
        url = target if isinstance(target, str) else target.url
        spec = config_of({"fault": {"type": "http", "url": url, **(entry or {})}},
                         env=env).server("fault")
        client = McpServer(spec, **options)
        clients.append(client)
        client.start_f().result(WAIT)
        return client

    yield make
    for client in clients:
        client.stop()
