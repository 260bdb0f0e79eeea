"""The stateless-era leg (2026-07-28): the SDK's server in its modern mode, driven by
raider_sync (protocol "2026-07-28") and by the SDK's own client (``mcp.Client`` with
``mode="2026-07-28"``), in one run. Measured: sequential tool-call latency over stdio and over
Streamable HTTP (JSON answers)."""
from __future__ import annotations

import asyncio
import sys

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from raider_sync import McpConfig, McpServer

from .common import SDK_SERVER, free_port, ms, p50, ratio, start_listening, stop_process, table, timed

CALLS = 400
WARMUP = 50
ARGS = {"message": "hello"}
MODE = "2026-07-28"


def raider_sequential(entry: dict) -> float:
    spec = McpConfig.from_dict({"mcpServers": {"bench": {**entry, "protocol": MODE}}}
                               ).server("bench")
    with McpServer(spec, kill_grace=1) as server:
        assert server.era == "modern", server.reason
        for _ in range(WARMUP):
            server.call_tool("mcp__bench__echo", ARGS)
        return p50(timed(lambda: server.call_tool("mcp__bench__echo", ARGS), CALLS))


async def _sdk_sequential(target) -> float:
    async with Client(target, mode=MODE) as client:
        for _ in range(WARMUP):
            await client.call_tool("echo", ARGS)
        times = []
        loop = asyncio.get_running_loop()
        for _ in range(CALLS):
            started = loop.time()
            await client.call_tool("echo", ARGS)
            times.append(loop.time() - started)
    return p50(times)


def sdk_sequential(target) -> float:
    return asyncio.run(_sdk_sequential(target))


def main() -> None:
    command = [sys.executable, SDK_SERVER, "stdio"]
    r_stdio = raider_sequential({"command": command[0], "args": command[1:]})
    s_stdio = sdk_sequential(StdioServerParameters(command=command[0], args=command[1:]))
    port = free_port()
    proc = start_listening([sys.executable, SDK_SERVER, "streamable-http", str(port), "--json"],
                           port)
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        r_http = raider_sequential({"type": "http", "url": url})
        s_http = sdk_sequential(url)
    finally:
        stop_process(proc)
    table(f"stateless era ({MODE}): sdk-server (python), tool echo", [
        ("measure", "raider_sync", "SDK Client", "ratio"),
        ("stdio sequential call (p50)", ms(r_stdio), ms(s_stdio), ratio(r_stdio, s_stdio)),
        ("http sequential call (p50)", ms(r_http), ms(s_http), ratio(r_http, s_http)),
    ])


if __name__ == "__main__":
    main()
