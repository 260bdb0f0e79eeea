"""A ToolServer's MCP endpoint mounted inside the sync apps users run: a Flask app (werkzeug's
DispatcherMiddleware) and a Django project (raider_sync.serve.mount), each next to a route of
its own (tests/serve/sites/), served by waitress and by gunicorn (a process of its own each,
one per module and worker) and called by raider_sync, the official SDK's client and FastMCP's."""
from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import NamedTuple

import pytest
import requests

from raider_sync import McpServer

from conftest import HERE, config_of, free_port, poll, wait_for_port
from gateway.support import stop_group

WAIT = 30.0
SITES = {"flask": "serve.sites.flask_site:app", "django": "serve.sites.django_site:application"}
SERVERS = {
    "waitress": ["-m", "waitress", "--listen=127.0.0.1:{port}", "--threads=8", "{app}"],
    # one worker of 8 threads (gunicorn's gthread worker): a stream holds one thread
    "gunicorn": ["-m", "gunicorn", "--workers", "1", "--threads", "8", "--no-control-socket",
                 "--bind", "127.0.0.1:{port}", "{app}"],
}
TOOLS = ["echo", "hold", "release", "steps"]


class Site(NamedTuple):
    framework: str
    base: str   # the site's root URL; its MCP endpoint is base + "/mcp"
    log: Path   # the server's stderr

    @property
    def mcp(self) -> str:
        return self.base + "/mcp"


@pytest.fixture(scope="module", params=[(f, s) for f in SITES for s in SERVERS],
                ids=[f"{f}-{s}" for f in SITES for s in SERVERS])
def site(request, tmp_path_factory):
    """A site under a WSGI server on a free port, its working directory and log in a folder of
    its own; ready once its own route answers (bounded). Its process group is stopped after
    the module."""
    framework, server = request.param
    folder = tmp_path_factory.mktemp(f"{framework}-{server}")
    port = free_port()
    command = [sys.executable, *(part.format(port=port, app=SITES[framework])
                                 for part in SERVERS[server])]
    path = os.pathsep.join(filter(None, [HERE, os.environ.get("PYTHONPATH")]))
    log = folder / "stderr.log"
    with open(log, "wb") as stderr:
        proc = subprocess.Popen(command, cwd=folder, env={**os.environ, "PYTHONPATH": path},
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=stderr, start_new_session=True)
    try:
        wait_for_port(port, WAIT, proc)
        base = f"http://127.0.0.1:{port}"
        # gunicorn listens before its worker has imported the site
        poll(lambda: _answers(base + "/hello"), WAIT, f"{framework} under {server} answering")
        yield Site(framework, base, log)
    finally:
        stop_group(proc)


def _answers(url: str) -> bool:
    try:
        return requests.get(url, timeout=WAIT).status_code == 200
    except requests.ConnectionError:
        return False


def connect(url: str, protocol: str) -> McpServer:
    server = McpServer(config_of({"site": {"type": "http", "url": url, "protocol": protocol}}
                                 ).server("site"))
    try:
        server.start_f().result(WAIT)
        assert server.status == "connected", server.reason
    except BaseException:
        server.stop()
        raise
    return server


def test_the_frameworks_own_routes_still_answer(site):
    hello = requests.get(site.base + "/hello", timeout=WAIT)
    assert hello.status_code == 200 and hello.text == f"hello from {site.framework}"
    # beside the prefix, not below it: the framework's own 404 page, not the MCP app's
    beside = requests.get(site.base + "/mcpx", timeout=WAIT)
    assert beside.status_code == 404 and beside.headers["Content-Type"].startswith("text/html")
    below = requests.get(site.base + "/mcp/other", timeout=WAIT)
    assert below.status_code == 404 and below.headers["Content-Type"] == "application/json"
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    for path in ("/mcp", "/mcp/"):
        answer = requests.post(site.base + path, json=ping, timeout=WAIT)
        assert answer.json() == {"jsonrpc": "2.0", "id": 1, "result": {}}, path


@pytest.mark.parametrize("protocol,era", [("auto", "modern"), ("legacy", "legacy")])
def test_raider_sync_lists_calls_and_gets_progress(site, protocol, era):
    with connect(site.mcp, protocol) as server:
        assert server.era == era and server.instructions == "The tools of a site."
        assert sorted(tool["name"] for tool in server.list_tools()) == [
            f"mcp__site__{name}" for name in TOOLS]
        assert server.call_tool("mcp__site__echo", {"text": "hi"}).text == "hi"
        seen = []
        result = server.call_tool("mcp__site__steps", {"count": 3},
                                  on_progress=lambda done, total, text: seen.append(
                                      (done, total, text)))
        assert result.text == "3 steps"
        assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


def test_a_progress_event_arrives_while_its_call_still_runs(site):
    """Neither the framework nor the WSGI server holds the event stream back: the first
    progress event is seen before the call may end."""
    key = uuid.uuid4().hex
    with connect(site.mcp, "auto") as server:
        seen = []
        call = server.call_tool_f("mcp__site__hold", {"key": key},
                                  on_progress=lambda done, total, text: seen.append(text))
        try:
            poll(lambda: seen, WAIT, "the first progress event of a call still running")
            assert not call.done()
        finally:
            assert server.call_tool("mcp__site__release", {"key": key}).text == "ok"
        assert call.result(WAIT)["content"][0]["text"] == "released"
        assert seen == ["holding", "released"]


def test_the_sdk_client_in_either_era(site):
    from mcp import Client

    async def run(mode: str) -> tuple:
        seen = []

        async def progress(value, total, message):
            seen.append(value)
        async with Client(site.mcp, mode=mode) as client:
            tools = await client.list_tools()
            echoed = await client.call_tool("echo", {"text": "hi"})
            stepped = await client.call_tool("steps", {"count": 2}, progress_callback=progress)
            return (sorted(t.name for t in tools.tools), echoed.content[0].text,
                    stepped.content[0].text, seen)

    for mode in ("2026-07-28", "legacy"):
        names, echoed, stepped, seen = asyncio.run(asyncio.wait_for(run(mode), WAIT))
        assert names == TOOLS and echoed == "hi", mode
        assert stepped == "2 steps" and seen == [1, 2], mode


def test_the_fastmcp_client(site):
    from fastmcp import Client

    async def run() -> tuple:
        seen = []

        async def progress(value, total, message):
            seen.append((value, message))
        async with Client(site.mcp, timeout=WAIT) as client:
            tools = await client.list_tools()
            echoed = await client.call_tool("echo", {"text": "hi"})
            stepped = await client.call_tool("steps", {"count": 2}, progress_handler=progress)
            return (sorted(t.name for t in tools), echoed.content[0].text,
                    stepped.content[0].text, seen)

    names, echoed, stepped, seen = asyncio.run(asyncio.wait_for(run(), WAIT))
    assert names == TOOLS and echoed == "hi"
    assert stepped == "2 steps" and seen == [(1, "step 1"), (2, "step 2")]


def test_the_server_logged_no_error(site):
    """Last in the module, after every client has come and gone."""
    logged = site.log.read_text(errors="replace")
    assert "Traceback" not in logged and "ERROR" not in logged, logged[-2000:]
