"""The gateway leg: what the relay costs in front of a real MCP server, and what it holds at
once, in one run.

The official SDK's server (FastMCP under uvicorn, Streamable HTTP, JSON answers: the light
upstream) is called directly, through ``raider-sync gateway`` (waitress, its own process, 16
threads), through ``raider-sync gateway --workers 2`` (2 waitress processes of 16 threads under
gunicorn's master) and through ``raider-sync gateway --server granian`` (one granian worker
process of 16 threads; left out when granian is not installed), in rounds that rotate the order of
the targets (the best round of each kept). Per round and target: the p50 of a tool call from one
plain ``requests.Session`` client, calls per second with 16 such clients (threads, one session and
connection each) with the CPU the relay and the server processes spent per call, and the p50 of a
tool call from FastMCP's client (one session). Two more targets give the policy's cost on each
call: the waitress relay whose key has TOOL_RULES tool rules on the server (globs to allow, names
to deny; the call's tool allowed), and the same with its Prometheus metrics on (the config's
``metrics`` entry); ``RAIDER_BENCH_TOOL_RULES=0`` leaves the rules out (then only the metrics),
another number sets how many. With ``RAIDER_SYNC_BENCH_OLD`` naming an older checkout, that
version's waitress relay is one more target (its own process, that checkout's code), so that
"today's relay" is measured in the same rounds. Targets: the relay adds at most 0.5 ms p50 on
loopback (0.3 ms for FastMCP's client) and keeps at least 0.8x the direct throughput, with at most
half the CPU per call of the older relay; the policy stays within 10% of the plain relay.

Why CPU per call: on a loaded machine a call's latency is mostly waiting for the scheduler, and
the relay puts two more processes' wake-ups in the path of each call (client, relay, server,
relay, client), so its added milliseconds grow with the load while its CPU per call does not.

Then, held at once on this machine: STREAMS open SSE streams (GET, one MCP session each) through
a waitress relay (and a granian relay) with enough threads, and SLOW_CLIENTS slowloris
connections (half-sent request headers) against the 16-thread relays and the ``--workers 2``
relay. Each time the p50 of
a legitimate tool call is compared with its idle p50 (target: under 2x), and the relay's memory
per open stream is reported.
Loopback only; every wait bounded.
"""
from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Optional

import psutil
import requests

from . import common
from .common import SDK_SERVER, code_roots, free_port, ms, p50, ratio, start_listening, stop_process, table

WARMUP = 30
CALLS = 200
CLIENTS = 16
CALLS_PER_CLIENT = 40
PEER_CALLS = 60
ROUNDS = 3          # direct and the relays measured in rotated order, best round kept
TARGET_ADDED = 0.5e-3
TARGET_RATIO = 0.8
STREAMS = 1000
SLOW_CLIENTS = 1000
LOADED_CALLS = 200
KEY = "bench-key-0123456789"
TOOL_RULES = 50     # rules of the key in the rules variant (RAIDER_BENCH_TOOL_RULES)
METRICS_TOKEN = "bench-metrics-token-0123"
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


def latency(url: str, calls: int = CALLS) -> float:
    """p50 seconds of a sequential tool call."""
    client = Client(url)
    try:
        for _ in range(WARMUP):
            client.call()
        times = []
        for _ in range(calls):
            started = time.perf_counter()
            client.call()
            times.append(time.perf_counter() - started)
    finally:
        client.close()
    return p50(times)


def cpu_seconds(proc: Optional[psutil.Process]) -> float:
    """CPU seconds ``proc`` and its children (the ``--workers`` processes) have used; 0 for
    none."""
    if proc is None:
        return 0.0
    total = 0.0
    for one in (proc, *proc.children(recursive=True)):
        try:
            times = one.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


def throughput(url: str, relay: Optional[psutil.Process],
               server: psutil.Process) -> tuple[float, float, float]:
    """Tool calls per second with CLIENTS threads, each its own session and connection, and
    the CPU seconds ``relay`` and ``server`` spent per call meanwhile."""
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
    started, cpu, served = time.perf_counter(), cpu_seconds(relay), cpu_seconds(server)
    for t in threads:
        t.join(120)
    elapsed = time.perf_counter() - started
    cpu, served = cpu_seconds(relay) - cpu, cpu_seconds(server) - served
    for client in clients:
        client.close()
    if errors:
        raise errors[0]
    calls = CLIENTS * CALLS_PER_CLIENT
    return calls / elapsed, cpu / calls, served / calls


def peer_latency(url: str) -> float:
    """p50 seconds of a sequential tool call from FastMCP's client (one session)."""
    from fastmcp import Client as FastMCPClient
    from fastmcp.client.transports import StreamableHttpTransport

    async def run() -> float:
        transport = StreamableHttpTransport(url, headers={"X-Api-Key": KEY})
        async with FastMCPClient(transport, timeout=30) as client:
            for _ in range(WARMUP // 3):
                await client.call_tool("echo", {"message": "hello"})
            times = []
            for _ in range(PEER_CALLS):
                started = time.perf_counter()
                await client.call_tool("echo", {"message": "hello"})
                times.append(time.perf_counter() - started)
        return p50(times)

    return asyncio.run(asyncio.wait_for(run(), 120))


def hold_streams(base: str, count: int) -> list[socket.socket]:
    """``count`` SSE streams (GET, each in its own MCP session) open through the relay at
    ``base``; returns their sockets once every stream's headers arrived."""
    url = f"{base}/mcp/sdk"
    host, port = base.rsplit("/", 1)[-1].split(":")
    with ThreadPoolExecutor(16) as pool:  # sessions are opened a few at a time
        sessions = list(pool.map(lambda _: Client(url), range(count)))
    socks = []
    for client in sessions:
        sock = socket.create_connection((host, int(port)), timeout=30)
        socks.append(sock)
        sock.sendall((f"GET /mcp/sdk HTTP/1.1\r\nHost: {host}\r\nX-Api-Key: {KEY}\r\n"
                      f"Accept: text/event-stream\r\nMcp-Protocol-Version: {VERSION}\r\n"
                      f"Mcp-Session-Id: {client.headers['Mcp-Session-Id']}\r\n\r\n").encode())
        client.http.close()
    for sock in socks:
        head = b""
        while b"\r\n\r\n" not in head:
            data = sock.recv(4096)
            if not data:
                raise RuntimeError("a stream was closed before its headers")
            head += data
        if not head.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(f"a stream was refused: {head[:60]!r}")
    return socks


def hold_slow(base: str, count: int) -> list[socket.socket]:
    """``count`` connections that sent half a request's headers and wait."""
    host, port = base.rsplit("/", 1)[-1].split(":")
    socks = []
    for _ in range(count):
        sock = socket.create_connection((host, int(port)), timeout=30)
        sock.sendall(b"GET /mcp/sdk HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        socks.append(sock)
    return socks


def close_all(socks: list[socket.socket]) -> None:
    for sock in socks:
        sock.close()


def overhead(direct: str, server: psutil.Process,
             relays: dict[str, tuple[str, psutil.Process]]) -> None:
    targets = {"direct": (direct, None), **relays}
    lat: dict[str, list[float]] = {name: [] for name in targets}
    rps: dict[str, list[float]] = {name: [] for name in targets}
    cpu: dict[str, list[float]] = {name: [] for name in targets}
    served: dict[str, list[float]] = {name: [] for name in targets}
    peer: dict[str, list[float]] = {name: [] for name in targets}
    try:
        import fastmcp  # noqa: F401
    except ImportError:
        peer = {}
    names = list(targets)
    started = time.monotonic()
    count = common.rounds(ROUNDS)
    for round_ in range(count):
        for name in names[round_ % len(names):] + names[:round_ % len(names)]:
            url, proc = targets[name]
            lat[name].append(latency(url))
            rate, per_call, server_per_call = throughput(url, proc, server)
            rps[name].append(rate)
            cpu[name].append(per_call)
            served[name].append(server_per_call)
            if peer:
                peer[name].append(peer_latency(url))
    took = time.monotonic() - started
    d_lat, d_rps = min(lat["direct"]), max(rps["direct"])
    rows = [("", "tool call p50, 1 client", "relay / direct", f"calls/s, {CLIENTS} clients",
             "relay / direct", "CPU per call: relay", "server")]
    for name in targets:
        r_lat, r_rps = min(lat[name]), max(rps[name])
        relayed = name != "direct"
        rows.append((name, ms(r_lat), ratio(r_lat, d_lat) if relayed else "", f"{r_rps:8.0f}",
                     ratio(r_rps, d_rps) if relayed else "", ms(min(cpu[name])) if relayed else "",
                     ms(min(served[name]))))
    table("gateway: the SDK server (JSON answers) called by requests, direct vs through relays",
          rows)
    for name in relays:
        added, kept = min(lat[name]) - d_lat, max(rps[name]) / d_rps
        print(f"  {name}: adds {added * 1000:.3f} ms p50 per call (target <= "
              f"{TARGET_ADDED * 1000:g} ms), keeps {kept:.2f}x the direct throughput "
              f"(target >= {TARGET_RATIO:g}x)")
    if peer:
        d_peer = min(peer["direct"])
        rows = [("", "tool call p50, 1 client", "relay / direct", "added")]
        for name in targets:
            r_peer = min(peer[name])
            relayed = name != "direct"
            rows.append((name, ms(r_peer), ratio(r_peer, d_peer) if relayed else "",
                         f"{(r_peer - d_peer) * 1000:.3f} ms" if relayed else ""))
        table("gateway: the same server called by FastMCP's client, direct vs through relays",
              rows)
    print(f"  measured in {took:.1f} s ({count} rounds, order rotated; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")


def slowed_by_slow_clients(url: str) -> tuple[float, float]:
    """The p50 of a legitimate tool call at ``url``, idle and with SLOW_CLIENTS slow
    connections held open."""
    idle = latency(url, LOADED_CALLS)
    slow = hold_slow(url.rsplit("/mcp/", 1)[0], SLOW_CLIENTS)
    try:
        return idle, latency(url, LOADED_CALLS)
    finally:
        close_all(slow)


def streams_held(relay: subprocess.Popen, wide: str) -> tuple[float, float, float]:
    """The idle p50 at ``wide``, the p50 with STREAMS streams open, the memory per stream
    of ``relay`` and its worker processes."""
    def rss() -> int:
        proc = psutil.Process(relay.pid)
        return sum(p.memory_info().rss for p in (proc, *proc.children(recursive=True)))

    before = rss()
    idle = latency(f"{wide}/mcp/sdk", LOADED_CALLS)
    socks = hold_streams(wide, STREAMS)
    try:
        per_stream = (rss() - before) / STREAMS
        loaded = latency(f"{wide}/mcp/sdk", LOADED_CALLS)
    finally:
        close_all(socks)
    return idle, loaded, per_stream


def held_at_once(wide: dict[str, tuple[subprocess.Popen, str]], narrow: dict[str, str]) -> None:
    """``wide``: per engine, a relay with threads for STREAMS streams; ``narrow``: the
    16-thread relays the slowloris connections are held against."""
    rows = [("", "idle", "while held", "held / idle")]
    memory = []
    for engine, (relay, url) in wide.items():
        idle, loaded, per_stream = streams_held(relay, url)
        rows.append((f"{STREAMS} open SSE streams, {engine}", ms(idle), ms(loaded),
                     ratio(loaded, idle)))
        memory.append(f"{engine} {per_stream / 1024:.0f} KiB")
    for name, url in narrow.items():
        idle, slowed = slowed_by_slow_clients(f"{url}/mcp/sdk")
        rows.append((f"{SLOW_CLIENTS} slowloris connections, {name}", ms(idle), ms(slowed),
                     ratio(slowed, idle)))
    table("gateway: held at once on one machine, legitimate tool call p50", rows)
    print(f"  relay memory per open stream: {', '.join(memory)} (targets: held / idle under 2x)")


def tool_rules(count: int) -> dict:
    """``count`` rules for the server: half globs allowed (the last lets ``echo`` through),
    half names denied, none of which the calls use."""
    allow = [f"tool{i}_*" for i in range(count // 2 - 1)] + ["e*"] if count > 1 else ["*"]
    return {"sdk": {"allow": allow, "deny": [f"gone{i}" for i in range(count - len(allow))]}}


def with_metrics(config: str) -> str:
    """A copy of the config at ``config`` with the metrics enabled; returns its path."""
    with open(config) as fh:
        data = json.load(fh)
    data["metrics"] = {"env": "RAIDER_BENCH_METRICS"}
    path = config.replace(".json", "-metrics.json")
    with open(path, "w") as fh:
        json.dump(data, fh)
    return path


def counted_calls(base: str) -> float:
    """The tool calls the relay at ``base`` counted, from its /metrics."""
    from prometheus_client.parser import text_string_to_metric_families

    answer = requests.get(f"{base}/metrics", timeout=30,
                          headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
    answer.raise_for_status()
    return sum(s.value for family in text_string_to_metric_families(answer.text)
               for s in family.samples if s.name == "raider_gateway_tool_calls_total")


def main() -> None:
    rules = int(os.environ.get("RAIDER_BENCH_TOOL_RULES", TOOL_RULES))
    server_port = free_port()
    granian = importlib.util.find_spec("granian") is not None
    roots = code_roots()  # with RAIDER_SYNC_BENCH_OLD: that version's waitress relay too
    old = roots[1] if len(roots) > 1 else None
    ports = {name: free_port() for name in ("waitress", "workers", "wide", "policy")
             + (("rules",) if rules else ()) + (("granian", "granian-wide") if granian else ())
             + (("old",) if old else ())}
    server = start_listening(
        [sys.executable, SDK_SERVER, "streamable-http", str(server_port), "--json"], server_port)
    direct = f"http://127.0.0.1:{server_port}/mcp"
    relays: dict[str, subprocess.Popen] = {}
    with tempfile.TemporaryDirectory(prefix="raider-bench-gateway-") as folder:
        config = os.path.join(folder, "gateway.json")
        with open(config, "w") as fh:  # one key for all clients: lift the per-key limits
            json.dump({"servers": [{"name": "sdk", "url": direct}],
                       "keys": [{"id": "bench", "env": "RAIDER_BENCH_KEY", "servers": ["sdk"]}],
                       "limits": {"requests_per_key": 4 * STREAMS,
                                  "streams_per_key": 2 * STREAMS}}, fh)
        with open(config) as fh:
            ruled = json.load(fh)
        ruled["keys"][0]["tools"] = tool_rules(rules)
        ruled_path = os.path.join(folder, "ruled.json")
        with open(ruled_path, "w") as fh:
            json.dump(ruled, fh)
        command = [sys.executable, "-m", "raider_sync.gateway", "--config", config]
        extra = {"waitress": ["--threads", str(CLIENTS)],
                 "workers": ["--threads", str(CLIENTS), "--workers", "2"],
                 "wide": ["--threads", str(STREAMS + 2 * CLIENTS)],
                 "granian": ["--server", "granian", "--threads", str(CLIENTS)],
                 "granian-wide": ["--server", "granian", "--threads", str(STREAMS + 2 * CLIENTS)],
                 "rules": ["--threads", str(CLIENTS)],
                 "policy": ["--threads", str(CLIENTS)],
                 "old": ["--threads", str(CLIENTS)]}
        configs = {"rules": ruled_path, "policy": with_metrics(ruled_path if rules else config)}
        try:
            for name, port in ports.items():
                # -P: the old version from its PYTHONPATH, not this folder's raider_sync
                head = command[:1] + ["-P"] + command[1:-1] if name == "old" else command[:-1]
                relays[name] = start_listening(
                    head + [configs.get(name, config), "--listen", f"127.0.0.1:{port}",
                            *extra[name]], port,
                    env={"RAIDER_BENCH_KEY": KEY, "RAIDER_BENCH_METRICS": METRICS_TOKEN,
                         **({"PYTHONPATH": old[1]} if name == "old" and old else {})})
            url = {name: f"http://127.0.0.1:{port}" for name, port in ports.items()}
            targets = {"waitress relay": (f"{url['waitress']}/mcp/sdk",
                                          psutil.Process(relays["waitress"].pid)),
                       "relay, --workers 2": (f"{url['workers']}/mcp/sdk",
                                              psutil.Process(relays["workers"].pid))}
            if old:
                targets[f"waitress relay, {old[0]}"] = (f"{url['old']}/mcp/sdk",
                                                        psutil.Process(relays["old"].pid))
            if granian:
                targets["granian relay"] = (f"{url['granian']}/mcp/sdk",
                                            psutil.Process(relays["granian"].pid))
            if rules:
                targets[f"waitress relay, {rules} tool rules"] = (
                    f"{url['rules']}/mcp/sdk", psutil.Process(relays["rules"].pid))
            policy = f"{rules} tool rules + metrics" if rules else "metrics on"
            targets[policy] = (f"{url['policy']}/mcp/sdk", psutil.Process(relays["policy"].pid))
            overhead(direct, psutil.Process(server.pid), targets)
            print(f"  {policy}: the relay counted {counted_calls(url['policy']):.0f} tool calls")
            wide = {"waitress": (relays["wide"], url["wide"])}
            narrow = {"waitress": url["waitress"], "--workers 2": url["workers"]}
            if granian:
                wide["granian"] = (relays["granian-wide"], url["granian-wide"])
                narrow["granian"] = url["granian"]
            held_at_once(wide, narrow)
        finally:
            for relay in relays.values():
                stop_process(relay)
            stop_process(server)


if __name__ == "__main__":
    main()
