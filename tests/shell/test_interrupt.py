"""Ctrl-C during a foreground command: the command is stopped, the interrupt propagates."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

from shell.shell_helpers import gone, wait_until

SCRIPT = """
import json, os, signal, threading, time
from raider_sync.shell import BashTools, Tasks

# Ctrl-C raises, even when this process was started with SIGINT ignored (as a shell without
# job control starts its background jobs)
signal.signal(signal.SIGINT, signal.default_int_handler)

def gone(pid):  # a zombie not yet reaped by its parent counts as gone
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True

shell = BashTools(kill_grace=0.3, tasks=Tasks())

def interrupt_when_started():
    deadline = time.monotonic() + 20
    while not (os.path.exists("daemon") and open("daemon").read().strip()) and (
            time.monotonic() < deadline):
        time.sleep(0.01)
    os.kill(os.getpid(), signal.SIGINT)

threading.Thread(target=interrupt_when_started, daemon=True).start()
report = {}
started = time.monotonic()
try:
    shell.bash({"command": "trap '' TERM; echo $$ > pid; setsid sleep 1000 & echo $! > daemon; "
                           "sleep 1000", "timeout": 600})
    report["interrupted"] = False
except KeyboardInterrupt:
    report["interrupted"] = True
report["seconds"] = time.monotonic() - started
report["pids"] = [int(open(name).read()) for name in ("pid", "daemon")]
deadline = time.monotonic() + 10  # SIGKILLed processes take a moment to finish exiting
while any(not gone(pid) for pid in report["pids"]) and time.monotonic() < deadline:
    time.sleep(0.02)
report["alive"] = [pid for pid in report["pids"] if not gone(pid)]
report["background_pids"] = shell.background_pids()
report["shells"] = len(shell.shells)
report["tasks"] = [entry.id for entry in shell.tasks.entries()]
report["after"] = shell.bash({"command": "echo still usable"})
print(json.dumps(report), flush=True)
shell.close()
"""


def test_ctrl_c_stops_a_foreground_command_and_propagates(tmp_path):
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=60, cwd=str(tmp_path))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    try:
        check(report)
    finally:
        for pid in report["alive"]:  # what the test found left behind
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def check(report: dict) -> None:
    assert report["interrupted"] is True
    assert report["alive"] == [], report  # gone before close(), the daemon too
    assert report["background_pids"] == [] and report["shells"] == 0 and report["tasks"] == []
    assert report["after"] == ["still usable", False]
    assert report["seconds"] < 30  # SIGTERM ignored: killed after kill_grace, not at 600 s
    assert wait_until(lambda: all(gone(pid) for pid in report["pids"]), 10)


def test_cancelling_the_future_stops_the_command(make_shell, tmp_path):
    shell = make_shell()
    future = shell.bash_f({"command": "echo $$ > pid; exec sleep 1000"})
    assert wait_until(lambda: (tmp_path / "pid").exists() and (tmp_path / "pid").read_text())
    pid = int((tmp_path / "pid").read_text())
    assert future.cancel()
    assert wait_until(lambda: gone(pid), 10)
    assert shell.background_pids() == [] and shell.shells == []
    assert shell.bash({"command": "echo next"}) == ("next", False)


def test_a_finished_future_cannot_be_cancelled(make_shell):
    shell = make_shell()
    future = shell.bash_f({"command": "echo quick"})
    assert future.result(10) == ("quick", False)
    assert not future.cancel()
