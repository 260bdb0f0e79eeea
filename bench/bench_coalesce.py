"""The coalesce leg: 64 callers read one resource at the same instant, over one stdio
connection to a server (built with the official SDK) whose read takes 50 ms and counts itself.
raider_sync (64 threads) sends one request and hands every caller the answer; the SDK's
``ClientSession`` (64 tasks on its loop) sends 64. Shown: the reads the server did per burst,
each caller's latency (p50 and the slowest) and the burst's wall time, median of the rounds.
"""
from __future__ import annotations

import asyncio
import os
import sys
import time

from raider_sync import McpServer

from .common import BENCH, p50, ratio, released_together, rotated, rounds, table
from .stdio_peers import CONNECT_TIMEOUT, SdkPeer, raider_spec

CALLERS = 64
URI = "bench://slow"
COMMAND = [sys.executable, os.path.join(BENCH, "read_server.py")]


class RaiderReads:
    name = "raider_sync"

    def __init__(self):
        self.server = McpServer(raider_spec(COMMAND), kill_grace=1)
        self.server.start_f().result(CONNECT_TIMEOUT)

    def burst(self) -> tuple[float, float, float, float]:
        before = int(self.server.call_tool("mcp__bench__count", {}).text)
        latencies: list[float] = []

        def read() -> None:
            started = time.perf_counter()
            self.server.read_resource(URI)
            latencies.append(time.perf_counter() - started)
        wall = released_together(CALLERS, read)
        reads = int(self.server.call_tool("mcp__bench__count", {}).text) - before
        return reads, p50(latencies), max(latencies), wall

    def close(self) -> None:
        self.server.stop()


class SdkReads(SdkPeer):
    name = "SDK"

    def burst(self) -> tuple[float, float, float, float]:
        async def measure():
            before = int(await self._call("count", {}))
            latencies: list[float] = []

            async def caller() -> None:
                started = time.perf_counter()
                await self.session.read_resource(URI)
                latencies.append(time.perf_counter() - started)
            started = time.perf_counter()
            await asyncio.gather(*(caller() for _ in range(CALLERS)))
            wall = time.perf_counter() - started
            reads = int(await self._call("count", {})) - before
            return reads, p50(latencies), max(latencies), wall
        return self.runner.run(measure())


def main() -> None:
    started = time.monotonic()
    ours, sdk = RaiderReads(), SdkReads(COMMAND)
    try:
        for peer in (ours, sdk):
            peer.burst()  # warm up
        figures = rotated({"raider_sync": ours.burst, "SDK": sdk.burst}, rounds(5))
    finally:
        ours.close()
        sdk.close()
    rows = [("", "raider_sync", "SDK", "raider_sync / SDK")]
    names = ("reads on the server", "caller p50", "slowest caller", "burst wall time")
    for index, label in enumerate(names):
        mine, theirs = figures["raider_sync"][index], figures["SDK"][index]
        if index == 0:
            rows.append((label, f"{mine:.0f}", f"{theirs:.0f}", ratio(mine, theirs)))
        else:
            rows.append((label, f"{mine * 1000:.1f} ms", f"{theirs * 1000:.1f} ms",
                         ratio(mine, theirs)))
    table(f"coalesce: {CALLERS} callers read one resource at once over stdio, a 50 ms read "
          f"(median of {rounds(5)} rotated rounds)", rows)
    print("  (below 1.00x: raider_sync asks the server less and answers sooner)")
    print(f"  (coalesce leg took {time.monotonic() - started:.1f} s)")


if __name__ == "__main__":
    main()
