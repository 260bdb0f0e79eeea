"""Timing helpers and the servers the benchmarks run against."""
from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEERS = os.path.join(ROOT, "tests", "peers")
SDK_SERVER = os.path.join(PEERS, "sdk_server.py")
EVERYTHING_JS = os.path.join(PEERS, "node_modules", "@modelcontextprotocol", "server-everything",
                             "dist", "index.js")


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


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.3f} ms"


def ratio(ours: float, theirs: float) -> str:
    return f"{ours / theirs:5.2f}x" if theirs else "  n/a"


def table(title: str, rows: list[tuple[str, ...]]) -> None:
    """Print rows as an aligned table under a title."""
    print(f"\n== {title}")
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  " + "  ".join(str(cell).ljust(w) for cell, w in zip(row, widths, strict=True)))


def free_port() -> int:
    """A TCP port that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_listening(command: list[str], port: int, env: dict | None = None,
                    timeout: float = 30.0) -> subprocess.Popen:
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
