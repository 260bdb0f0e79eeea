"""A real ToolServer serving the task fixtures (tests/serve/task_tools.py) over HTTP, in this
process, with what the tests observe on the server's side: the tasks/* requests it received
and what its handlers saw of cancellation. And server-everything, whose
simulate-research-query is a 2025-11-25 task (a ``required`` task tool: four stages of about
a second; an elicitation on the tasks/result stream when ``ambiguous``), over stdio and
Streamable HTTP."""
from __future__ import annotations

import queue
import threading
from collections import Counter

import pytest

from raider_sync import Context, McpConfig, McpServer
from raider_sync.gateway.cli import Serving
from raider_sync.serve.serving_http import wsgi_app

from conftest import EVERYTHING_JS, config_of, everything_available, poll
from fakes.http_peers import HttpPeer
from serve.task_tools import task_tools

WAIT = 30.0
#: server-everything's task tool, as the client names it
RESEARCH = "mcp__everything__simulate-research-query"
ACCEPT = {"action": "accept", "content": {"confirm": True, "name": "Ada"}}


class Served:
    """The tool server, its URL, the count of requests by ``Mcp-Method`` and the outcomes
    the ``watched`` tool's handlers saw ("cancelled" or "done")."""

    def __init__(self, **options):
        self.tools = task_tools(**options)
        self.outcomes: queue.Queue = queue.Queue()
        self.methods: Counter = Counter()
        self._lock = threading.Lock()

        @self.tools.tool(task="optional")
        def watched(ctx: Context, seconds: float = 60.0) -> str:
            """Wait ``seconds`` unless cancelled; say which happened."""
            cancelled = ctx.wait_cancelled(seconds)
            self.outcomes.put("cancelled" if cancelled else "done")
            return "cancelled" if cancelled else "done"

        self.app = wsgi_app(self.tools)
        self.serving = Serving(self._counting).start()
        self.url = f"{self.serving.url}/mcp"

    def _counting(self, environ, start_response):
        with self._lock:
            self.methods[environ.get("HTTP_MCP_METHOD", "")] += 1
        return self.app(environ, start_response)

    def count(self, method: str) -> int:
        with self._lock:
            return self.methods[method]

    def spec(self, **entry):
        return McpConfig.from_dict({"mcpServers": {"jobs": {
            "type": "http", "url": self.url, **entry}}}).server("jobs")

    def client(self, **options) -> McpServer:
        options.setdefault("on_elicitation", lambda params: ACCEPT)
        server = McpServer(self.spec(), **options)
        server.initialize(WAIT)
        assert server.status == "connected" and server.era == "modern", server.reason
        return server

    def close(self) -> None:
        self.app.close()
        self.serving.stop(10)
        self.tools.close()


@pytest.fixture
def served():
    made = Served(task_poll_interval=0.1)
    yield made
    made.close()


@pytest.fixture
def client(served):
    server = served.client()
    yield server
    server.stop()


def need_everything() -> None:
    if not everything_available():
        pytest.skip("server-everything is not installed: run `make peers`")


@pytest.fixture(scope="module")
def http_peer():
    """server-everything over Streamable HTTP, one process for the module."""
    need_everything()
    peer = HttpPeer.everything().start()
    yield peer
    peer.close()


@pytest.fixture(scope="module", params=["stdio", "http"])
def transport(request):
    """The transport of the test, with the module's HTTP peer when it is "http" (started
    before the test's own leak check)."""
    need_everything()
    return request.param, (request.getfixturevalue("http_peer") if request.param == "http"
                           else None)


@pytest.fixture
def connect(transport):
    """``connect(**options)``: a McpServer on server-everything over the transport,
    connected, with simulate-research-query listed; stopped afterwards."""
    servers: list[McpServer] = []
    kind, peer = transport

    def make(**options) -> McpServer:
        spec = (peer.spec("everything") if kind == "http" else config_of(
            {"everything": {"command": "node", "args": [EVERYTHING_JS, "stdio"]}}
        ).server("everything"))
        server = McpServer(spec, protocol="legacy", kill_grace=0.5, **options)
        servers.append(server)
        server.start_f().result(WAIT)
        assert server.status == "connected", server.reason
        # registered after notifications/initialized, announced with tools/list_changed
        poll(lambda: RESEARCH in server.tool_names, WAIT, "simulate-research-query listed")
        return server

    yield make
    for server in servers:
        server.stop()
