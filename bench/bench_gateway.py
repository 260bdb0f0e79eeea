"""The gateway leg: what the relay costs in front of a real MCP server, in one run.

The official SDK's server (Streamable HTTP, JSON answers) is called by a plain
``requests.Session`` client, once directly and once through ``raider-sync gateway`` (waitress,
its own process, 16 threads) on the same machine. Reported: p50 latency of a tool call and the
latency the relay adds, and calls per second with 16 client threads, as ratios relay / direct.
Targets: the relay adds under 1 ms p50 on loopback and keeps at least half the throughput.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time

import requests

from .common import SDK_SERVER, free_port, ms, p50, ratio, start_listening, stop_process, table

WARMUP = 50
CALLS = 400
CLIENTS = 16
CALLS_PER_CLIENT = 60
ROUNDS = 2          # direct and relayed measured alternately, best round kept
KEY = "bench-key-0123456789"
VERSION = "2025-06-18"
CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"message": "hello"}}}


class Client:
    """One MCP session over one keep-alive connection (a requests.Session)."""

    def __init__(self, url: str):
        self.url = url
        self.http = requests.Session()
        self.headers = {"Accept": "application/json, text/event-stream",
                        "Content-Type": "application/json", "X-Api-Key": KEY}
        answer = self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": VERSION, "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"}}})
        self.headers["Mcp-Session-Id"] = answer.headers["Mcp-Session-Id"]
        self.headers["Mcp-Protocol-Version"] = VERSION
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.body = json.dumps(CALL)

    def post(self, message: dict) -> requests.Response:
        answer = self.http.post(self.url, data=json.dumps(message), headers=self.headers, timeout=30)
        answer.raise_for_status()
        return answer

    def call(self) -> None:
        answer = self.http.post(self.url, data=self.body, headers=self.headers, timeout=30)
        if answer.status_code != 200 or b"hello" not in answer.content:
            raise RuntimeError(f"tool call failed: {answer.status_code} {answer.text[:200]}")

    def close(self) -> None:
        self.http.delete(self.url, headers=self.headers, timeout=30)
        self.http.close()


def latency(url: str) -> float:
    """p50 seconds of a sequential tool call."""
    client = Client(url)
    try:
        for _ in range(WARMUP):
            client.call()
        times = []
        for _ in range(CALLS):
            started = time.perf_counter()
            client.call()
            times.append(time.perf_counter() - started)
    finally:
        client.close()
    return p50(times)


def throughput(url: str) -> float:
    """Tool calls per second with CLIENTS threads, each its own session and connection."""
    clients = [Client(url) for _ in range(CLIENTS)]
    barrier = threading.Barrier(CLIENTS + 1)
    errors: list[BaseException] = []

    def run(client: Client) -> None:
        try:
            client.call()
            barrier.wait(30)
            for _ in range(CALLS_PER_CLIENT):
                client.call()
        except BaseException as exc:  # reported below; a broken barrier frees the others
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=run, args=(c,), name=f"bench-client-{i}")
               for i, c in enumerate(clients)]
    for t in threads:
        t.start()
    barrier.wait(30)
    started = time.perf_counter()
    for t in threads:
        t.join(120)
    elapsed = time.perf_counter() - started
    for client in clients:
        client.close()
    if errors:
        raise errors[0]
    return CLIENTS * CALLS_PER_CLIENT / elapsed


def main() -> None:
    server_port, relay_port = free_port(), free_port()
    server = start_listening(
        [sys.executable, SDK_SERVER, "streamable-http", str(server_port), "--json"], server_port)
    direct = f"http://127.0.0.1:{server_port}/mcp"
    with tempfile.TemporaryDirectory(prefix="raider-bench-gateway-") as folder:
        config = os.path.join(folder, "gateway.json")
        with open(config, "w") as fh:
            json.dump({"servers": [{"name": "sdk", "url": direct}],
                       "keys": [{"id": "bench", "env": "RAIDER_BENCH_KEY", "servers": ["sdk"]}]}, fh)
        relay = None
        try:
            relay = start_listening(
                [sys.executable, "-m", "raider_sync.gateway", "--config", config,
                 "--listen", f"127.0.0.1:{relay_port}", "--threads", str(CLIENTS)],
                relay_port, env={"RAIDER_BENCH_KEY": KEY})
            relayed = f"http://127.0.0.1:{relay_port}/mcp/sdk"
            started = time.monotonic()
            lat = {"direct": [], "relay": []}
            rps = {"direct": [], "relay": []}
            for _ in range(ROUNDS):
                for label, url in (("direct", direct), ("relay", relayed)):
                    lat[label].append(latency(url))
                    rps[label].append(throughput(url))
            took = time.monotonic() - started
        finally:
            if relay is not None:
                stop_process(relay)
            stop_process(server)
    d_lat, r_lat = min(lat["direct"]), min(lat["relay"])
    d_rps, r_rps = max(rps["direct"]), max(rps["relay"])
    added = r_lat - d_lat
    table("gateway: the SDK server (JSON answers) called by requests, direct vs through the relay", [
        ("", "direct", "through relay", "relay / direct"),
        ("tool call p50", ms(d_lat), ms(r_lat), ratio(r_lat, d_lat)),
        (f"calls/s, {CLIENTS} threads", f"{d_rps:8.0f}", f"{r_rps:8.0f}", ratio(r_rps, d_rps)),
    ])
    print(f"  relay adds {added * 1000:.3f} ms p50 per call (target < 1 ms) and keeps "
          f"{r_rps / d_rps:.0%} of the direct throughput (target >= 50%); measured in {took:.1f} s")


if __name__ == "__main__":
    main()
