"""A real ToolServer serving the task fixtures (tests/serve/task_tools.py) over HTTP, in this
process, with what the tests observe on the server's side: the tasks/* requests it received
and what its handlers saw of cancellation."""
from __future__ import annotations

import queue
import threading
from collections import Counter

import pytest

from raider_sync import Context, McpConfig, McpServer
from raider_sync.gateway.cli import Serving
from raider_sync.serve.serving_http import wsgi_app

from serve.task_tools import task_tools

WAIT = 30.0
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
