"""The result-size leg: one tool call returning 1 KB, 100 KB, 1 MB and 10 MB of text.

The server is ``bench/sized_server.py`` (the official SDK's server, one text block, no
structured copy). For each client and size, a fresh process (``python -m bench.bench_sizes
child CLIENT SIZE``) connects, makes one small call, takes its peak RSS as the baseline, then
makes the sized calls: the figures are the p50 time per call and the growth of the peak RSS
(``VmHWM`` after, minus the baseline), so that no variant inherits another's peak. The
clients: the floor (a buffered raw pipe: ``readline`` and ``json.loads``), raider_sync (its
output limit raised so the whole text comes back, as from the others), the SDK's
``ClientSession`` and FastMCP's ``Client``. Processes run in rotated rounds; the median of
the rounds is shown. Target: raider_sync's peak RSS growth on 10 MB within 1.3x the floor's.
"""
from __future__ import annotations

import json
import sys
import time

from .common import (
    SIZED_SERVER,
    mb,
    measure_rows,
    ms,
    p50,
    peak_rss,
    ratio,
    rotated,
    rounds,
    run_child,
    table,
)

SIZES = {"1 KB": 1024, "100 KB": 100 * 1024, "1 MB": 2**20, "10 MB": 10 * 2**20}
CALLS = {1024: 100, 100 * 1024: 30, 2**20: 10, 10 * 2**20: 3}
CLIENTS = ("floor", "raider_sync", "SDK", "FastMCP")
TARGET = 1.3


def _peer(client: str, command: list[str]):
    # each child imports only its own client's library
    if client == "floor":
        from .floor import RawPipe
        return RawPipe(command)
    from . import stdio_peers
    if client == "raider_sync":
        # the default limit (25000 tokens) would cut the text: the others return all of it
        return stdio_peers.RaiderPeer(command, max_output_tokens=10**9)
    return {"SDK": stdio_peers.SdkPeer, "FastMCP": stdio_peers.FastMcpPeer}[client](command)


def child(client: str, size: int) -> dict:
    """In a fresh process: connect, a small call, the baseline, the sized calls."""
    peer = _peer(client, [sys.executable, SIZED_SERVER])
    try:
        peer.call("text", {"size": 1024})
        baseline = peak_rss()
        per_call = p50(peer.times(CALLS[size], "text", {"size": size}))
        growth = peak_rss() - baseline
        length = len(peer.call("text", {"size": size}))
        if length != size:
            raise RuntimeError(f"{client} returned {length} characters, not {size}")
    finally:
        peer.close()
    return {"per_call": per_call, "growth": growth}


def measure(size: int) -> dict[str, tuple[float, float]]:
    def way(client: str):
        def run() -> tuple[float, float]:
            figures = run_child("bench.bench_sizes", ["child", client, str(size)])
            return figures["per_call"], figures["growth"]
        return run
    return rotated({client: way(client) for client in CLIENTS}, rounds(3))


def main() -> None:
    started = time.monotonic()
    results = {label: measure(size) for label, size in SIZES.items()}
    count = rounds(3)
    rows = measure_rows("size", results, CLIENTS, [("per call (p50)", ms),
                                                   ("peak RSS growth", mb)])
    table(f"result sizes: sized-server (python), tool text (median of {count} rotated rounds,"
          " a fresh process per client and size)", rows)
    ours, floor = results["10 MB"]["raider_sync"][1], results["10 MB"]["floor"][1]
    verdict = "ok" if ours <= TARGET * floor else "MISSED"
    print(f"  (ratio: raider_sync / it.) target: peak RSS growth on 10 MB within {TARGET}x the "
          f"floor's: {ratio(ours, floor).strip()} {verdict}")
    print(f"  (sizes leg took {time.monotonic() - started:.1f} s)")


if __name__ == "__main__":
    if sys.argv[1:2] == ["child"]:
        print(json.dumps(child(sys.argv[2], int(sys.argv[3]))))
    else:
        main()
