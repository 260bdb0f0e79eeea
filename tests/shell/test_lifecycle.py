"""No shell outlives its owner; many shells at once; the session's processes."""
from __future__ import annotations

import gc
import subprocess
import sys
import threading
import weakref

from raider_sync.shell import BashTools, Tasks

from shell.shell_helpers import gone, wait_for_file, wait_until


def test_garbage_collection_stops_every_shell(tmp_path):
    tasks = Tasks()
    shell = BashTools(working_directory=str(tmp_path), kill_grace=0.3, tasks=tasks,
                      monitor_min_timeout=0.1)
    shell.bash({"command": "sleep 1000 & sleep 1000; wait", "run_in_background": True})
    shell.bash({"command": "sleep 1000", "timeout": 0.1})
    shell.monitor({"description": "m", "command": "sleep 1000", "timeout_ms": 60000})
    shell.server.call_tool("bash", {"command": "echo through the server"})
    pids = [s.pid for s in shell.shells] + shell.background_pids()
    assert len(set(pids)) == 3
    alive = weakref.ref(shell)
    del shell
    gc.collect()
    assert alive() is None
    assert all(gone(pid) for pid in pids)
    assert [e.status for e in tasks.entries()] == ["killed", "killed", "killed"]


def test_close_is_idempotent(tmp_path):
    shell = BashTools(working_directory=str(tmp_path), kill_grace=0.3)
    shell.bash({"command": "sleep 100", "run_in_background": True})
    pid = shell.shells[0].pid
    shell.close()
    shell.close()
    assert gone(pid)
    assert shell.bash({"command": "echo late"}) == ("Error: the shell tools are closed", True)


def test_context_manager_stops_shells(tmp_path):
    with BashTools(working_directory=str(tmp_path), kill_grace=0.3) as shell:
        shell.bash({"command": "sleep 100", "run_in_background": True})
        pid = shell.shells[0].pid
    assert gone(pid)


SCRIPT = """
import sys
from raider_sync.shell import BashTools
shell = BashTools(kill_grace=0.3)
shell.bash({"command": "sleep 1000 & echo $! > %(pids)s; sleep 1000; wait", "run_in_background": True})
shell.bash({"command": "sleep 1000", "timeout": 0.1})
print(" ".join(str(s.pid) for s in shell.shells), flush=True)
import time
deadline = time.monotonic() + 5
import os
while not (os.path.exists(%(pids)r) and open(%(pids)r).read().strip()) and time.monotonic() < deadline:
    time.sleep(0.02)
# exits without stopping anything: the atexit hook must
"""


def test_interpreter_exit_stops_every_shell(tmp_path):
    pids_file = tmp_path / "grandchild"
    script = SCRIPT % {"pids": str(pids_file)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30,
                          cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr
    pids = [int(p) for p in done.stdout.split()] + [int(wait_for_file(pids_file))]
    assert len(pids) == 3
    assert wait_until(lambda: all(gone(pid) for pid in pids), 5)


def test_many_shells_from_many_threads(make_shell):
    shell = make_shell(tasks=Tasks())
    results: dict[int, tuple] = {}
    background: list[str] = []

    def work(n: int) -> None:
        results[n] = shell.bash({"command": f"echo {n}; echo err{n} >&2"})
        if n % 4 == 0:
            background.append(shell.bash({"command": f"sleep 0.2; echo bg{n}",
                                          "run_in_background": True})[0].split("ID: ")[1].rstrip("."))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(48)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert results == {n: (f"{n}\nerr{n}", False) for n in range(48)}
    assert len(set(background)) == 12
    for task_id in background:
        text, _ = shell.bash_output({"bash_id": task_id.split(".")[0], "block": True, "timeout": 10})
        assert text.startswith("<status>completed</status>"), text


def test_background_pids(make_shell, tmp_path):
    shell = make_shell(tasks=Tasks(), monitor_min_timeout=0.1)
    assert shell.background_pids() == []
    shell.bash({"command": "sleep 100", "run_in_background": True})
    marker = tmp_path / "detached"
    detached = shell.bash_f({"command": f"echo $$ > {marker}; sleep 100"}, {"detached": True})
    attached = shell.bash_f({"command": "sleep 100"})
    shell.monitor({"description": "m", "command": "sleep 100", "timeout_ms": 60000})
    detached_pid = int(wait_for_file(marker))
    pids = shell.background_pids()
    assert shell.shells[0].pid in pids
    assert detached_pid in pids
    assert shell._runtime.monitors["monitor_1"].pid in pids
    assert len(pids) == 3  # the attached foreground command is the run's own
    shell.stop_all()
    assert detached.result(5)[1] and attached.result(5)[1]
    assert shell.background_pids() == []


def test_without_pidfds_exits_are_still_seen(make_shell, monkeypatch, tmp_path):
    import os

    import raider_sync.shell.reaper as reaper
    monkeypatch.setattr(reaper, "HAVE_PIDFD", False)
    monkeypatch.delattr(os, "pidfd_open", raising=False)
    tasks = Tasks()
    shell = make_shell(tasks=tasks, monitor_min_timeout=0.1)
    assert shell.bash({"command": "echo portable"}) == ("portable", False)
    assert "moved to the background" in shell.bash({"command": "sleep 0.3; echo x", "timeout": 0.1})[0]
    assert shell.bash_output({"bash_id": "bash_1", "block": True, "timeout": 5})[0].startswith(
        "<status>completed</status>")
    shell.bash({"command": "sleep 100", "run_in_background": True})
    assert not shell.kill_shell({"shell_id": "bash_2"})[1]
    shell.monitor({"description": "p", "command": "echo line; sleep 0.2", "timeout_ms": 5000})
    notes = []
    assert wait_until(lambda: notes.extend(tasks.notifications()) or
                      any("Monitor stream ended" in n for n in notes), 5)
    assert any("<event>line</event>" in n for n in notes)


def test_cancelled_timers_do_not_pile_up(make_shell):
    shell = make_shell()
    for _ in range(1500):
        shell._runtime.reaper.call_later(120, lambda: None).cancel()
    assert shell.bash({"command": "echo ok"}) == ("ok", False)
    assert len(shell._runtime.reaper._timers) < 1100


def _closing_validator(holder):
    def validator(command, cwd):
        holder["shell"].close()  # the close lands between the gates and the start
        return True
    return validator


def test_a_command_that_starts_while_the_tools_close_is_refused(make_shell, tasks):
    holder = {}
    shell = holder["shell"] = make_shell(tasks=tasks, validator=_closing_validator(holder))
    assert shell.bash({"command": "sleep 1000", "timeout": 0.2}) == \
        ("Error: the shell tools are closed", True)
    assert shell.shells == [] and shell.background_pids() == []
    assert not [t for t in threading.enumerate() if t.name.startswith("raider-shell")]


def test_a_monitor_that_starts_while_the_tools_close_is_refused(make_shell, tasks):
    holder = {}
    shell = holder["shell"] = make_shell(tasks=tasks, validator=_closing_validator(holder),
                                         monitor_min_timeout=0.1)
    assert shell.monitor({"description": "m", "command": "sleep 1000", "timeout_ms": 60000}) == \
        ("Error: the shell tools are closed", True)
    assert shell.background_pids() == [] and tasks.entries() == []
    assert not [t for t in threading.enumerate() if t.name.startswith("raider-shell")]


def test_close_racing_commands_from_other_threads_leaves_nothing(make_shell):
    for background in (True, False, True, False):
        _close_while_commands_start(make_shell(), background)


def _close_while_commands_start(shell, background):
    stop = threading.Event()
    answered = []

    def loop():
        while not stop.is_set():
            text, _ = shell.bash({"command": "sleep 0.02", "run_in_background": background})
            answered.append(text)
            if text.startswith("Error"):
                return
    threads = [threading.Thread(target=loop) for _ in range(4)]
    for thread in threads:
        thread.start()
    assert wait_until(lambda: len(answered) >= 4, timeout=5)
    shell.close()
    stop.set()
    for thread in threads:
        thread.join(10)
    assert wait_until(lambda: not [t for t in threading.enumerate()
                                   if t.name.startswith("raider-shell")], timeout=5)
