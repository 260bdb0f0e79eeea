"""The callers leg: throughput over one stdio connection with 1, 4, 16 and 64 concurrent
callers, per client: raider_sync (threads), the SDK's ``ClientSession`` and FastMCP's
``Client`` (tasks on their event loop), and the floor: one thread over a raw pipe that keeps
as many requests in flight as there are callers (what the server itself can carry).

Every count makes the same number of calls in all; rounds are rotated across the clients,
all connected at once, and the median of the rounds is shown.
"""
from __future__ import annotations

import time

from .common import ratio, rotated, rounds, stdio_servers, table
from .stdio_peers import all_connected

COUNTS = (1, 4, 16, 64)
TOTAL = 640      # calls per client, count and round
WARMUP = 50
ARGS = {"message": "hello"}


def throughputs(command: list[str]) -> dict[int, dict[str, float]]:
    with all_connected(command, WARMUP, "echo", ARGS) as (floor, *clients):
        results = {}
        for callers in COUNTS:
            ways = {"floor": lambda n=callers: floor.pipelined(n, TOTAL, "echo", ARGS)}
            for client in clients:
                ways[client.name] = (lambda c=client, n=callers:
                                     c.throughput(n, TOTAL // n, "echo", ARGS))
            results[callers] = rotated(ways, rounds(3))
        return results


def main() -> None:
    started = time.monotonic()
    for label, command in stdio_servers():
        results = throughputs(command)
        rows = [("callers", "floor", "raider_sync", "raider_sync / floor", "SDK",
                 "raider_sync / SDK", "FastMCP", "raider_sync / FastMCP")]
        for callers, figures in results.items():
            ours = figures["raider_sync"]
            row = [str(callers)]
            for name in ("floor", "raider_sync", "SDK", "FastMCP"):
                row.append(f"{figures[name]:7.0f}/s")
                if name != "raider_sync":
                    row.append(ratio(ours, figures[name]))
            rows.append((row[0], row[1], row[3], row[2], *row[4:]))
        table(f"stdio callers: {label}, tool echo, calls per second (median of {rounds(3)} "
              f"rotated rounds of {TOTAL} calls)", rows)
        print("  (above 1.00x: raider_sync carries more calls per second; the floor keeps as "
              "many requests in flight from one thread)")
    print(f"  (callers leg took {time.monotonic() - started:.1f} s)")


if __name__ == "__main__":
    main()
