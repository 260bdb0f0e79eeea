"""The many-servers leg: 1, 10 and 50 stdio servers held by one client process.

The server is ``bench/tiny_server.cjs``: the official TypeScript SDK's ``McpServer`` with one
tool, loaded as CommonJS from the test peers. It is a real, validated server that starts in
about a third of the CPU time of the Python SDK's (which imports pydantic, starlette and the
SDK's whole type tree), so that 50 of them start on two cores in seconds and the client's own
cost stays visible.

For each client and count, a fresh process (``python -m bench.bench_servers child CLIENT N``)
counts its threads after the imports, starts N servers and waits until all are connected
(``initialize`` and tool list), then lets them idle for a second. Measured: the time until all
are connected, then, idle, the client process's resident set (``VmRSS``: interpreter,
libraries and sessions) and its threads (``Threads`` in /proc: the kernel's count, native
threads included). The clients: raider_sync (one ``McpHub`` of N servers), the SDK
(N ``ClientSession`` in one event loop) and FastMCP (N ``Client`` in one event loop).
Target: at most one thread per idle server.
"""
from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from contextlib import AsyncExitStack

from .common import TINY_SERVER, mb, measure_rows, rotated, rounds, run_child, status_field, table

COUNTS = (1, 10, 50)
ROUNDS = {1: 3, 10: 1, 50: 1}  # 50 node servers cost a minute of CPU per client
CLIENTS = ("raider_sync", "SDK", "FastMCP")
COMMAND = ["node", TINY_SERVER]
IDLE = 1.0  # seconds the servers idle before the count: threads that only start or stop end
TARGET = 1.0


def _raider(count: int, idle) -> float:
    from raider_sync import McpHub
    hub = McpHub({"mcpServers": {f"s{i}": {"command": COMMAND[0], "args": COMMAND[1:],
                                           "protocol": "legacy"} for i in range(count)}},
                 kill_grace=1)
    try:
        started = time.perf_counter()
        hub.start(120)
        elapsed = time.perf_counter() - started
        down = {name: status for name, status in hub.statuses().items() if status != "connected"}
        if down:
            raise RuntimeError(f"not connected: {down}")
        idle()
        return elapsed
    finally:
        hub.stop()


async def _sdk(count: int, idle) -> float:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    params = StdioServerParameters(command=COMMAND[0], args=COMMAND[1:], env=dict(os.environ))
    async with AsyncExitStack() as stack:
        started = time.perf_counter()
        sessions = []
        for _ in range(count):
            read, write = await stack.enter_async_context(stdio_client(params))
            sessions.append(await stack.enter_async_context(ClientSession(read, write)))

        async def connect(session) -> None:
            await session.initialize()
            await session.list_tools()
        await asyncio.gather(*map(connect, sessions))
        elapsed = time.perf_counter() - started
        await asyncio.sleep(IDLE)
        idle(sleep=False)
        return elapsed


async def _fastmcp(count: int, idle) -> float:
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport
    clients = [Client(StdioTransport(COMMAND[0], COMMAND[1:], env=dict(os.environ),
                                     keep_alive=False), mode="legacy") for _ in range(count)]
    entered = []

    async def connect(client) -> None:
        await client.__aenter__()
        entered.append(client)
        await client.list_tools()
    try:
        started = time.perf_counter()
        await asyncio.gather(*map(connect, clients))
        elapsed = time.perf_counter() - started
        await asyncio.sleep(IDLE)
        idle(sleep=False)
        return elapsed
    finally:
        await asyncio.gather(*(client.__aexit__(None, None, None) for client in entered))


def child(client: str, count: int) -> dict:
    """In a fresh process: the baseline after the imports, N servers, the idle counts."""
    if client == "raider_sync":
        import raider_sync  # noqa: F401
    elif client == "SDK":
        import mcp.client.session  # noqa: F401
        import mcp.client.stdio  # noqa: F401
    else:
        import fastmcp.client.transports  # noqa: F401
    figures = {"threads_before": status_field("Threads")}

    def idle(sleep: bool = True) -> None:
        if sleep:
            time.sleep(IDLE)
        figures["rss"] = status_field("VmRSS")
        figures["threads"] = status_field("Threads")

    if client == "raider_sync":
        figures["connect"] = _raider(count, idle)
    else:
        figures["connect"] = asyncio.run((_sdk if client == "SDK" else _fastmcp)(count, idle))
    return figures


def measure(count: int) -> dict[str, tuple[float, float, float, float]]:
    def way(client: str):
        def run() -> tuple[float, float, float, float]:
            figures = run_child("bench.bench_servers", ["child", client, str(count)], 300)
            return (figures["connect"], figures["rss"], figures["threads"],
                    (figures["threads"] - figures["threads_before"]) / count)
        return run
    return rotated({client: way(client) for client in CLIENTS}, rounds(ROUNDS[count]))



def seconds(value: float) -> str:
    return f"{value:8.2f} s"


def main() -> None:
    started = time.monotonic()
    results = {count: measure(count) for count in COUNTS}
    rows = measure_rows("servers", {str(count): figures for count, figures in results.items()},
                        CLIENTS, [("all connected", seconds), ("client RSS, idle", mb),
                                  ("threads, idle", lambda n: f"{n:7.0f}"),
                                  ("threads per server", lambda n: f"{n:7.2f}")])
    table("many servers: tiny-server (node), one client process (medians of rotated rounds: "
          f"{', '.join(f'{rounds(ROUNDS[c])} for {c}' for c in COUNTS)})", rows)
    worst = max(results[count]["raider_sync"][3] for count in COUNTS)
    verdict = "ok" if worst <= TARGET else "MISSED"
    print(f"  (ratio: raider_sync / it; threads per server: those beyond the client's own after "
          f"its imports)\n  target: at most {TARGET:.0f} thread per idle server: raider_sync's most is "
          f"{worst:.2f} {verdict}")
    print(f"  (servers leg took {time.monotonic() - started:.1f} s)")


if __name__ == "__main__":
    if sys.argv[1:2] == ["child"]:
        print(json.dumps(child(sys.argv[2], int(sys.argv[3]))))
    else:
        main()
