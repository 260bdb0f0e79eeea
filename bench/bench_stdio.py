"""The stdio leg: the same server driven by raider_sync, the official SDK, FastMCP's client
and a buffered raw pipe (the floor), in one run.

Measured per server, in rotated rounds (the median of the rounds is shown):

- connect: spawn, ``initialize``, tool list (for the floor: written by hand);
- sequential call: the p50 of ``echo`` calls one after another, on connections all open at
  once. "SDK from sync" is the SDK as a synchronous program uses it today: an event loop in a
  thread and ``run_coroutine_threadsafe(...).result()`` per call.

Target: raider_sync's sequential call within 1.1x of the floor's. Throughput with several
callers is the callers leg (bench_callers).
"""
from __future__ import annotations

import time

from .common import ms, p50, ratio, rotated, rounds, stdio_servers, table
from .floor import RawPipe
from .stdio_peers import FastMcpPeer, RaiderPeer, SdkPeer, all_connected

CONNECT_ROUNDS = 3
CALL_ROUNDS = 5
CALLS = 200      # per client and round
WARMUP = 50
ARGS = {"message": "hello"}
TARGET = 1.1
PEERS = (RawPipe, RaiderPeer, SdkPeer, FastMcpPeer)


def connect_times(command: list[str]) -> dict[str, float]:
    """Seconds from nothing to a session with the tool list, per client (closing not
    counted)."""
    def way(peer_class):
        def once() -> float:
            started = time.perf_counter()
            peer = peer_class(command)
            elapsed = time.perf_counter() - started
            peer.close()
            return elapsed
        return once
    return rotated({cls.name: way(cls) for cls in PEERS}, rounds(CONNECT_ROUNDS))


def call_times(command: list[str]) -> dict[str, float]:
    """The p50 of a sequential echo call, per client, all connected at once."""
    with all_connected(command, WARMUP, "echo", ARGS) as (floor, raider, sdk, fastmcp):
        return rotated({
            "floor": lambda: p50(floor.times(CALLS, "echo", ARGS)),
            "raider_sync": lambda: p50(raider.times(CALLS, "echo", ARGS)),
            "SDK": lambda: p50(sdk.times(CALLS, "echo", ARGS)),
            "SDK from sync": lambda: p50(sdk.times_from_sync(CALLS, "echo", ARGS)),
            "FastMCP": lambda: p50(fastmcp.times(CALLS, "echo", ARGS)),
        }, rounds(CALL_ROUNDS))


def main() -> None:
    started = time.monotonic()
    for label, command in stdio_servers():
        connects, calls = connect_times(command), call_times(command)
        ours_connect, ours_call = connects["raider_sync"], calls["raider_sync"]
        rows = [("client", "connect (p50)", "raider_sync / it", "call (p50)", "raider_sync / it")]
        for name in ("floor", "raider_sync", "SDK", "SDK from sync", "FastMCP"):
            mine = name == "raider_sync"
            connect = connects.get(name)
            rows.append((name, ms(connect) if connect else "", "" if mine or not connect
                         else ratio(ours_connect, connect), ms(calls[name]),
                         "" if mine else ratio(ours_call, calls[name])))
        table(f"stdio: {label}, tool echo (median of {rounds(CALL_ROUNDS)} rotated rounds of "
              f"{CALLS} calls)", rows)
        floor = calls["floor"]
        verdict = "ok" if ours_call <= TARGET * floor else "MISSED"
        print(f"  target: a sequential call within {TARGET}x of the floor: "
              f"{ours_call / floor:.2f}x {verdict}")
    print(f"  (stdio leg took {time.monotonic() - started:.1f} s)")


if __name__ == "__main__":
    main()
