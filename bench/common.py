"""Timing helpers and the servers the benchmarks run against."""
from __future__ import annotations

import asyncio
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEERS = os.path.join(ROOT, "tests", "peers")
SDK_SERVER = os.path.join(PEERS, "sdk_server.py")
EVERYTHING_JS = os.path.join(PEERS, "node_modules", "@modelcontextprotocol", "server-everything",
                             "dist", "index.js")
BENCH = os.path.dirname(os.path.abspath(__file__))
SIZED_SERVER = os.path.join(BENCH, "sized_server.py")
TINY_SERVER = os.path.join(BENCH, "tiny_server.cjs")
QUICK = False  # python -m bench --quick: one round where a leg would take three
PROFILE = False  # python -m bench --profile: legs that can say where their time goes do


def stdio_servers() -> list[tuple[str, list[str]]]:
    """(label, command line) of the stdio servers both clients are measured against."""
    servers = [("sdk-server (python)", [sys.executable, SDK_SERVER, "stdio"])]
    if os.path.exists(EVERYTHING_JS):
        servers.insert(0, ("server-everything (node)", ["node", EVERYTHING_JS, "stdio"]))
    return servers


def timed(fn, repeat: int) -> list[float]:
    """Seconds each of ``repeat`` calls of ``fn()`` took."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return times


def p50(samples: list[float]) -> float:
    return statistics.median(samples)


def rounds(full: int = 3) -> int:
    """How many rounds a leg runs: ``full``, or one with ``--quick``."""
    return 1 if QUICK else full


def rotated(ways: dict[str, Callable[[], Any]], count: int) -> dict[str, Any]:
    """Run every way once per round, ``count`` rounds, each round starting one way further
    along (so no way always runs first, or right after the same neighbour); the median of
    each way's figures over the rounds. A way returns a number, or a tuple of numbers (each
    place gets its own median)."""
    names = list(ways)
    figures: dict[str, list] = {name: [] for name in names}
    for round_ in range(count):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            figures[name].append(ways[name]())
    return {name: tuple(map(statistics.median, zip(*values, strict=True)))
            if isinstance(values[0], tuple) else statistics.median(values)
            for name, values in figures.items()}


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.3f} ms"


def ratio(ours: float, theirs: float) -> str:
    return f"{ours / theirs:5.2f}x" if theirs else "  n/a"


def mb(size: float) -> str:
    return f"{size / 2**20:8.2f} MB"


def table(title: str, rows: list[tuple[str, ...]]) -> None:
    """Print rows as an aligned table under a title."""
    print(f"\n== {title}")
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  " + "  ".join(str(cell).ljust(w) for cell, w in zip(row, widths, strict=True)))


def measure_rows(first: str, results: dict[str, dict[str, tuple]], clients: tuple[str, ...],
                 measures: list[tuple[str, Callable[[float], str]]]) -> list[tuple[str, ...]]:
    """The rows of a table with a block per group (``results``: group label -> client ->
    one figure per measure) and a row per measure: each client's figure formatted, and after
    every client but raider_sync the ratio raider_sync / it. ``first`` heads the group
    column."""
    header = [first, "measure"]
    for client in clients:
        header += [client] if client == "raider_sync" else [client, "ratio"]
    rows = [tuple(header)]
    for group, figures in results.items():
        for index, (name, fmt) in enumerate(measures):
            row = [group if index == 0 else "", name]
            for client in clients:
                value = figures[client][index]
                row.append(fmt(value))
                if client != "raider_sync":
                    row.append(ratio(figures["raider_sync"][index], value))
            rows.append(tuple(row))
    return rows


def free_port() -> int:
    """A TCP port that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_listening(command: list[str], port: int, env: dict | None = None,
                    timeout: float = 60.0) -> subprocess.Popen:
    """Start a server process and wait (bounded) until it listens on ``port``."""
    proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env={**os.environ, **(env or {})})
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"{command[:3]} exited with {proc.returncode}")
            with socket.socket() as sock:
                sock.settimeout(0.2)
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    return proc
            if time.monotonic() > deadline:
                raise TimeoutError(f"nothing listened on port {port} within {timeout} s")
            time.sleep(0.05)
    except BaseException:
        stop_process(proc)
        raise


def stop_process(proc: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL after 10 s; reaped either way."""
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


# -- the client process: memory and threads ------------------------------------------------

_highest_seen = 0


def peak_rss() -> int:
    """Bytes: the highest resident set size of this process's memory so far (``VmHWM``).
    Not ``ru_maxrss``: Linux carries that across fork and exec, so a child of a big parent
    starts with the parent's peak and a smaller growth of its own never shows. The kernel
    updates the mark lazily (pages given back by madvise do not raise it first), so it can
    read lower than it did before: the highest reading so far is returned."""
    global _highest_seen
    try:
        now = status_field("VmHWM")
    except (OSError, KeyError):  # no /proc: the peak as getrusage has it (KiB on Linux)
        now = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    _highest_seen = max(_highest_seen, now)
    return _highest_seen


def status_field(name: str) -> int:
    """A number from /proc/self/status (``VmRSS`` in bytes, ``Threads`` as a count): what
    the kernel counts, native threads included."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(name + ":"):
                value = int(line.split()[1])
                return value * 1024 if line.rstrip().endswith("kB") else value
    raise KeyError(name)


#: ``python -c`` code that runs a bench module (argv: checkout, module, its args) with the
#: raider_sync of another checkout: that checkout's package is imported first, so that this
#: checkout's ``bench`` (put ahead of it next) does not bring its own raider_sync along
_RUN_WITH = ("import runpy, sys; root, module = sys.argv[1:3]; sys.path.insert(0, root); "
             "import raider_sync; sys.path.insert(0, {bench!r}); "
             "sys.argv = [module, *sys.argv[3:]]; runpy.run_module(module, run_name='__main__',"
             " alter_sys=True)")


def run_child(module: str, args: list[str], timeout: float = 120.0,
              raider_root: str | None = None) -> dict:
    """Run ``python -m MODULE ARGS`` in a fresh process (so its peaks are its own) and
    return the JSON object it prints last; with ``raider_root``, the raider_sync it imports
    is that checkout's (the benchmark's code stays this one's). Raises RuntimeError with its
    stderr if it fails, subprocess.TimeoutExpired (after killing it) if it takes longer than
    ``timeout`` s."""
    command = [sys.executable, "-m", module, *args]
    if raider_root is not None:
        command = [sys.executable, "-c", _RUN_WITH.format(bench=ROOT), raider_root, module,
                   *args]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{module} {' '.join(args)} failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def code_roots() -> list[tuple[str, str]]:
    """(label, checkout) of the raider_sync versions a leg compares: this checkout's, and
    the one named by RAIDER_SYNC_BENCH_OLD (a checkout or worktree of an older commit), if
    set. A label is the commit's short hash (with " (old)" for the second when both are at
    the same commit)."""
    roots = [ROOT]
    old = os.environ.get("RAIDER_SYNC_BENCH_OLD")
    if old:
        if not os.path.isfile(os.path.join(old, "raider_sync", "__init__.py")):
            raise RuntimeError(f"RAIDER_SYNC_BENCH_OLD={old!r} holds no raider_sync package")
        roots.append(os.path.abspath(old))
    labels = [commit_of(root) for root in roots]
    if len(labels) == 2 and labels[0] == labels[1]:  # the same commit twice: still two columns
        labels[1] += " (old)"
    return list(zip(labels, roots, strict=True))


def commit_of(root: str) -> str:
    """The short hash of the commit checked out at ``root`` (``+`` when its raider_sync has
    changes not committed), or ``?`` when git cannot tell."""
    try:
        head = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=30).stdout.strip()
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no",
                                "--", "raider_sync"],
                               capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return (head or "?") + ("+" if dirty else "")


def load_note() -> str:
    """The load average of the last minute and the cores, to print beside timings."""
    return f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"


class LoopThread:
    """An event loop in a thread, for async clients driven from the benchmark's sync code:
    :meth:`run` blocks (at most ``timeout`` s) on a coroutine run in the loop."""

    def __init__(self, name: str = "bench-loop"):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name=name)
        self.thread.start()

    def run(self, coro, timeout: float = 120.0):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)
        self.loop.close()


def released_together(callers: int, work: Callable[[], Any], name: str = "bench-caller"
                      ) -> float:
    """Run ``work()`` on ``callers`` threads released at the same instant (a barrier);
    the seconds from the release until the last one ended."""
    barrier = threading.Barrier(callers + 1)

    def caller() -> None:
        barrier.wait()
        work()

    threads = [threading.Thread(target=caller, name=f"{name}-{i}") for i in range(callers)]
    for thread in threads:
        thread.start()
    barrier.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    return time.perf_counter() - started
