"""The pinned leg: a tiny stdio call with client and server sharing one CPU.

On one CPU nothing runs in parallel: every wake-up of a thread, the client's or the server's,
is paid for in turn, so a client's extra thread hops and its own work per call show up in full
instead of hiding behind the server's. A fresh process pins itself (every thread it has, and so
every thread and child it starts later) to one CPU, then drives each node server
(``bench/tiny_server.cjs``, and server-everything when installed) with the floor (the raw pipe
of bench/floor.py) and with raider_sync (a blocking ``call_tool``, handshake era), both
connected at once, each server process checked to be on that CPU too. Rotated rounds of
sequential ``echo`` calls; per client, the median over the rounds of a round's p50, this
process's CPU per call (``time.process_time``: the client's side of the call) and how often
per call its threads gave up the CPU to wait (voluntary context switches, from /proc: the
floor's one thread waits once per call, for the answer).

Target: raider_sync's p50 within 2.0x the floor's (stretch: 1.5x). The CPU is the last one
this process may run on, or RAIDER_SYNC_BENCH_CPU. With RAIDER_SYNC_BENCH_OLD=/path to an
older checkout, its raider_sync is measured too, in processes interleaved with this one's.
"""
from __future__ import annotations

import glob
import json
import os
import statistics
import sys
import time

from . import common
from .common import EVERYTHING_JS, TINY_SERVER, code_roots, load_note, ms, run_child, table

CALLS = 200      # per client and round
ROUNDS = 5
WARMUP = 100
PROCESSES = 3    # per version, interleaved with the other version's
ARGS = {"message": "hello"}
TARGET, STRETCH = 2.0, 1.5


def pinned_servers() -> list[tuple[str, list[str]]]:
    servers = [("tiny-server (node)", ["node", TINY_SERVER])]
    if os.path.exists(EVERYTHING_JS):
        servers.append(("server-everything (node)", ["node", EVERYTHING_JS, "stdio"]))
    return servers


def the_cpu() -> int:
    chosen = os.environ.get("RAIDER_SYNC_BENCH_CPU")
    return int(chosen) if chosen else max(os.sched_getaffinity(0))


# -- the child: pinned, measuring one version ---------------------------------------------

def pin(pid: int, cpu: int) -> None:
    """Pin every thread of process ``pid`` to ``cpu`` (sched_setaffinity sets one thread's;
    threads started later inherit their starter's)."""
    for task in os.listdir(f"/proc/{pid}/task"):
        os.sched_setaffinity(int(task), {cpu})


def unpinned(pid: int, cpu: int) -> list[str]:
    """The threads of process ``pid`` that may run on another CPU than ``cpu``."""
    strays = []
    for status in glob.glob(f"/proc/{pid}/task/*/status"):
        try:
            with open(status) as lines:
                fields = dict(line.split(":", 1) for line in lines if ":" in line)
        except OSError:  # the thread ended meanwhile
            continue
        if fields.get("Cpus_allowed_list", "").strip() != str(cpu):
            strays.append(f"{pid}/{fields.get('Name', '?').strip()}")
    return strays


def sleeps(pid: int) -> int:
    """How many times the threads of process ``pid`` (those alive now) gave up the CPU to
    wait (voluntary context switches): each is a wake-up to pay for later."""
    total = 0
    for status in glob.glob(f"/proc/{pid}/task/*/status"):
        try:
            with open(status) as lines:
                total += sum(int(line.split()[1]) for line in lines
                             if line.startswith("voluntary_ctxt_switches"))
        except OSError:  # the thread ended meanwhile
            continue
    return total


def _round(peer) -> tuple[float, float, float]:
    """(p50 seconds, this process's CPU seconds per call, its threads' waits per call) of
    one round of ``peer``."""
    waits, cpu = sleeps(os.getpid()), time.process_time()
    samples = peer.times(CALLS, "echo", ARGS)
    return (common.p50(samples), (time.process_time() - cpu) / CALLS,
            (sleeps(os.getpid()) - waits) / CALLS)


def child(cpu: int, rounds: int) -> dict:
    pin(os.getpid(), cpu)
    from .floor import RawPipe
    from .stdio_peers import RaiderPeer
    results = {}
    for label, command in pinned_servers():
        floor = RawPipe(command)
        try:
            raider = RaiderPeer(command)
        except BaseException:
            floor.close()
            raise
        try:
            for pid in (floor.proc.pid, raider.server.pid):
                pin(pid, cpu)  # inherited already; made sure of, threads started since too
            for peer in (floor, raider):
                peer.times(WARMUP, "echo", ARGS)
            figures = common.rotated({"floor": lambda floor=floor: _round(floor),
                                      "raider_sync": lambda raider=raider: _round(raider)},
                                     rounds)
            strays = [stray for pid in (os.getpid(), floor.proc.pid, raider.server.pid)
                      for stray in unpinned(pid, cpu)]
            if strays:
                raise RuntimeError(f"threads not pinned to CPU {cpu}: {', '.join(strays)}")
        finally:
            raider.close()
            floor.close()
        results[label] = figures
    return {"cpu": cpu, "servers": results}


# -- the parent ---------------------------------------------------------------------------

def main() -> None:
    if not hasattr(os, "sched_setaffinity") or not os.path.isdir("/proc/self/task"):
        print("\n== pinned: not available (pinning needs Linux: sched_setaffinity and /proc)")
        return
    started = time.monotonic()
    cpu = the_cpu()
    roots = code_roots()
    rounds = common.rounds(ROUNDS)
    children: dict[str, list[dict]] = {label: [] for label, _ in roots}
    for index in range(common.rounds(PROCESSES)):
        for label, root in (roots if index % 2 == 0 else roots[::-1]):
            children[label].append(run_child("bench.bench_pinned",
                                             ["child", str(cpu), str(rounds)],
                                             timeout=600, raider_root=root))
    rows = [("server", "version", "floor p50", "raider_sync p50", "raider_sync / floor",
             "client CPU/call: floor", "raider_sync", "client waits/call: floor",
             "raider_sync")]
    verdicts = []
    for server, _ in pinned_servers():
        for index, (label, _) in enumerate(roots):
            runs = [run["servers"][server] for run in children[label]]
            floor = [statistics.median(run["floor"][i] for run in runs) for i in (0, 1, 2)]
            ours = [statistics.median(run["raider_sync"][i] for run in runs) for i in (0, 1, 2)]
            factor = round(ours[0] / floor[0], 2)  # judged as shown
            rows.append((server if index == 0 else "", label, ms(floor[0]), ms(ours[0]),
                         f"{factor:5.2f}x", ms(floor[1]), ms(ours[1]), f"{floor[2]:5.2f}",
                         f"{ours[2]:5.2f}"))
            verdict = ("ok" if factor <= STRETCH else "ok (not the stretch "
                       f"{STRETCH}x)" if factor <= TARGET else "MISSED")
            verdicts.append(f"{server}, {label}: {factor:.2f}x {verdict}")
    table(f"pinned: client and server on CPU {cpu} alone, sequential tool echo (medians over "
          f"{common.rounds(PROCESSES)} process(es) per version of {rounds} rotated rounds' p50 "
          f"of {CALLS} calls)", rows)
    print(f"  target: within {TARGET}x the floor (stretch {STRETCH}x): " + "; ".join(verdicts))
    print(f"  (pinned leg took {time.monotonic() - started:.1f} s, {load_note()})")


if __name__ == "__main__":
    if sys.argv[1:2] == ["child"]:
        print(json.dumps(child(int(sys.argv[2]), int(sys.argv[3]))))
    else:
        main()
