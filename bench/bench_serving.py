"""The serving leg: what raider_sync's server costs, against the official SDK's and FastMCP's.

Three servers with the same tool (``echo`` of a short text; bench/serving_peers.py), each in a
process of its own, all up at once: a ToolServer under waitress as ``serve_http`` runs it
(default settings: stateless, JSON answers), the official SDK's ``MCPServer`` under uvicorn
and FastMCP's server under uvicorn (both at their defaults: a session per client, answers as
event streams; their per-request log lines off). Per server and number of concurrent clients
(1 and 16): the p50 of a tools/call, the calls per second, and the server process's CPU time
per call, the figure a loaded machine disturbs least.

The client is the same for all three, and does the least a client can: a plain
``requests.Session`` per client (one keep-alive connection, one thread each) that opens an
MCP session of the handshake era (``initialize``, the notification), then POSTs the same
tools/call and reads the whole answer, a JSON body or an event stream alike. Not raider_sync's
``McpServer``: its own work per call would sit in every figure, and it would pick the
stateless era where a server offers it, so the three would not answer the same exchange.

The servers are measured in rotated order, the median of the rounds kept; ratios are
raider_sync / other (below 1.00x is better for a time, above 1.00x for calls per second).
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Callable

import psutil
import requests

from . import common
from .common import (
    BENCH,
    free_port,
    load_note,
    measure_rows,
    ms,
    p50,
    rotated,
    start_listening,
    stop_process,
    table,
)

PEERS = os.path.join(BENCH, "serving_peers.py")
SERVERS = {"raider_sync": "raider_sync", "SDK (uvicorn)": "sdk", "FastMCP (uvicorn)": "fastmcp"}
CALLERS = (1, 16)
VERSION = "2025-11-25"
TEXT = "hello"
CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": TEXT}}}
TIMEOUT = 30.0


class Session:
    """One client: an MCP session of the handshake era over one keep-alive connection."""

    def __init__(self, url: str):
        self.url = url
        self.http = requests.Session()
        self.headers = {"Accept": "application/json, text/event-stream",
                        "Content-Type": "application/json"}
        answer = self._post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": VERSION, "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"}}})
        if "Mcp-Session-Id" in answer.headers:  # the SDK and FastMCP keep one; a ToolServer not
            self.headers["Mcp-Session-Id"] = answer.headers["Mcp-Session-Id"]
        self.headers["MCP-Protocol-Version"] = VERSION
        self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.body = json.dumps(CALL)
        self.expected = json.dumps(TEXT).encode()

    def _post(self, message: dict) -> requests.Response:
        answer = self.http.post(self.url, data=json.dumps(message), headers=self.headers,
                                timeout=TIMEOUT)
        answer.raise_for_status()
        return answer

    def call(self) -> None:
        """One tools/call, its whole answer read. Raises RuntimeError for anything but the
        echoed text."""
        answer = self.http.post(self.url, data=self.body, headers=self.headers, timeout=TIMEOUT)
        if answer.status_code != 200 or b'"result"' not in answer.content \
                or self.expected not in answer.content:
            raise RuntimeError(f"unexpected answer {answer.status_code}: {answer.content[:200]!r}")

    def close(self) -> None:
        try:
            if "Mcp-Session-Id" in self.headers:
                self.http.delete(self.url, headers=self.headers, timeout=TIMEOUT)
        finally:
            self.http.close()


def run_clients(sessions: list[Session], calls: int) -> tuple[list[float], float]:
    """Each session calls ``calls`` times from a thread of its own, all starting together:
    the seconds of every call, and the wall time from the start to the last answer. Raises
    the first error a client met."""
    times: list[list[float]] = [[] for _ in sessions]
    errors: list[BaseException] = []
    start = threading.Barrier(len(sessions) + 1)

    def client(index: int) -> None:
        session, mine = sessions[index], times[index]
        try:
            start.wait(TIMEOUT)
            for _ in range(calls):
                began = time.perf_counter()
                session.call()
                mine.append(time.perf_counter() - began)
        except BaseException as exc:  # noqa: BLE001 - raised by the measuring thread
            errors.append(exc)

    threads = [threading.Thread(target=client, args=(i,), name=f"bench-client-{i}")
               for i in range(len(sessions))]
    for thread in threads:
        thread.start()
    start.wait(TIMEOUT)
    began = time.perf_counter()
    for thread in threads:
        thread.join(TIMEOUT * calls)
    wall = time.perf_counter() - began
    if errors:
        raise errors[0]
    return [t for mine in times for t in mine], wall


class Served:
    """One server process on a free port and its clients' sessions."""

    def __init__(self, kind: str):
        port = free_port()
        self.proc = start_listening([sys.executable, PEERS, kind, str(port)], port)
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.process = psutil.Process(self.proc.pid)
        self.sessions: list[Session] = []

    def cpu(self) -> float:
        times = self.process.cpu_times()
        return times.user + times.system

    def measure(self, clients: int, calls: int) -> tuple[float, float, float]:
        """(p50 seconds, calls per second, server CPU seconds per call) of ``clients``
        concurrent clients making ``calls`` calls each."""
        cpu = self.cpu()
        samples, wall = run_clients(self.sessions[:clients], calls)
        return p50(samples), len(samples) / wall, (self.cpu() - cpu) / len(samples)

    def close(self) -> None:
        try:
            for session in self.sessions:
                session.close()
        finally:
            stop_process(self.proc)


def plan() -> tuple[int, dict[int, int]]:
    """(warm-up calls per client, calls per client for each number of clients)."""
    if common.QUICK:
        return 5, {1: 40, 16: 8}
    return 30, {1: 400, 16: 60}


def main() -> None:
    started = time.monotonic()
    warmup, calls = plan()
    count = common.rounds()
    served: dict[str, Served] = {}
    try:
        for label, kind in SERVERS.items():
            served[label] = Served(kind)
            for _ in range(max(CALLERS)):
                served[label].sessions.append(Session(served[label].url))
            run_clients(served[label].sessions, warmup)
        results: dict[str, dict[str, tuple]] = {}
        for clients in CALLERS:
            ways: dict[str, Callable[[], tuple]] = {
                label: (lambda s=server, n=clients: s.measure(n, calls[n]))
                for label, server in served.items()}
            results[f"{clients} client{'s' if clients > 1 else ''}"] = rotated(ways, count)
    finally:
        for server in served.values():
            server.close()
    rows = measure_rows("clients", results, tuple(SERVERS), [
        ("tools/call p50", ms), ("calls/s", lambda v: f"{v:8.0f}"),
        ("server CPU per call", lambda v: f"{v * 1e6:6.0f} us")])
    table(f"serving: tools/call echo from plain requests sessions (handshake era), median of "
          f"{count} round{'s' if count > 1 else ''}; ratios raider_sync / other (below 1.00x "
          f"is better for p50 and CPU, above 1.00x for calls/s)", rows)
    print(f"  ({load_note()}; the clients share the machine with the servers; "
          f"serving leg took {time.monotonic() - started:.1f} s)")


if __name__ == "__main__":
    main()
