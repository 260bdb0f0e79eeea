"""Gateway fixtures: ``make_gateway`` (relays on port 0), ``upstream`` (a fake upstream),
``parser`` (each way the relay can read upstream answers, made the default), the real peers
over Streamable HTTP (``everything_http``, ``sdk_http``) and a real Express app
(``express_query``), started once per worker."""
from __future__ import annotations

import pytest

from raider_sync.gateway import upstream as upstream_pool
from raider_sync.gateway.config import GatewayConfig

from gateway.support import (
    ALICE,
    BOB,
    EXPRESS_QUERY_COMMAND,
    SDK_HTTP_COMMAND,
    UPSTREAM_TOKEN,
    Gateway,
    running_upstream,
    spawn,
    stop,
)


@pytest.fixture
def make_gateway():
    """``make_gateway(servers, keys=None, env=None, **settings)`` -> a running Gateway; the
    default key ``alice`` (value ALICE) may use every server given."""
    made: list[Gateway] = []

    def make(servers: list[dict], keys: list[dict] | None = None, env: dict | None = None,
             threads: int = 8, **settings) -> Gateway:
        if keys is None:
            keys = [{"id": "alice", "env": "ALICE", "servers": [s["name"] for s in servers]}]
        data = {"servers": servers, "keys": keys, **settings}
        config = GatewayConfig.from_dict(data, env={"ALICE": ALICE, "BOB": BOB,
                                                   "UPSTREAM_TOKEN": UPSTREAM_TOKEN, **(env or {})})
        gateway = Gateway(config, threads=threads)
        made.append(gateway)
        return gateway

    yield make
    for gateway in made:
        gateway.stop()


@pytest.fixture(params=upstream_pool.PARSERS)
def parser(request, monkeypatch):
    """Each parser the upstream pool can read answers with, made the one ``Upstream()`` (and
    so every relay made in the test) uses; httptools' is skipped where it is not installed."""
    if request.param == "httptools":
        pytest.importorskip("httptools")
    monkeypatch.setattr(upstream_pool, "PARSER", request.param)
    return request.param


@pytest.fixture
def upstream():
    """A fake upstream on port 0 (``.url``); ``.requests`` holds what it received."""
    with running_upstream() as server:
        yield server


@pytest.fixture(scope="session")
def everything_http(everything_js):
    """server-everything in streamableHttp mode: its MCP URL."""
    proc, port = spawn(["node", everything_js, "streamableHttp"])
    yield f"http://127.0.0.1:{port}/mcp"
    stop(proc)


@pytest.fixture(scope="session")
def sdk_http():
    """The official SDK's server over Streamable HTTP (SSE answers): its MCP URL."""
    proc, port = spawn(SDK_HTTP_COMMAND)
    yield f"http://127.0.0.1:{port}/mcp"
    stop(proc)


@pytest.fixture(scope="session")
def express_query(everything_js):
    """Express (installed with server-everything, which is built on it) answering every request
    with the query as its extended parser reads it: its base URL."""
    proc, port = spawn(EXPRESS_QUERY_COMMAND)
    yield f"http://127.0.0.1:{port}"
    stop(proc)
