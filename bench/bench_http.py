"""The HTTP leg: tools/call over Streamable HTTP against the same server, client by client.

The official SDK's server (``tests/peers/sdk_server.py streamable-http``), once answering with
JSON bodies and once with event streams. Measured in the same run, rounds interleaved (the
best round of each kept, so a noisy moment hurts every client alike):

- latency, one caller, per answer mode: p50 of sequential calls for
  - floor: a bare ``requests.Session`` POSTing the same tools/call and reading the body;
  - raider_sync: ``McpServer.call_tool``;
  - SDK async: the official client's ``ClientSession.call_tool`` timed inside its event loop;
  - SDK from sync: the same session driven from sync code through a loop thread
    (``run_coroutine_threadsafe(...).result()`` per call), as sync programs use it today;
  - FastMCP async: ``fastmcp.Client.call_tool`` timed inside its event loop.
- throughput with 1, 4, 16 and 64 callers, event-stream answers: calls completed in a short
  window by raider_sync (threads sharing one ``McpServer``), the SDK's and FastMCP's clients
  (tasks sharing one session) and a requests floor (threads, each with its own
  ``requests.Session``).

Targets: raider_sync within 1.15x of the floor's latency and below the SDK's async client;
with 16 callers and event streams, at least 1.1x FastMCP's throughput and at least the
floor's.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import threading
import time

import requests
from fastmcp import Client as FastMcpClient
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from raider_sync import McpConfig, McpServer

from .common import SDK_SERVER, free_port, ms, p50, ratio, start_listening, stop_process, table, timed

WARMUP = 50
CALLS = 150
ROUNDS = 5
CALLERS = (1, 4, 16, 64)
#: seconds each client runs in one throughput round, and the rounds
WINDOW = 0.6
RATE_ROUNDS = 3
ARGS = {"message": "hello"}
VERSION = "2025-11-25"


def _start_server(flags: list[str]) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = start_listening([sys.executable, SDK_SERVER, "streamable-http", str(port), *flags], port)
    return proc, f"http://127.0.0.1:{port}/mcp"


# -- the floor: requests, nothing else ---------------------------------------------------

class Floor:
    """One session of bare POSTs over one keep-alive connection."""

    def __init__(self, url: str):
        self.url = url
        self.http = requests.Session()
        # one retry, as every client does, for a kept-alive connection the server closed idle
        retry = HTTPAdapter(max_retries=Retry(total=1, allowed_methods=None, redirect=0))
        self.http.mount("http://", retry)
        self.headers = {"Accept": "application/json, text/event-stream",
                        "Content-Type": "application/json"}
        answer = self.http.post(url, headers=self.headers, data=json.dumps({
            "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": VERSION, "capabilities": {},
                "clientInfo": {"name": "floor", "version": "1"}}}))
        self.headers["Mcp-Session-Id"] = answer.headers["mcp-session-id"]
        self.headers["MCP-Protocol-Version"] = VERSION
        self.http.post(url, headers=self.headers,
                       data=json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        self.body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                "params": {"name": "echo", "arguments": ARGS}})

    def call(self) -> None:
        answer = self.http.post(self.url, headers=self.headers, data=self.body)
        if b"hello" not in answer.content:
            raise RuntimeError(f"unexpected answer: {answer.content[:200]!r}")

    def close(self) -> None:
        self.http.delete(self.url, headers=self.headers)
        self.http.close()


# -- async clients, each held open in a loop thread ---------------------------------------

class AsyncPeer:
    """An async client's session, held open by a task on an event loop in a thread;
    ``connect()`` (a coroutine) must yield once connected, then hold until asked to stop."""

    name = "async"

    def __init__(self, url: str):
        self.url = url
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name=f"bench-{self.name}")
        self.thread.start()
        self.stop_event: asyncio.Event | None = None
        ready = threading.Event()

        async def hold() -> None:
            self.stop_event = asyncio.Event()
            async with self.connect():
                ready.set()
                await self.stop_event.wait()

        self.task = asyncio.run_coroutine_threadsafe(hold(), self.loop)
        if not ready.wait(30):
            self.task.cancel()
            raise TimeoutError(f"the {self.name} client did not connect within 30 s")

    def connect(self):
        raise NotImplementedError

    async def call(self) -> None:
        raise NotImplementedError

    def run(self, coro, timeout: float = 120):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def call_from_sync(self) -> None:
        self.run(self.call(), 60)

    def native_times(self, count: int) -> list[float]:
        """Per-call seconds of ``count`` calls timed inside the event loop."""
        async def measure() -> list[float]:
            times = []
            for _ in range(count):
                started = time.perf_counter()
                await self.call()
                times.append(time.perf_counter() - started)
            return times
        return self.run(measure())

    def rate(self, callers: int, seconds: float) -> tuple[float, float]:
        """Calls per second of ``callers`` tasks calling for ``seconds``, and this
        process's CPU seconds per call meanwhile."""
        async def measure() -> float:
            done = 0
            stop = time.perf_counter() + seconds

            async def caller() -> None:
                nonlocal done
                while time.perf_counter() < stop:
                    await self.call()
                    done += 1
            started, cpu = time.perf_counter(), time.process_time()
            await asyncio.gather(*(caller() for _ in range(callers)))
            return (done / (time.perf_counter() - started),
                    (time.process_time() - cpu) / max(done, 1))
        return self.run(measure())

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.stop_event.set)  # type: ignore[union-attr]
        self.task.result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)
        self.loop.close()


class SdkClient(AsyncPeer):
    """The official SDK's ClientSession over its streamable_http_client."""

    name = "sdk"

    @contextlib.asynccontextmanager
    async def connect(self):
        async with streamable_http_client(self.url) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                await session.list_tools()
                self.session = session
                yield

    async def call(self) -> None:
        await self.session.call_tool("echo", ARGS)


class FastMcp(AsyncPeer):
    """FastMCP's Client over Streamable HTTP, in the handshake era as the others."""

    name = "fastmcp"

    def connect(self):
        self.client = FastMcpClient(self.url, mode="legacy")
        return self.client

    async def call(self) -> None:
        await self.client.call_tool("echo", ARGS)


# -- threads ------------------------------------------------------------------------------

def thread_rate(calls: list, seconds: float) -> tuple[float, float]:
    """Calls per second of one thread per ``calls[i]`` calling it for ``seconds``, and this
    process's CPU seconds per call meanwhile."""
    done = [0] * len(calls)
    start = threading.Barrier(len(calls) + 1)
    stop = [0.0]
    errors: list[BaseException] = []

    def caller(index: int) -> None:
        start.wait()
        fn = calls[index]
        try:
            while time.perf_counter() < stop[0]:
                fn()
                done[index] += 1
        except BaseException as exc:  # noqa: BLE001 - raised by the measuring thread
            errors.append(exc)
    threads = [threading.Thread(target=caller, args=(i,), name=f"bench-caller-{i}")
               for i in range(len(calls))]
    for thread in threads:
        thread.start()
    started, cpu = time.perf_counter(), time.process_time()
    stop[0] = started + seconds
    start.wait()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return (sum(done) / (time.perf_counter() - started),
            (time.process_time() - cpu) / max(sum(done), 1))


# -- one server ---------------------------------------------------------------------------

def _raider(url: str) -> McpServer:
    spec = McpConfig.from_dict({"mcpServers": {"bench": {"type": "http", "url": url,
                                                         "protocol": "legacy"}}}
                               ).server("bench")
    raider = McpServer(spec)
    raider.start_f().result(30)
    if raider.status != "connected":
        raider.stop()
        raise RuntimeError(f"raider_sync did not connect: {raider.reason}")
    return raider


def _connect(url: str, clients: list) -> tuple[McpServer, SdkClient, FastMcp]:
    """raider_sync, the SDK's client and FastMCP's, each added to ``clients`` once connected."""
    raider = _raider(url)
    clients.append(raider)
    sdk = SdkClient(url)
    clients.append(sdk)
    fast = FastMcp(url)
    clients.append(fast)
    return raider, sdk, fast


def _close(clients: list) -> None:
    for client in clients:
        (client.stop if isinstance(client, McpServer) else client.close)()


def measure_latency(flags: list[str]) -> dict[str, float]:
    """The best p50 of each client over ROUNDS interleaved rounds, one caller."""
    proc, url = _start_server(flags)
    clients: list = []
    try:
        floor = Floor(url)
        clients.append(floor)
        raider, sdk, fast = _connect(url, clients)
        tool = "mcp__bench__echo"
        ways = {
            "floor": floor.call,
            "raider_sync": lambda: raider.call_tool(tool, ARGS),
            "SDK from sync": sdk.call_from_sync,
        }
        natives = {"SDK async": sdk, "FastMCP async": fast}
        for fn in ways.values():
            timed(fn, WARMUP)
        for peer in natives.values():
            peer.native_times(WARMUP)
        best: dict[str, float] = {}
        for _ in range(ROUNDS):
            for name, fn in ways.items():
                value = p50(timed(fn, CALLS))
                best[name] = min(best.get(name, value), value)
            for name, peer in natives.items():
                value = p50(peer.native_times(CALLS))
                best[name] = min(best.get(name, value), value)
        return best
    finally:
        _close(clients)
        stop_process(proc)


Rates = dict[int, dict[str, float]]


def measure_callers(flags: list[str]) -> tuple[Rates, Rates]:
    """Per caller count and client, the best calls/s and the least client CPU seconds per
    call over RATE_ROUNDS interleaved rounds (the order of the clients rotated each round)."""
    proc, url = _start_server(flags)
    clients: list = []
    try:
        raider, sdk, fast = _connect(url, clients)
        floors = [Floor(url) for _ in range(max(CALLERS))]
        clients.extend(floors)
        tool = "mcp__bench__echo"

        def ours() -> None:
            raider.call_tool(tool, ARGS)
        ways = {
            "floor": lambda n: thread_rate([f.call for f in floors[:n]], WINDOW),
            "raider_sync": lambda n: thread_rate([ours] * n, WINDOW),
            "SDK async": lambda n: sdk.rate(n, WINDOW),
            "FastMCP async": lambda n: fast.rate(n, WINDOW),
        }
        for way in ways.values():  # warm every connection the largest count will use
            way(max(CALLERS))
        best: Rates = {n: {} for n in CALLERS}
        cpus: Rates = {n: {} for n in CALLERS}
        for round_ in range(RATE_ROUNDS):
            for n in CALLERS:
                names = list(ways)
                names = names[round_ % len(names):] + names[:round_ % len(names)]  # rotated
                for name in names:
                    value, cpu = ways[name](n)
                    best[n][name] = max(best[n].get(name, value), value)
                    cpus[n][name] = min(cpus[n].get(name, cpu), cpu)
        return best, cpus
    finally:
        _close(clients)
        stop_process(proc)


def main() -> None:
    started = time.monotonic()
    peers = ("floor", "raider_sync", "SDK async", "SDK from sync", "FastMCP async")
    for label, flags in (("JSON answers", ["--json"]), ("SSE answers", [])):
        best = measure_latency(flags)
        floor, ours = best["floor"], best["raider_sync"]
        rows = [("client", "per call (p50)", "raider_sync / it")]
        for name in peers:
            rows.append((name, ms(best[name]), ratio(ours, best[name]) if name != "raider_sync"
                         else ""))
        table(f"http: SDK server, {label}, tool echo (best of {ROUNDS} rounds of {CALLS})", rows)
        verdict_floor = "ok" if ours <= 1.15 * floor else "MISSED"
        verdict_sdk = "ok" if ours < best["SDK async"] else "MISSED"
        print(f"  targets: within 1.15x of the floor: {ours / floor:.2f}x {verdict_floor}; "
              f"below the SDK's async client: {ours / best['SDK async']:.2f}x {verdict_sdk}")
    rates, cpus = measure_callers([])
    names = ("raider_sync", "floor", "SDK async", "FastMCP async")
    rows = [("callers", *names, "raider_sync / floor", "/ SDK async", "/ FastMCP async")]
    for n, best in rates.items():
        ours = best["raider_sync"]
        rows.append((str(n), *(f"{best[name]:6.0f}/s {cpus[n][name] * 1e6:5.0f} us"
                               for name in names),
                     *(f"{ours / best[name]:5.2f}x" for name in names[1:])))
    table(f"http: SDK server, SSE answers, tool echo: calls/s and client CPU per call (best "
          f"of {RATE_ROUNDS} rounds of {WINDOW:g} s; ratios of calls/s, above 1.00x is faster)",
          rows)
    sixteen = rates[16]
    ours = sixteen["raider_sync"]
    versus_fast, versus_floor = ours / sixteen["FastMCP async"], ours / sixteen["floor"]
    print(f"  targets at 16 callers: >= 1.1x FastMCP: {versus_fast:.2f}x "
          f"{'ok' if versus_fast >= 1.1 else 'MISSED'}; >= the floor: {versus_floor:.2f}x "
          f"{'ok' if versus_floor >= 1.0 else 'MISSED'}")
    print(f"  (http leg took {time.monotonic() - started:.1f} s)")


if __name__ == "__main__":
    main()
