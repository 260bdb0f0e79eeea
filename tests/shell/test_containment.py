"""What leaves a command's process group is still stopped with it: kill_shell, close(), and
the owner's death however it comes (see raider_sync/shell/keeper.py)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import psutil
import pytest

from raider_sync.shell import keeper

from shell.shell_helpers import gone, wait_for_file, wait_until

DOUBLE_FORK = textwrap.dedent("""
    import os, sys, time
    if os.fork():
        sys.exit(0)
    os.setsid()
    if os.fork():
        sys.exit(0)
    with open(sys.argv[1], "w") as out:
        out.write(str(os.getpid()))
    time.sleep(1000)
""")


def escapes(tmp_path, tag: str) -> tuple[str, list]:
    """A command starting three daemons that leave its process group (``setsid CMD &``,
    ``setsid -f CMD``, a double fork), each writing its pid to a file; and those files."""
    script = tmp_path / "daemon.py"
    script.write_text(DOUBLE_FORK)
    files = [tmp_path / f"{tag}-{n}" for n in range(3)]
    command = (f"setsid sh -c 'echo $$ > {files[0]}; exec sleep 1000' & "
               f"setsid -f sh -c 'echo $$ > {files[1]}; exec sleep 1000'; "
               f"{sys.executable} {script} {files[2]}; ")
    return command, files


def pids_of(files) -> list[int]:
    return [int(wait_for_file(path, 10)) for path in files]


def kill_all(pids) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


@pytest.fixture
def daemons():
    """The pids a test found; whatever is left of them is killed afterwards."""
    found: list[int] = []
    yield found
    kill_all(found)


def test_kill_shell_stops_what_left_the_group(shell, tmp_path, daemons):
    command, files = escapes(tmp_path, "k")
    text, is_error = shell.bash({"command": command + "sleep 1000", "run_in_background": True})
    assert not is_error, text
    daemons += pids_of(files)
    assert not any(gone(pid) for pid in daemons)
    assert shell.kill_shell({"shell_id": "bash_1"}) == (
        f"Successfully stopped task: bash_1 ({command}sleep 1000)", False)
    assert wait_until(lambda: all(gone(pid) for pid in daemons), 10), [
        pid for pid in daemons if not gone(pid)]


def test_close_stops_what_left_the_group_of_ended_and_running_shells(make_shell, tmp_path,
                                                                      daemons):
    shell = make_shell()
    ended, ended_files = escapes(tmp_path, "e")
    running, running_files = escapes(tmp_path, "r")
    assert shell.bash({"command": ended + "echo started"}) == ("started", False)
    shell.bash({"command": running + "sleep 1000", "run_in_background": True})
    daemons += pids_of(ended_files) + pids_of(running_files)
    shell.close()
    assert wait_until(lambda: all(gone(pid) for pid in daemons), 10), [
        pid for pid in daemons if not gone(pid)]


def test_a_stopped_monitor_takes_what_left_its_group(shell, tmp_path, daemons):
    command, files = escapes(tmp_path, "m")
    shell.monitor({"description": "m", "command": command + "sleep 1000", "timeout_ms": 60000})
    daemons += pids_of(files)
    assert shell.kill_shell({"shell_id": "monitor_1"})[1] is False
    assert wait_until(lambda: all(gone(pid) for pid in daemons), 10)


def test_the_mark_is_found_exactly(tmp_path):
    token = keeper.new_token()
    env = dict(os.environ)
    procs = []
    try:
        for n in (1, 12):
            env[keeper.VARIABLE] = keeper.mark(token, n)
            procs.append(subprocess.Popen(["sleep", "1000"], env=env))
        assert wait_until(lambda: sorted(keeper.marked(token + ".")) == sorted(
            p.pid for p in procs))
        assert keeper.marked(keeper.mark(token, 1)) == [procs[0].pid]
        assert keeper.sweep(keeper.mark(token, 1)) == {procs[0].pid}
        assert procs[0].wait(10) == -signal.SIGKILL
        assert procs[1].poll() is None
        assert keeper.marked(keeper.new_token() + ".") == []
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def test_marks_are_new_for_each_command_and_the_first_starts_the_keeper():
    marks = keeper.Marks()
    procs = []
    try:
        marks.sweep_all()  # nothing was marked: nothing to find, and no keeper
        assert not marks.used and marks.keeper.pid is None
        first, env = marks.environment()
        second, _ = marks.environment()
        assert (first, second) == (keeper.mark(marks.token, 1), keeper.mark(marks.token, 2))
        assert env[keeper.VARIABLE] == first and env["PATH"] == os.environ["PATH"]
        assert marks.used and psutil.pid_exists(marks.keeper.pid)
        procs.append(subprocess.Popen(["sleep", "1000"], env=env))
        assert wait_until(lambda: keeper.marked(marks.token + ".") == [procs[0].pid])
        marks.sweep_all()
        assert procs[0].wait(10) == -signal.SIGKILL
    finally:
        marks.keeper.close(10)
        for proc in procs:
            proc.kill()
            proc.wait()


OWNER = """
import os, signal, sys, time
from raider_sync.shell import BashTools
shell = BashTools(kill_grace=0.3)
shell.bash({"command": %(escapes)r + "sleep 1000", "run_in_background": True})
shell.bash({"command": "sleep 1000", "timeout": 0.1})
print("started", flush=True)
if %(end)r == "os._exit":
    while sys.stdin.readline().strip() != "go":
        pass
    os._exit(3)
time.sleep(1000)
"""


@pytest.mark.parametrize("end", ["SIGKILL", "SIGTERM", "os._exit"])
def test_no_shell_outlives_its_owner(tmp_path, end, daemons):
    command, files = escapes(tmp_path, "o")
    owner = subprocess.Popen([sys.executable, "-c", OWNER % {"escapes": command, "end": end}],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             cwd=str(tmp_path))
    try:
        assert owner.stdout.readline() == "started\n"
        daemons += pids_of(files)
        # the shells, what they started, and whatever helps the owner keep them
        daemons += [p.pid for p in psutil.Process(owner.pid).children(recursive=True)]
        assert len(set(daemons)) > 3, daemons
        assert not any(gone(pid) for pid in daemons[:3])
        if end == "os._exit":
            owner.stdin.write("go\n")
            owner.stdin.flush()
        else:
            owner.send_signal(getattr(signal, end))
        owner.wait(10)
        assert wait_until(lambda: all(gone(pid) for pid in daemons), 10), [
            pid for pid in daemons if not gone(pid)]
    finally:
        owner.kill()
        owner.wait()
        owner.stdin.close()
        owner.stdout.close()
