"""Tasks through the relay. The stateless era's tasks extension (SEP-2663) from a ToolServer
serving the harness's task fixtures, driven by raw requests as a declaring client writes them:
the CreateTaskResult passes untouched, tasks/get, tasks/update and tasks/cancel reach the server
that created the task, Mcp-Name is checked against the task id before anything goes upstream,
and a listen stream carries notifications/tasks. The handshake era's tasks (2025-11-25) from
server-everything's simulate-research-query: tasks/get, tasks/list, tasks/result with the
server's elicitation on its stream, tasks/cancel, and notifications/tasks/status on the GET
stream."""
from __future__ import annotations

import json
import time

import pytest
import requests

from raider_sync.gateway.cli import Serving
from raider_sync.serve.serving_http import wsgi_app

from gateway.support import AUTH, Mcp
from serve.task_tools import task_tools
from serve.task_wire import ACCEPT, DECLARING, POLL, VERSION, WAIT, Wire, meta

#: a handshake-era client that takes part in tasks and answers elicitations
V1_CAPABILITIES = {"elicitation": {"form": {}},
                   "tasks": {"list": {}, "cancel": {}, "requests": {"elicitation": {"create": {}}}}}
V1_VERSION = "2025-11-25"
RELATED = "io.modelcontextprotocol/related-task"


class Upstream:
    """A ToolServer with the task fixtures served over HTTP on port 0 (``url``); ``reached``
    holds the (Mcp-Method, Mcp-Name) of every POST that got to it."""

    def __init__(self):
        self.tools = task_tools(task_poll_interval=POLL)
        self.app = wsgi_app(self.tools)
        self.reached: list[tuple] = []
        self.serving = Serving(self._count).start()
        self.url = f"{self.serving.url}/mcp"

    def _count(self, environ, start_response):
        if environ.get("REQUEST_METHOD") == "POST":
            self.reached.append((environ.get("HTTP_MCP_METHOD"), environ.get("HTTP_MCP_NAME")))
        return self.app(environ, start_response)

    def close(self):
        self.app.close()
        self.serving.stop(10)
        self.tools.close()


@pytest.fixture
def served():
    upstream = Upstream()
    yield upstream
    upstream.close()


@pytest.fixture
def wire(served, make_gateway):
    """A declaring client of the ToolServer, through a relay that fronts it and one more."""
    gw = make_gateway([{"name": "other", "url": "http://127.0.0.1:9/mcp"},
                       {"name": "tasks", "url": served.url}])
    return Wire(f"{gw.url}/mcp/tasks", headers=AUTH)


# -- the tasks extension (stateless era) -----------------------------------------------------

def test_a_task_is_created_polled_answered_and_cancelled_through_the_relay(served, wire):
    direct = Wire(served.url).call("slow_compute", {"seconds": 0, "label": "sync"},
                                   capabilities={})
    created = wire.call("slow_compute", {"seconds": 0.2, "label": "a"})
    assert created["resultType"] == "task" and created["status"] == "working"
    assert set(created) == {"resultType", "taskId", "status", "createdAt", "lastUpdatedAt",
                            "ttlMs", "pollIntervalMs"}, "the CreateTaskResult as it was sent"
    assert direct["resultType"] == "complete"
    done = wire.settled(created["taskId"])
    assert (done["taskId"], done["status"]) == (created["taskId"], "completed")
    assert done["result"]["content"][0]["text"] == "a: computed in 0.2 s"

    asking = wire.call("confirm_delete", {"filename": "notes.txt"})["taskId"]
    waiting = wire.poll(asking, lambda t: t["status"] == "input_required", "a question")
    assert waiting["inputRequests"]["confirm"]["method"] == "elicitation/create"
    assert wire.result("tasks/update", {"taskId": asking, "inputResponses": {
        "confirm": ACCEPT}}) == {"resultType": "complete"}
    assert wire.settled(asking)["result"]["content"][0]["text"] == "deleted notes.txt"

    long = wire.call("slow_compute", {"seconds": WAIT, "label": "long"})["taskId"]
    assert wire.result("tasks/cancel", {"taskId": long}) == {"resultType": "complete"}
    assert wire.get(long)["status"] == "cancelled"
    for method, task_id in (("tasks/get", created["taskId"]), ("tasks/update", asking),
                            ("tasks/cancel", long)):
        assert (method, task_id) in served.reached, "relayed with its Mcp-Name"


def test_mcp_name_must_be_the_task_id_before_anything_goes_upstream(served, wire):
    task_id = wire.call("slow_compute", {"seconds": WAIT, "label": "named"})["taskId"]
    reached = len(served.reached)
    refused = [("tasks/get", {"Mcp-Name": "another-task"}),
               ("tasks/get", {"Mcp-Name": None}),
               ("tasks/cancel", {"Mcp-Method": "tasks/get"}),
               # a stateless request that leaves its headers out is no handshake-era one
               ("tasks/cancel", {"Mcp-Method": None, "Mcp-Name": None}),
               ("tasks/update", {"Mcp-Method": None, "Mcp-Name": None,
                                 "MCP-Protocol-Version": None})]
    for method, headers in refused:
        params = {"taskId": task_id}
        if method == "tasks/update":
            params["inputResponses"] = {}
        status, error = wire.error(method, params, headers=headers)
        assert (status, error["code"]) == (400, -32020), (method, headers)
    assert len(served.reached) == reached, "a refused request never reaches the server"
    assert wire.get(task_id)["status"] == "working"
    wire.result("tasks/cancel", {"taskId": task_id})


def test_a_listen_stream_carries_task_status_through_the_relay(wire):
    task_id = wire.call("slow_compute", {"seconds": 0.3, "label": "watched"})["taskId"]
    params = {"notifications": {"taskIds": [task_id]}, "_meta": meta(DECLARING)}
    headers = {**AUTH, "MCP-Protocol-Version": VERSION, "Mcp-Method": "subscriptions/listen",
               "Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    with requests.post(wire.url, json={"jsonrpc": "2.0", "id": "listen-1",
                                       "method": "subscriptions/listen", "params": params},
                       headers=headers, stream=True, timeout=WAIT) as stream:
        assert stream.headers["Content-Type"].startswith("text/event-stream")
        lines = stream.iter_lines(decode_unicode=True)
        received = (json.loads(line[5:]) for line in lines if line.startswith("data:"))
        ack = next(received)
        assert ack["params"]["notifications"] == {"taskIds": [task_id]}
        for message in received:
            assert message["method"] == "notifications/tasks"
            assert message["params"]["taskId"] == task_id
            if message["params"]["status"] == "completed":
                break
    assert message["params"]["result"]["content"][0]["text"] == "watched: computed in 0.3 s"


# -- the handshake era's tasks (2025-11-25), server-everything -------------------------------

def _research_tool_listed(client: Mcp) -> bool:
    tools = client.request("tools/list")["result"]["tools"]
    return "simulate-research-query" in {t["name"] for t in tools}


def test_handshake_era_tasks_of_server_everything_through_the_relay(everything_http,
                                                                     make_gateway):
    gw = make_gateway([{"name": "everything", "url": everything_http}])
    client = Mcp(f"{gw.url}/mcp/everything", version=V1_VERSION, capabilities=V1_CAPABILITIES)
    updates = None
    try:
        assert client.initialize()["capabilities"]["tasks"]["requests"] == {"tools": {"call": {}}}
        # its unsolicited notifications/tasks/status travel on the session's GET stream
        updates = client.http.get(client.url, headers=client.headers(Accept="text/event-stream"),
                                  stream=True, timeout=WAIT)
        assert updates.status_code == 200
        deadline = time.monotonic() + WAIT
        while not _research_tool_listed(client):  # registered after notifications/initialized
            assert time.monotonic() < deadline, "simulate-research-query was never listed"
            time.sleep(0.05)

        created = client.request("tools/call", {
            "name": "simulate-research-query", "arguments": {"topic": "tides", "ambiguous": True},
            "task": {"ttl": 60000}})["result"]["task"]
        task_id = created["taskId"]
        assert created["status"] == "working" and created["ttl"] > 0  # its own ttl
        assert client.request("tasks/get", {"taskId": task_id})["result"]["taskId"] == task_id
        listed = client.request("tasks/list")["result"]["tasks"]
        assert task_id in {t["taskId"] for t in listed}

        # tasks/result blocks on the server; its question comes on the answer's stream and the
        # answer goes back as a POST of its own, while the stream stays open
        asked = []
        request = {"jsonrpc": "2.0", "id": 50, "method": "tasks/result",
                   "params": {"taskId": task_id}}
        with client.post(request, stream=True) as answer:
            assert answer.headers["Content-Type"].startswith("text/event-stream")
            for line in answer.iter_lines(decode_unicode=True):
                if not line.startswith("data:") or not line[5:].strip():
                    continue
                message = json.loads(line[5:])
                if message.get("method") == "elicitation/create":
                    asked.append(message)
                    reply = client.post({"jsonrpc": "2.0", "id": message["id"], "result": {
                        "action": "accept", "content": {"interpretation": "technical"}}})
                    assert reply.status_code == 202
                elif message.get("id") == 50:
                    break
        assert asked and asked[0]["params"]["_meta"][RELATED] == {"taskId": task_id}
        assert "Research Report: tides" in message["result"]["content"][0]["text"]
        assert message["result"]["_meta"][RELATED] == {"taskId": task_id}
        assert client.request("tasks/get", {"taskId": task_id})["result"]["status"] == "completed"

        doomed = client.request("tools/call", {
            "name": "simulate-research-query", "arguments": {"topic": "waves"},
            "task": {"ttl": 60000}})["result"]["task"]["taskId"]
        cancelled = client.request("tasks/cancel", {"taskId": doomed})["result"]
        assert (cancelled["taskId"], cancelled["status"]) == (doomed, "cancelled")

        statuses = []
        for message in messages_of(updates):
            if message.get("method") == "notifications/tasks/status" and \
                    message["params"]["taskId"] == task_id:
                statuses.append(message["params"]["status"])
                if statuses[-1] == "completed":
                    break
        assert statuses[0] == "working" and "input_required" in statuses
    finally:
        if updates is not None:
            updates.close()
        client.http.delete(client.url, headers=client.headers(), timeout=WAIT)
        client.close()
    assert {e["rpc"] for e in gw.wait_events(10)} >= {"tasks/get", "tasks/list",
                                                        "tasks/result", "tasks/cancel"}


def messages_of(stream: requests.Response):
    """The JSON-RPC messages of an SSE stream as they arrive (each read bounded by its
    timeout)."""
    for line in stream.iter_lines(decode_unicode=True):
        if line.startswith("data:") and line[5:].strip():
            yield json.loads(line[5:])
