"""Shared fixtures: real peers, free ports, and a guard that fails any test that leaks.

The leak guard snapshots threads, child processes and file descriptors after the
session-scoped fixtures are up (pytest sets up wider scopes first) and checks them after the
test's own fixtures are torn down, allowing a bounded moment for threads to finish exiting.
One thread is shared by design and owned by no test: the process's timer (``raider-timer``,
see raider_sync/timer.py), which holds no resource and ends by itself once idle;
tests/threads/test_threads.py checks that it does.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
import time
from typing import NoReturn

import psutil
import pytest

from raider_sync import McpConfig
from raider_sync.client.eras import verdicts
from raider_sync.threads import timer

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = os.path.join(HERE, "peers")
FAKES = os.path.join(HERE, "fakes")
EVERYTHING_JS = os.path.join(PEERS, "node_modules", "@modelcontextprotocol", "server-everything",
                             "dist", "index.js")
SDK_SERVER = os.path.join(PEERS, "sdk_server.py")
FASTMCP_SERVER = os.path.join(PEERS, "fastmcp_server.py")
FASTMCP_TASKS_SERVER = os.path.join(PEERS, "fastmcp_tasks_server.py")
FAKE_SERVER = os.path.join(FAKES, "fake_server.py")
LEAK_GRACE_SECONDS = 5.0


def free_port() -> int:
    """A TCP port that was free a moment ago (bind to port 0, read it, close)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, timeout: float = 20.0, proc=None) -> None:
    """Poll until something listens on ``port`` (bounded); fail early if ``proc`` died."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before listening")
        with socket.socket() as sock:
            sock.settimeout(0.2)
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listened on port {port} within {timeout} s")


def poll(predicate, timeout: float = 10.0, what: str = "condition"):
    """Wait (bounded) until ``predicate()`` is true; return its value. Raises AssertionError
    naming ``what`` when ``timeout`` seconds pass first."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {timeout} s")
        time.sleep(0.02)  # a bounded poll, not a synchronisation sleep


def answers_from_threads(count: int, calls: int, call, timeout: float = 60.0) -> dict[str, str]:
    """``call(message)`` made ``calls`` times from each of ``count`` threads at once; the
    answers by message. Raises the first error a thread met; every thread is joined (bounded)."""
    answers: dict[str, str] = {}
    errors: list[BaseException] = []

    def caller(n: int) -> None:
        try:
            for i in range(calls):
                message = f"thread {n} call {i}"
                answers[message] = call(message)
        except Exception as exc:  # noqa: BLE001 - raised below, on the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=caller, args=(n,), name=f"test-caller-{n}")
               for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    if errors:
        raise errors[0]
    return answers


def run_script(body: str, timeout: float = 90) -> dict:
    """Run ``body`` in a fresh interpreter (a SIGINT there is the user's Ctrl-C); its last
    stdout line, as JSON."""
    script = textwrap.dedent(f"""
        import json, os, signal, sys, threading, time
        sys.path.insert(0, {HERE!r})
        from conftest import config_of, fake_spec, poll
        from raider_sync import McpHub, McpServer
        SDK = {{"command": sys.executable, "args": [{SDK_SERVER!r}, "stdio"]}}
        SILENT = {{"command": sys.executable, "args": [{FAKE_SERVER!r}, "silent"]}}
        # Ctrl-C raises, even when this process was started with SIGINT ignored (as a shell
        # without job control starts its background jobs)
        signal.signal(signal.SIGINT, signal.default_int_handler)

        def interrupt_when(predicate):
            # the user's Ctrl-C, once the main thread waits where the test wants it
            def run():
                poll(predicate, 30, "the moment to interrupt")
                signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
            thread = threading.Thread(target=run)
            thread.start()
            return thread
    """) + textwrap.dedent(body)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=timeout, cwd=HERE)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def everything_available() -> bool:
    return os.path.exists(EVERYTHING_JS) and shutil.which("node") is not None


def config_of(servers: dict, **kw) -> McpConfig:
    return McpConfig.from_dict({"mcpServers": servers}, **kw)


def missing_peer(message: str) -> NoReturn:
    """A real peer is not installed: skip the test, or fail it under CI, which must have
    every peer."""
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def everything_js() -> str:
    """Path of server-everything's entry point; CI must have it (make peers)."""
    if not everything_available():
        missing_peer("server-everything is not installed: run `make peers`")
    return EVERYTHING_JS


@pytest.fixture
def everything_spec(everything_js):
    return config_of({"everything": {"command": "node", "args": [everything_js, "stdio"]}}
                     ).server("everything")


@pytest.fixture
def sdk_spec():
    return config_of({"sdk": {"command": sys.executable, "args": [SDK_SERVER, "stdio"]}}
                     ).server("sdk")


def fake_spec(mode: str, name: str = "fake", **extra):
    """A spec for tests/fakes/fake_server.py in ``mode`` (see that file)."""
    entry = {"command": sys.executable, "args": [FAKE_SERVER, mode], **extra}
    return config_of({name: entry}).server(name)


def _children() -> list[psutil.Process]:
    for _ in range(5):
        try:
            return psutil.Process().children(recursive=True)
        except psutil.Error:
            return []
        except (IndexError, ValueError):  # psutil parsed a /proc stat file read torn: read again
            continue
    return psutil.Process().children(recursive=True)


def _fds() -> set[str]:
    try:
        return set(os.listdir("/proc/self/fd"))
    except OSError:
        return set()


@pytest.fixture(scope="session", autouse=True)
def session_era_cache(tmp_path_factory):
    """Era verdicts of servers that session- and module-scoped fixtures start are kept in
    this session's temporary folder, never in the user's cache folder."""
    patch = pytest.MonkeyPatch()
    patch.setenv(verdicts.ENV, str(tmp_path_factory.mktemp("era-cache")))
    yield
    patch.undo()


@pytest.fixture(autouse=True)
def era_cache(tmp_path_factory, monkeypatch):
    """Every test keeps the era verdicts of ``protocol: auto`` (raider_sync.client.eras.verdicts)
    in a folder of its own, which the processes it starts inherit: a verdict one test left
    must not decide how another's server starts. The folder, for tests that look in it."""
    folder = tmp_path_factory.mktemp("era-cache")
    monkeypatch.setenv(verdicts.ENV, str(folder))
    return folder


@pytest.fixture(autouse=True)
def no_leaks(request):
    """Fail a test that leaves a thread, a child process or a file descriptor behind."""
    if request.node.get_closest_marker("allow_leaks"):
        yield
        return
    threads = set(threading.enumerate())
    children = {p.pid for p in _children()}
    fds = _fds()
    yield
    deadline = time.monotonic() + LEAK_GRACE_SECONDS
    while True:
        new_threads = [t for t in threading.enumerate() if t not in threads and t.is_alive()
                       and t.name != timer.THREAD_NAME]
        new_children = [p for p in _children() if p.pid not in children]
        new_fds = _fds() - fds
        if not (new_threads or new_children or new_fds) or time.monotonic() > deadline:
            break
        time.sleep(0.05)  # a bounded poll while exiting threads finish
    problems = []
    if new_threads:
        problems.append(f"threads left running: {sorted(t.name for t in new_threads)}")
    if new_children:
        described = []
        for p in new_children:
            try:
                described.append(f"{p.pid} {p.status()} {' '.join(p.cmdline())[:80]}")
            except psutil.Error:
                described.append(str(p.pid))
        for p in new_children:  # do not let one leak fail every later test too
            try:
                p.kill()
            except psutil.Error:
                pass
        problems.append(f"child processes left: {described}")
    if new_fds:
        targets = []
        for fd in sorted(new_fds):
            try:
                targets.append(f"{fd}->{os.readlink(f'/proc/self/fd/{fd}')}")
            except OSError:
                pass
        if targets:
            problems.append(f"file descriptors left open: {targets}")
    if problems:
        pytest.fail("leak: " + "; ".join(problems), pytrace=False)


@pytest.fixture(scope="session")
def conformance_runs(tmp_path_factory):
    """The conformance harness's runs (tests/conformance/harness.py), each executed on first
    use in this worker and kept: ``conformance_runs(name)`` is its outcome."""
    from conformance.harness import Runs
    return Runs(tmp_path_factory)


def pytest_configure(config):
    config.addinivalue_line("markers", "allow_leaks: the test checks leaks itself")


#: tests that share the conformance harness's runs (tests/conformance/harness.py): one worker
#: takes them all, so each run executes once, one at a time
HARNESS_TESTS = ("tests/auth/test_conformance.py::", "tests/conformance/test_")
#: tests of the harness's server scenarios, parametrized ``[<run>/<scenario>]`` or
#: ``[<run>]``: one worker takes the tests of one run, so each run executes once
SERVER_SCENARIOS = "tests/conformance/test_server_scenarios.py::"


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """xdist's "load" (its default for -n), except that the harness's tests are one unit,
    handed out first (the largest), and the server scenarios' tests one unit per run; every
    other test is its own unit."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class HarnessTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if nodeid.startswith(SERVER_SCENARIOS):
                if "[" not in nodeid:
                    return nodeid
                run = nodeid.split("[", 1)[1].split("/", 1)[0].rstrip("]")
                return f"server-scenarios-{run}"
            return "conformance-harness" if nodeid.startswith(HARNESS_TESTS) else nodeid

    return HarnessTogether(config, log)


#: modules whose tests take longest (hypothesis, the manual's build, the soak, many
#: processes): collected first, so that no worker is left running one of them at the end
SLOW_MODULES = ("tests/test_docs.py", "tests/llm/test_names.py", "tests/llm/test_schema.py",
                "tests/protocol/test_http_headers.py", "tests/client/test_soak.py",
                "tests/client/test_notebook.py", "tests/gateway/test_scale.py")


def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: not item.nodeid.startswith(SLOW_MODULES))  # stable
