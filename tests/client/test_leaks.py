"""Nothing outlives its owner: threads, processes and pipes of a server end with it, and the
suite's leak guard (tests/conftest.py) catches a test that leaves any behind."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import threading
import time

import psutil
import pytest

from raider_sync import ConnectionClosed, McpServer

from conftest import FAKE_SERVER, HERE, fake_spec
from conftest import poll as _poll

WAIT = 10.0


def poll(predicate, timeout: float = WAIT, what: str = "condition"):
    return _poll(predicate, timeout, what)


def threads_of(key: str) -> list[str]:
    return sorted(t.name for t in threading.enumerate() if t.name.startswith(f"raider-{key}-"))


def fake_children() -> list[psutil.Process]:
    found = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if FAKE_SERVER in proc.cmdline():
                found.append(proc)
        except psutil.Error:
            pass
    return found


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.parametrize("mode, action", [
    ("plain", "stop"), ("plain", "kill_now"), ("plain", "stop_f"), ("garbage", "stop"),
    ("ignore-term", "stop"), ("grandchild", "stop"), ("batch", "stop"),
])
def test_stop_joins_every_thread_and_closes_every_pipe(mode, action):
    fds = open_fds()
    server = McpServer(fake_spec(mode, name=f"leak-{mode}"), kill_grace=0.2)
    server.start_f().result(WAIT)
    assert server.status == "connected"
    server.call_tool(f"mcp__leak-{mode}__echo", {"message": "x"})
    assert threads_of(server.key), "the server runs threads named after it"
    if action == "stop_f":
        server.stop_f().result(WAIT)
        poll(lambda: not threads_of(server.key), what="the stop thread ending")
    else:
        getattr(server, action)()
        assert threads_of(server.key) == [], "stop() returns after joining its threads"
    assert fake_children() == []
    assert open_fds() == fds


@pytest.mark.parametrize("mode", ["silent", "stateless", "future"])
def test_a_failed_start_leaves_nothing_running_even_without_stop(mode):
    fds = open_fds()
    server = McpServer(fake_spec(mode, name=f"failed-{mode}"), startup_timeout_ms=300,
                       kill_grace=0.2)
    server.start_f().result(WAIT)
    assert server.status == "failed"
    assert fake_children() == []
    poll(lambda: not threads_of(server.key), what="the start thread ending")
    assert open_fds() == fds
    server.stop()


def test_a_crashed_server_leaves_nothing_running_even_without_stop():
    fds = open_fds()
    server = McpServer(fake_spec("plain", name="crashing"), kill_grace=0.2)
    server.start_f().result(WAIT)
    with pytest.raises(ConnectionClosed):
        server.call_tool("mcp__crashing__crash", {})
    poll(lambda: server.status == "failed", what="status failed")
    poll(lambda: not threads_of(server.key), what="threads ending")
    assert fake_children() == []
    assert open_fds() == fds
    server.stop()


def test_a_server_started_many_times_does_not_accumulate_anything():
    fds = open_fds()
    threads = threading.active_count()
    for i in range(5):
        with McpServer(fake_spec("plain", name=f"again{i}"), kill_grace=0.2) as server:
            server.call_tool(f"mcp__again{i}__echo", {"message": "x"})
    assert open_fds() == fds
    assert threading.active_count() == threads


def test_a_forgotten_server_is_killed_when_python_exits(tmp_path):
    script = tmp_path / "forget.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {HERE!r})
        from conftest import fake_spec
        from raider_sync import McpServer
        server = McpServer(fake_spec("ignore-term"), kill_grace=30)
        server.start_f().result(10)
        print(server.status, server.pid, flush=True)
    """))
    started = time.monotonic()
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=WAIT * 2, cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr
    status, pid = done.stdout.split()
    assert status == "connected"
    assert time.monotonic() - started < WAIT, "the exit does not wait for kill_grace"
    assert poll(lambda: not psutil.pid_exists(int(pid))
                or psutil.Process(int(pid)).status() == psutil.STATUS_ZOMBIE,
                timeout=5, what="the forgotten server gone")


INNER_TEST = '''
import subprocess
import threading


def test_leaks_a_thread_and_a_process():
    stop = threading.Event()
    threading.Thread(target=stop.wait, args=(30,), name="inner-leaked-thread",
                     daemon=True).start()
    subprocess.Popen(["sleep", "30"])


def test_leaks_nothing():
    threading.Thread(target=lambda: None, name="inner-short-thread").start()
'''


def test_the_leak_guard_fails_a_test_that_leaks(tmp_path):
    shutil.copy(os.path.join(HERE, "conftest.py"), tmp_path / "conftest.py")
    (tmp_path / "test_inner.py").write_text(INNER_TEST)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "no:xdist", "-p", "no:randomly", str(tmp_path)],
                          capture_output=True, text=True, timeout=60, cwd=str(tmp_path))
    out = done.stdout
    assert done.returncode == 1, out
    assert "2 passed, 1 error" in out   # the guard fails the leaking test in its teardown
    assert "ERROR test_inner.py::test_leaks_a_thread_and_a_process" in out
    assert "leak: threads left running: ['inner-leaked-thread']" in out
    assert "child processes left" in out and "sleep 30" in out
