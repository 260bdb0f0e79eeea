"""fastmcp-tasks (FastMCP with the tasks extension, SEP-2663, on its in-memory backend) as a
peer, over stdio and Streamable HTTP, driven by raw JSON-RPC as a declaring client writes it:
a task created, polled to its end, asking a question answered with tasks/update, and
cancelled. What it sends is pinned here, for the tests of the tasks client that use it: 43
character task ids, ``ttlMs`` 900000, the ``pollIntervalMs`` its tools ask for, question keys
``"<taskId>:<hex>"``, and an inlined result that carries ``resultType: "complete"``."""
from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading

import pytest

from conftest import FASTMCP_TASKS_SERVER
from fakes.http_peers import HttpPeer
from serve.task_wire import ACCEPT, DECLARING, WAIT, Wire, meta

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"


class StdioWire(Wire):
    """The same raw requests over the peer's stdin and stdout (no headers there); the peer's
    output is read on a thread of its own, each answer awaited at most WAIT seconds."""

    def __init__(self, log):
        super().__init__("stdio")
        self.proc = subprocess.Popen([sys.executable, FASTMCP_TASKS_SERVER, "stdio"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                     start_new_session=True)
        self.lines: queue.Queue = queue.Queue()
        self.reader = threading.Thread(target=self._read, name="fastmcp-tasks-peer-reader")
        self.reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def post(self, method: str, params: dict | None = None, *, capabilities=DECLARING,
             headers: dict | None = None) -> tuple[int, dict]:
        request_id = next(self.ids)
        message = {"jsonrpc": "2.0", "id": request_id, "method": method,
                   "params": {**(params or {}), "_meta": meta(capabilities)}}
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()
        while True:
            line = self.lines.get(timeout=WAIT)
            assert line is not None, "the peer closed its stdout"
            answer = json.loads(line)
            if answer.get("id") == request_id:
                return 200, answer

    def close(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self.reader.join(10)
        self.proc.stdout.close()


@pytest.fixture(params=["stdio", "http"])
def peer(request, tmp_path):
    if request.param == "http":
        server = HttpPeer.fastmcp_tasks().start(timeout=60)
        yield Wire(server.url)
        server.close()
    else:
        with open(tmp_path / "peer.log", "wb") as log:
            wire = StdioWire(log)
            yield wire
            wire.close()


def test_the_peer_creates_polls_and_completes_a_task(peer):
    capabilities = peer.result("server/discover")["capabilities"]
    assert capabilities["extensions"][TASKS_EXTENSION] == {}
    assert peer.call("greet", {"name": "Ada"})["content"][0]["text"] == "Hello, Ada!"
    created = peer.call("slow_compute", {"seconds": 0.2, "label": "a"})
    assert created["resultType"] == "task" and created["status"] == "working"
    assert len(created["taskId"]) == 43
    assert (created["ttlMs"], created["pollIntervalMs"]) == (900_000, 200)
    done = peer.settled(created["taskId"])
    assert done["status"] == "completed" and done["resultType"] == "complete"
    assert done["result"]["content"][0]["text"] == "a: computed in 0.2 s"
    assert done["result"]["resultType"] == "complete", "the inlined result carries it"
    failed = peer.settled(peer.call("failing_job")["taskId"])
    assert failed["status"] == "completed" and failed["result"]["isError"] is True


def test_the_peer_asks_with_input_requests_and_resumes_on_tasks_update(peer):
    task_id = peer.call("confirm_delete", {"filename": "notes.txt"})["taskId"]
    asking = peer.poll(task_id, lambda t: t["status"] == "input_required", "a question")
    [(key, question)] = asking["inputRequests"].items()
    assert key.startswith(f"{task_id}:"), "its keys are its own: echo them verbatim"
    assert question["method"] == "elicitation/create"
    assert question["params"]["message"] == "Delete notes.txt?"
    assert peer.result("tasks/update", {"taskId": task_id, "inputResponses": {
        key: ACCEPT}})["resultType"] == "complete"
    assert peer.settled(task_id)["result"]["content"][0]["text"] == "deleted notes.txt"


def test_the_peer_cancels_a_task(peer):
    task_id = peer.call("slow_compute", {"seconds": WAIT, "label": "long"})["taskId"]
    assert peer.result("tasks/cancel", {"taskId": task_id})["resultType"] == "complete"
    assert peer.settled(task_id)["status"] == "cancelled"
    assert peer.result("tasks/cancel", {"taskId": task_id})["resultType"] == "complete"
