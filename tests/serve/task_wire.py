"""A raw stateless client of the tasks extension over HTTP (``requests``), for the tests of
tasks served by a ToolServer and relayed by the gateway: the ``_meta`` and headers a client that
declares (or not) the extension sends, and polling a task to its end (bounded by WAIT)."""
from __future__ import annotations

import json
import time

import requests

from raider_sync.serve.tasks import TASKS_EXTENSION

WAIT = 30.0
#: between two polls of a task (a client waits pollIntervalMs; these tests ask for 20 ms)
POLL = 0.02
VERSION = "2026-07-28"
TASKS = {"extensions": {TASKS_EXTENSION: {}}}
DECLARING = {"elicitation": {}, **TASKS}
ACCEPT = {"action": "accept", "content": {"confirm": True}}


def meta(capabilities: dict) -> dict:
    return {"io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": capabilities,
            "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"}}


def named(method: str, params: dict) -> str | None:
    """What Mcp-Name carries for ``method`` (written out here, not taken from the package)."""
    field = {"tools/call": "name", "tasks/get": "taskId", "tasks/update": "taskId",
             "tasks/cancel": "taskId"}.get(method)
    return params.get(field) if field else None


class Wire:
    """Raw JSON-RPC over HTTP to one URL, as a stateless client that declares (or not) the
    tasks extension writes it."""

    def __init__(self, url: str, headers: dict | None = None):
        self.url = url
        self.headers = headers or {}  # on every request (a gateway's key, say)
        self.ids = iter(range(1, 1_000_000))

    def post(self, method: str, params: dict | None = None, *, capabilities=DECLARING,
             headers: dict | None = None) -> tuple[int, dict]:
        params = {**(params or {}), "_meta": meta(capabilities)}
        sent = {**self.headers, "Content-Type": "application/json",
                "MCP-Protocol-Version": VERSION, "Mcp-Method": method,
                "Accept": "application/json, text/event-stream"}
        if named(method, params) is not None:
            sent["Mcp-Name"] = named(method, params)
        sent.update(headers or {})
        sent = {k: v for k, v in sent.items() if v is not None}
        request_id = next(self.ids)
        reply = requests.post(self.url, json={"jsonrpc": "2.0", "id": request_id,
                                              "method": method, "params": params},
                              headers=sent, timeout=WAIT)
        if reply.headers.get("Content-Type", "").startswith("text/event-stream"):
            answers = [json.loads(line[5:]) for line in reply.text.splitlines()
                       if line.startswith("data:") and line[5:].strip()]
            body = next(a for a in answers if a.get("id") == request_id)
        else:
            body = reply.json()
        assert body["id"] == request_id
        return reply.status_code, body

    def result(self, method: str, params: dict | None = None, **kw) -> dict:
        status, body = self.post(method, params, **kw)
        assert "result" in body, body
        assert status == 200, (status, body)
        return body["result"]

    def error(self, method: str, params: dict | None = None, **kw) -> tuple[int, dict]:
        status, body = self.post(method, params, **kw)
        assert "error" in body, body
        return status, body["error"]

    def call(self, name: str, arguments: dict | None = None, **kw) -> dict:
        return self.result("tools/call", {"name": name, "arguments": arguments or {}}, **kw)

    def get(self, task_id: str) -> dict:
        return self.result("tasks/get", {"taskId": task_id})

    def poll(self, task_id: str, until, what: str) -> dict:
        """tasks/get until ``until(task)``, bounded by WAIT."""
        deadline = time.monotonic() + WAIT
        while True:
            task = self.get(task_id)
            if until(task):
                return task
            assert time.monotonic() < deadline, f"the task never got {what}: {task}"
            time.sleep(POLL)

    def settled(self, task_id: str) -> dict:
        return self.poll(task_id, lambda t: t["status"] in ("completed", "failed", "cancelled"),
                         "to an end")
