"""The gateway's upstream pool: ``raider_sync.gateway.upstream`` (connections in a pool of its
own, the answers read by httptools' C parser, or by ``http.client`` without it) against the same
interface built on ``urllib3.PoolManager`` (:mod:`bench.upstream_urllib3`), sending what the relay
sends to a real MCP server.

    python -m bench.bench_upstream [--quick] [--profile]

The official SDK's server under uvicorn (``tests/peers/sdk_server.py streamable-http``), once
answering ``tools/call`` with a JSON body and once with an event stream (read as the relay reads
it: a JSON body whole, a stream with ``chunks(64 KiB)``). Per client and answer mode: the p50 and
p90 of one caller's sequential calls, calls per second with 16 threads sharing the client, and
the CPU this process spends per call in each (``time.process_time`` around the loop: the
client's own cost, which the server's does not blur). Rounds interleaved, each starting one
client further along; every figure is the median over the rounds.

Clients: ``http.client pool`` (``Upstream(parser="http.client")``, the pool without httptools),
``httptools pool`` (``Upstream(parser="httptools")``, the gateway extra's default), ``urllib3
PoolManager`` (``urlopen`` per request) and ``urllib3, pool per origin`` (the origin's
``HTTPConnectionPool`` looked up once: urllib3 at its cheapest). All send the same headers, with
no retries, redirects or decoding. ``--profile``: where each client's CPU goes in a JSON
exchange (cProfile's top functions by own time, and by module), and, where valgrind is
installed, the instructions each executes per exchange (callgrind).
"""
from __future__ import annotations

import cProfile
import itertools
import json
import os
import pstats
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable

from raider_sync.gateway.upstream import Upstream, upstream_wire

from . import common
from .common import SDK_SERVER, free_port, ms, start_listening, stop_process, table
from .upstream_urllib3 import Upstream as Urllib3Upstream

VERSION = "2025-06-18"
WARMUP = 30
CALLS = 200
COUNTED = 20  # calls profiled to count the Python function calls each makes
THREADS = 16
CALLS_PER_THREAD = 25
ROUNDS = 5
CHUNK = 64 * 1024  # what the relay reads a stream with
TIMEOUTS = {"connect": 10.0, "read": 30.0}
# a call's id must be unique among those in flight in the session
CALL = (b'{"jsonrpc": "2.0", "id": %d, "method": "tools/call", '
        b'"params": {"name": "echo", "arguments": {"message": "hello"}}}')
_ids = itertools.count(1)
PROFILED = 500  # JSON exchanges under cProfile for --profile
CALLGRIND_FEW, CALLGRIND_MANY = 20, 220  # JSON exchanges of the two runs under valgrind
CLIENTS: dict[str, Callable[[], object]] = {
    "http.client pool": lambda: Upstream(THREADS, parser="http.client"),
    "httptools pool": lambda: Upstream(THREADS, parser="httptools"),
    "urllib3 PoolManager": lambda: Urllib3Upstream(THREADS),
    "urllib3, pool per origin": lambda: Urllib3Upstream(THREADS, reuse_pool=True),
}
if upstream_wire is None:  # httptools not installed: the pool reads with http.client alone
    del CLIENTS["httptools pool"]


def exchange(pool, url: str, headers: dict[str, str], body: bytes | None) -> tuple[int, dict, bytes]:
    """One request as the relay makes it: status, headers, and the body read as it would."""
    answer = pool.send("POST", url, dict(headers), body, **TIMEOUTS)
    try:
        if answer.content_type and answer.content_type.startswith("text/event-stream"):
            data = b"".join(answer.chunks(CHUNK))
        else:
            data = answer.read()
    finally:
        answer.close()
    return answer.status, dict(answer.headers), data


def session(url: str) -> dict[str, str]:
    """The headers of an initialized MCP session at ``url`` (as the relay sends them)."""
    headers = {"Accept": "application/json, text/event-stream",
               "Content-Type": "application/json",
               "User-Agent": "raider-sync-gateway", "Accept-Encoding": "identity"}
    pool = Upstream(1)
    try:
        status, got, _ = exchange(pool, url, headers, json.dumps({
            "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": VERSION, "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"}}}).encode())
        sid = {k.lower(): v for k, v in got.items()}["mcp-session-id"]
        headers.update({"Mcp-Session-Id": sid, "Mcp-Protocol-Version": VERSION})
        status, _, _ = exchange(pool, url, headers, json.dumps(
            {"jsonrpc": "2.0", "method": "notifications/initialized"}).encode())
        assert status == 202, status
    finally:
        pool.close()
    return headers


def call(pool, url: str, headers: dict[str, str]) -> None:
    status, _, data = exchange(pool, url, headers, CALL % next(_ids))
    if status != 200 or b"hello" not in data:
        raise RuntimeError(f"tool call failed: {status} {data[:200]!r}")


def single(make, url: str, headers: dict[str, str]) -> tuple[float, float, float, float]:
    """p50 and p90 seconds of one caller's sequential calls, CPU seconds per call, and Python
    function calls per call (counted apart, untimed: a figure the machine's load cannot
    move)."""
    pool = make()
    try:
        for _ in range(WARMUP):
            call(pool, url, headers)
        times = []
        cpu = time.process_time()
        for _ in range(CALLS):
            started = time.perf_counter()
            call(pool, url, headers)
            times.append(time.perf_counter() - started)
        cpu = time.process_time() - cpu
        profile = cProfile.Profile()
        profile.runcall(lambda: [call(pool, url, headers) for _ in range(COUNTED)])
        steps = pstats.Stats(profile).total_calls / COUNTED
    finally:
        pool.close()
    deciles = statistics.quantiles(times, n=10)
    return statistics.median(times), deciles[8], cpu / CALLS, steps


def threaded(make, url: str, headers: dict[str, str]) -> tuple[float, float]:
    """Calls per second with THREADS threads sharing one client, and CPU seconds per call."""
    pool = make()
    barrier = threading.Barrier(THREADS + 1)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            call(pool, url, headers)  # each thread's connection opened before the clock
            barrier.wait(60)
            for _ in range(CALLS_PER_THREAD):
                call(pool, url, headers)
        except BaseException as exc:  # reported below; a broken barrier frees the others
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=run, name=f"bench-upstream-{i}") for i in range(THREADS)]
    try:
        for thread in threads:
            thread.start()
        try:
            barrier.wait(60)
        except threading.BrokenBarrierError:
            pass  # a thread failed: its error is raised below
        started, cpu = time.perf_counter(), time.process_time()
        for thread in threads:
            thread.join(120)
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    finally:
        pool.close()
    if errors:
        raise errors[0]
    calls = THREADS * CALLS_PER_THREAD
    return calls / elapsed, cpu / calls


def measure(mode: str, url: str, rounds: int) -> dict[str, tuple[float, ...]]:
    headers = session(url)
    ways = {name: (lambda make=make: single(make, url, headers) + threaded(make, url, headers))
            for name, make in CLIENTS.items()}
    return common.rotated(ways, rounds)


def profile(url: str) -> None:
    """Print where each client's CPU goes over PROFILED JSON exchanges: the functions with
    the most own CPU time, and the CPU per module (cProfile's own times, so a module's share
    is its code's, not its callees'; profiling inflates the many small calls)."""
    headers = session(url)
    for name, make in CLIENTS.items():
        pool = make()
        try:
            for _ in range(WARMUP):
                call(pool, url, headers)
            # timed by CPU: a recv() waiting for the server is not this client's cost
            profiler = cProfile.Profile(time.process_time)
            profiler.runcall(lambda pool=pool: [call(pool, url, headers) for _ in range(PROFILED)])
        finally:
            pool.close()
        stats = pstats.Stats(profiler)
        rows = sorted(stats.stats.items(), key=lambda item: -item[1][2])  # type: ignore[attr-defined]
        total = sum(row[1][2] for row in rows)
        print(f"\n  {name}: {stats.total_calls / PROFILED:.0f} Python calls and "
              f"{total / PROFILED * 1e6:.0f} us of profiled CPU per exchange; top by own CPU:")
        for (path, line, func), (_, calls, own, _, _) in rows[:8]:
            print(f"    {own / total:6.1%}  {calls / PROFILED:6.1f}/exchange  "
                  f"{os.path.basename(path)}:{line}({func})")
        modules: dict[str, float] = {}
        for (path, _, func), (_, _, own, _, _) in rows:
            key = _module(path, func)
            modules[key] = modules.get(key, 0.0) + own
        print("    by module: " + ", ".join(
            f"{key} {own / total:.0%}" for key, own in
            sorted(modules.items(), key=lambda item: -item[1])[:6]))


def instructions(url: str) -> None:
    """Print the instructions each client executes per JSON exchange, counted by callgrind
    (valgrind): a figure the machine's load cannot move. Each client runs in a child under
    valgrind twice, for CALLGRIND_FEW and CALLGRIND_MANY exchanges; the difference, divided,
    leaves out the start-up. User-space instructions only: the system calls (about the same
    for every client) are not counted."""
    counts: dict[str, float] = {}
    for name in CLIENTS:
        collected = []
        for calls in (CALLGRIND_FEW, CALLGRIND_MANY):
            done = subprocess.run(
                ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
                 "-m", "bench.bench_upstream", "child", url, name, str(calls)],
                capture_output=True, text=True, timeout=600, cwd=common.ROOT, check=True)
            found = re.search(r"Collected : (\d+)", done.stderr)
            if found is None:
                raise RuntimeError(f"callgrind printed no count: {done.stderr[-500:]}")
            collected.append(int(found.group(1)))
        counts[name] = (collected[1] - collected[0]) / (CALLGRIND_MANY - CALLGRIND_FEW)
    base = counts["http.client pool"]
    print("\n  instructions per JSON exchange (callgrind, user space):")
    for name, count in counts.items():
        print(f"    {name:26} {count:10,.0f}   {count / base:5.2f}x")


def child(url: str, name: str, calls: int) -> None:
    """``calls`` JSON exchanges through client ``name`` (run under valgrind)."""
    headers = session(url)
    pool = CLIENTS[name]()
    try:
        for _ in range(calls):
            call(pool, url, headers)
    finally:
        pool.close()  # type: ignore[attr-defined]


def _module(path: str, func: str) -> str:
    """A short name for where a profiled function lives."""
    if path == "~":  # a builtin: {method 'recv' of '_socket.socket' objects}
        return "socket I/O" if any(word in func for word in ("recv", "send", "poll")) \
            else "builtins"
    parts = path.replace(os.sep, "/").split("/")
    for anchor in ("raider_sync", "urllib3", "http", "email", "bench"):
        if anchor in parts:
            index = parts.index(anchor)
            return "/".join(parts[index:index + 2]).removesuffix(".py")
    return parts[-1].removesuffix(".py")


def report(mode: str, figures: dict[str, tuple[float, ...]], rounds: int) -> None:
    base = figures["http.client pool"]
    rows = [("client", "p50, 1 caller", "p90", "CPU/call", f"calls/s, {THREADS} threads",
             "CPU/call", "Python calls/call", "vs http.client: p50", "CPU/call (1 / 16)",
             "calls/s")]
    for name, (lat, p90, cpu1, steps, rate, cpu16) in figures.items():
        rows.append((name, ms(lat), ms(p90), ms(cpu1), f"{rate:8.0f}", ms(cpu16), f"{steps:6.0f}",
                     f"{lat / base[0]:5.2f}x", f"{cpu1 / base[2]:5.2f}x / {cpu16 / base[5]:5.2f}x",
                     f"{rate / base[4]:5.2f}x"))
    table(f"gateway upstream pool: SDK server, {mode} answers (median of {rounds} interleaved "
          f"rounds)", rows)


def main() -> None:
    rounds = common.rounds(ROUNDS)
    started = time.monotonic()
    for mode, flags in (("JSON", ["--json"]), ("SSE", [])):
        port = free_port()
        server = start_listening([sys.executable, SDK_SERVER, "streamable-http", str(port),
                                  *flags], port)
        try:
            report(mode, measure(mode, f"http://127.0.0.1:{port}/mcp", rounds), rounds)
            if common.PROFILE and mode == "JSON":
                profile(f"http://127.0.0.1:{port}/mcp")
                if shutil.which("valgrind"):
                    instructions(f"http://127.0.0.1:{port}/mcp")
        finally:
            stop_process(server)
    print(f"  measured in {time.monotonic() - started:.1f} s (load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")


if __name__ == "__main__":
    if sys.argv[1:2] == ["child"]:
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        sys.exit(0)
    if "--quick" in sys.argv[1:]:
        common.QUICK = True
    if "--profile" in sys.argv[1:]:
        common.PROFILE = True
    main()
