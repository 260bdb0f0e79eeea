"""A soak: stdio servers SIGKILLed, SIGSTOPped and resumed while 8 threads call them.

Short by default (RAIDER_SOAK_SECONDS, 12 s); set it higher for a longer run, e.g.
``RAIDER_SOAK_SECONDS=600 pytest tests/client/test_soak.py``. It asserts that no call outlives
its timeout by more than a small margin, that every failure is a RaiderError, and that
threads, file descriptors and child processes come back to their starting counts.
"""
from __future__ import annotations

import os
import random
import signal
import sys
import threading
import time

import pytest

from raider_sync import McpHub, RaiderError

from conftest import FAKE_SERVER, SDK_SERVER, _children, _fds, config_of, poll

SECONDS = float(os.environ.get("RAIDER_SOAK_SECONDS", "12"))
CALL_TIMEOUT = 1.5
#: what a call may take beyond its timeout: the watchdog's wake-up on a loaded machine
MARGIN = 1.5
THREADS = 8


@pytest.mark.allow_leaks  # counted here, with the margin a soak needs
def test_calls_survive_servers_killed_stopped_and_resumed():
    threads_before = threading.active_count()
    fds_before = len(_fds())
    children_before = len(_children())
    restart = {"maxRestarts": 100000, "backoffMs": 50, "maxBackoffMs": 200}
    config = config_of({
        "one": {"command": sys.executable, "args": [FAKE_SERVER, "plain"], "restart": restart},
        "two": {"command": sys.executable, "args": [FAKE_SERVER, "chatty"], "restart": restart},
        "sdk": {"command": sys.executable, "args": [SDK_SERVER, "stdio"], "restart": restart},
    })
    names = ["mcp__one__echo", "mcp__two__echo", "mcp__sdk__echo"]
    outcomes = {"ok": 0, "failed": 0}
    problems: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()
    hub = McpHub(config, kill_grace=0.2, startup_timeout_ms=30000)
    try:
        hub.start(90)
        assert set(hub.statuses().values()) == {"connected"}, hub.statuses()

        def caller(n: int) -> None:
            rng = random.Random(n)
            while not stop.is_set():
                name = rng.choice(names)
                began = time.monotonic()
                try:
                    hub.call_tool(name, {"message": f"{n}"}, timeout=CALL_TIMEOUT)
                    kind = "ok"
                except RaiderError:
                    kind = "failed"
                except BaseException as exc:  # noqa: BLE001 - reported below
                    with lock:
                        problems.append(f"{name}: {type(exc).__name__}: {exc}")
                    kind = "failed"
                took = time.monotonic() - began
                with lock:
                    outcomes[kind] += 1
                    if took > CALL_TIMEOUT + MARGIN:
                        problems.append(f"{name} took {took:.2f} s")

        def chaos() -> None:
            rng = random.Random(7)
            stopped: list[int] = []
            while not stop.wait(rng.uniform(0.2, 0.8)):
                server = rng.choice(hub.clients)
                pid = server.pid
                if pid is None:
                    continue
                action = rng.choice(["kill", "stop", "resume"])
                try:
                    if action == "kill":
                        os.killpg(pid, signal.SIGKILL)
                    elif action == "stop":
                        os.killpg(pid, signal.SIGSTOP)
                        stopped.append(pid)
                    elif stopped:
                        os.killpg(stopped.pop(0), signal.SIGCONT)
                except ProcessLookupError:
                    pass
            for pid in stopped:
                try:
                    os.killpg(pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass

        workers = [threading.Thread(target=caller, args=(n,), name=f"soak-caller-{n}")
                   for n in range(THREADS)]
        workers.append(threading.Thread(target=chaos, name="soak-chaos"))
        for worker in workers:
            worker.start()
        stop.wait(SECONDS)
        stop.set()
        for worker in workers:
            worker.join(CALL_TIMEOUT + MARGIN + 30)
        assert not [w.name for w in workers if w.is_alive()]
    finally:
        stop.set()
        hub.stop()
    print(f"soak: {SECONDS:g} s, {outcomes}")  # shown with -s
    assert not problems, problems[:10]
    assert outcomes["ok"] > 0, outcomes
    poll(lambda: threading.active_count() <= threads_before, 10, "threads back to the start")
    poll(lambda: len(_children()) <= children_before, 10, "child processes back to the start")
    poll(lambda: len(_fds()) <= fds_before, 10, "file descriptors back to the start")
