"""The ownwork leg: raider_sync's own work per call, with no I/O at all.

An :class:`~bench.instant.InstantServer` (a real McpServer, connection, era and JSON-RPC
session over a transport that answers at once, in memory, on the sending thread) is called
``mcp__x__echo`` one call after another, in a fresh process per version:

- ``call_tool``: the blocking call, sent and answered on the caller's thread;
- ``call_tool_f().result()``: the future's twin, sent from the session's sender thread (one
  hand-off there and one back);
- ``transport alone``: what the instant transport itself does per call (encode the request,
  format the answer, parse it), the part of the above that is not the library's call path.

Figures are microseconds per call, the lowest and the median round over all rounds: by the
clock, and by the CPU of the whole process (``time.process_time``, every thread). On a busy
machine the clock counts the moments the process waits for a core and the CPU time grows with
the neighbours' use of the shared caches: the lowest round is the nearest to the code's own
cost, the median what a busy machine gives. Then
the Python function calls per ``call_tool`` (counted with cProfile: a figure the machine's
load cannot move) and, with ``--profile``, where the time goes: cProfile's top functions by
own time, and the same summed per module.

With RAIDER_SYNC_BENCH_OLD=/path/to/an/older/checkout, the same code measures that
checkout's raider_sync too, the processes of both versions interleaved, and the ratio
new/old is printed.
"""
from __future__ import annotations

import cProfile
import json
import os
import pstats
import statistics
import sys
import time

from . import common
from .common import code_roots, load_note, run_child, table

CALLS = 2000      # per round and way
ROUNDS = 5        # per process
PROCESSES = 3     # per version, interleaved with the other version's
WARMUP = 500
PROFILED = 2000   # call_tool calls under cProfile, once per process
TOP = 20          # functions shown by --profile
TOP_MODULES = 15  # modules shown by --profile


# -- the child: one version of raider_sync, measured -----------------------------------------

def _ways(server, transport) -> dict:
    from .instant import ARGS, TOOL
    message = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
               "params": {"name": "echo", "arguments": ARGS}}
    return {
        "call_tool": lambda: server.call_tool(TOOL, ARGS),
        "call_tool_f().result()": lambda: server.call_tool_f(TOOL, ARGS).result(60),
        "transport alone": lambda: transport.send(message),
    }


def _round(fn, calls: int) -> tuple[float, float]:
    """Microseconds per call of ``calls`` calls of ``fn()``: wall clock, and this process's
    CPU (every thread)."""
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(calls):
        fn()
    return ((time.perf_counter() - wall) / calls * 1e6,
            (time.process_time() - cpu) / calls * 1e6)


def _module(filename: str) -> str:
    """The dotted module a profiled function's file is, or ``built-in`` for C functions."""
    if filename == "~":
        return "built-in"
    path = filename[:-3] if filename.endswith(".py") else filename
    for top in ("raider_sync", "bench"):
        mark = f"/{top}/"
        if mark in path:
            return top + "." + path.rsplit(mark, 1)[1].replace("/", ".")
    marker = "/lib/python"
    if marker in path:
        rest = path.rsplit(marker, 1)[1].split("/", 1)
        if len(rest) == 2:
            return rest[1].replace("/", ".").replace("site-packages.", "")
    return os.path.basename(path)


def _profile(fn, calls: int) -> dict:
    """cProfile over ``calls`` calls of ``fn()``: the Python function calls per call, and
    every function's calls and own and cumulative seconds."""
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        fn()
    profiler.disable()
    stats = pstats.Stats(profiler)
    rows = [[_module(filename), f"{name}:{line}" if filename != "~" else name, ncalls, tottime,
             cumtime]
            for (filename, line, name), (_, ncalls, tottime, cumtime, _) in stats.stats.items()]
    python_calls = sum(row[2] for row in rows if row[0] != "built-in")
    return {"calls": calls, "python_calls": python_calls / calls,
            "all_calls": stats.total_calls / calls, "total": stats.total_tt, "rows": rows}


def child(calls: int, rounds: int) -> dict:
    import raider_sync

    from .instant import InstantServer, InstantTransport
    transport = InstantTransport()
    transport.start(lambda message: None, lambda error: None)
    with InstantServer() as server:
        if server.status != "connected":
            raise RuntimeError(f"the instant server did not connect: {server.reason}")
        ways = _ways(server, transport)
        for fn in ways.values():
            _round(fn, WARMUP)
        samples: dict[str, list] = {name: [] for name in ways}
        names = list(ways)
        for round_ in range(rounds):  # rotated: no way always runs first
            shift = round_ % len(names)
            for name in names[shift:] + names[:shift]:
                samples[name].append(_round(ways[name], calls))
        profile = _profile(ways["call_tool"], PROFILED)
    return {"raider_sync": os.path.dirname(raider_sync.__file__), "samples": samples,
            "profile": profile}


# -- the parent: the versions side by side ----------------------------------------------------

def _us(value: float) -> str:
    return f"{value:7.1f} us"


MEASURES = ("lowest", "median", "CPU, lowest", "CPU, median")


def _summary(samples: list[list[float]]) -> tuple[float, ...]:
    """The :data:`MEASURES` of the rounds of every process: the lowest and the median round
    by the clock, then by the process's CPU."""
    walls = [wall for wall, _ in samples]
    cpus = [cpu for _, cpu in samples]
    return min(walls), statistics.median(walls), min(cpus), statistics.median(cpus)


def _merged_profile(profiles: list[dict]) -> dict:
    """The profiles of a version's processes added up (rows by module and function)."""
    rows: dict[tuple[str, str], list] = {}
    for profile in profiles:
        for module, name, ncalls, tottime, cumtime in profile["rows"]:
            row = rows.setdefault((module, name), [module, name, 0, 0.0, 0.0])
            row[2] += ncalls
            row[3] += tottime
            row[4] += cumtime
    return {"calls": sum(p["calls"] for p in profiles), "rows": list(rows.values()),
            "total": sum(p["total"] for p in profiles),
            "python_calls": statistics.median(p["python_calls"] for p in profiles)}


def print_profile(label: str, profile: dict, top: int = TOP,
                  top_modules: int = TOP_MODULES) -> None:
    """cProfile's top functions by own time, and the own time summed per module, per
    ``call_tool`` (the profiler slows every function call: shares, not absolute times)."""
    calls, total = profile["calls"], profile["total"]
    rows = sorted(profile["rows"], key=lambda row: row[3], reverse=True)
    lines = [("own us/call", "share", "cum us/call", "calls/call", "function")]
    for module, name, ncalls, tottime, cumtime in rows[:top]:
        lines.append((f"{tottime / calls * 1e6:6.2f}", f"{tottime / total:6.1%}",
                      f"{cumtime / calls * 1e6:7.2f}", f"{ncalls / calls:5.1f}",
                      f"{module}  {name}"))
    table(f"ownwork profile, {label}: top {top} functions by own time (cProfile, "
          f"{calls} call_tool calls; {total / calls * 1e6:.1f} us per call under the profiler)",
          lines)
    modules: dict[str, list] = {}
    for row in rows:
        modules.setdefault(row[0], []).append(row)
    ranked = sorted(modules.items(), key=lambda item: -sum(row[3] for row in item[1]))
    lines = [("own us/call", "share", "calls/call", "module: its top functions (own us/call)")]
    for module, members in ranked[:top_modules]:
        own = sum(row[3] for row in members)
        tops = ", ".join(f"{row[1]} {row[3] / calls * 1e6:.2f}" for row in members[:3])
        lines.append((f"{own / calls * 1e6:6.2f}", f"{own / total:6.1%}",
                      f"{sum(row[2] for row in members) / calls:5.1f}", f"{module}: {tops}"))
    rest = sum(sum(row[3] for row in members) for _, members in ranked[top_modules:])
    lines.append((f"{rest / calls * 1e6:6.2f}", f"{rest / total:6.1%}", "",
                  f"({len(ranked) - top_modules} other modules)"))
    table(f"ownwork profile, {label}: own time per module", lines)


def main() -> None:
    started = time.monotonic()
    roots = code_roots()
    processes = common.rounds(PROCESSES)
    rounds = common.rounds(ROUNDS)
    results: dict[str, list[dict]] = {label: [] for label, _ in roots}
    for index in range(processes):
        order = roots if index % 2 == 0 else roots[::-1]
        for label, root in order:
            results[label].append(run_child("bench.bench_ownwork",
                                            ["child", str(CALLS), str(rounds)],
                                            timeout=600, raider_root=root))
    labels = [label for label, _ in roots]
    ways = list(results[labels[0]][0]["samples"])
    compared = len(labels) == 2
    rows = [("way", "measure", *labels, *([f"{labels[0]} / {labels[1]}"] if compared else []))]
    for way in ways:
        figures = [_summary([s for run in results[label] for s in run["samples"][way]])
                   for label in labels]
        for index, measure in enumerate(MEASURES):
            row = [way if index == 0 else "", measure,
                   *(_us(summary[index]) for summary in figures)]
            if compared:
                row.append(common.ratio(figures[0][index], figures[1][index]))
            rows.append(tuple(row))
    profiles = {label: _merged_profile([run["profile"] for run in results[label]])
                for label in labels}
    counts = [profiles[label]["python_calls"] for label in labels]
    rows.append(("Python calls per call_tool", "", *(f"{count:7.0f}" for count in counts),
                 *([common.ratio(*counts)] if compared else [])))
    table(f"ownwork: McpServer over an in-memory transport, tool echo, no I/O (us per call; "
          f"{processes} process(es) per version of {rounds} rotated rounds of {CALLS} calls)",
          rows)
    for label in labels:
        print(f"  {label}: raider_sync from {results[label][0]['raider_sync']}")
    print(f"  (CPU: the whole process's, every thread; ownwork leg took "
          f"{time.monotonic() - started:.1f} s, {load_note()})")
    if common.PROFILE:
        for label in labels:
            print_profile(label, profiles[label])


if __name__ == "__main__":
    if sys.argv[1:2] == ["child"]:
        print(json.dumps(child(int(sys.argv[2]), int(sys.argv[3]))))
    else:
        main()
