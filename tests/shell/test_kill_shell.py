"""kill_shell: the process group goes, grandchildren included; texts for every case."""
from __future__ import annotations

import time

import psutil

from shell.shell_helpers import gone, wait_for_file, wait_until


def test_kill_reaches_grandchildren(shell, tmp_path):
    pids = tmp_path / "pids"
    shell.bash({"command": f"sleep 1000 & echo $! >> {pids}; sleep 1000 & echo $! >> {pids}; wait",
                "run_in_background": True})
    assert wait_until(lambda: pids.exists() and len(pids.read_text().split()) == 2)
    grandchildren = [int(p) for p in pids.read_text().split()]
    leader = shell.shells[0].pid
    assert all(not gone(pid) for pid in grandchildren)
    text, is_error = shell.kill_shell({"shell_id": "bash_1"})
    assert (text, is_error) == ("Successfully stopped task: bash_1 (sleep 1000 & echo $! >> "
                                f"{pids}; sleep 1000 & echo $! >> {pids}; wait)", False)
    assert wait_until(lambda: all(gone(pid) for pid in grandchildren + [leader]), 5)
    assert shell.bash_output({"bash_id": "bash_1"})[0].startswith(
        "<status>killed</status>\n<exit_code>143</exit_code>")


def test_sigterm_first_then_sigkill_after_the_grace(make_shell, tmp_path):
    shell = make_shell(kill_grace=0.4)
    ready = tmp_path / "ready"
    shell.bash({"command": f"trap 'echo got TERM' TERM; echo x > {ready}; "
                           "while true; do sleep 0.05; done", "run_in_background": True})
    wait_for_file(ready)
    started = time.monotonic()
    text, is_error = shell.kill_shell({"shell_id": "bash_1"})
    took = time.monotonic() - started
    assert not is_error, text
    assert 0.3 < took < 3
    answer = shell.bash_output({"bash_id": "bash_1"})[0]
    assert "<status>killed</status>" in answer and "<exit_code>137</exit_code>" in answer
    assert "got TERM" in answer


def test_a_command_that_exits_on_sigterm_stops_at_once(make_shell):
    shell = make_shell(kill_grace=5)
    shell.bash({"command": "sleep 1000", "run_in_background": True})
    started = time.monotonic()
    assert not shell.kill_shell({"shell_id": "bash_1"})[1]
    assert time.monotonic() - started < 2


def test_unknown_id(shell):
    assert shell.kill_shell({"shell_id": "bash_3"}) == ("No task found with ID: bash_3", True)


def test_a_shell_that_is_not_running(shell):
    shell.bash({"command": "true", "run_in_background": True})
    shell.bash_output({"bash_id": "bash_1", "block": True, "timeout": 5})
    assert shell.kill_shell({"shell_id": "bash_1"}) == (
        "Task bash_1 is not running, so cannot be killed (status: completed)", True)


def test_killed_twice(shell):
    shell.bash({"command": "sleep 100", "run_in_background": True})
    assert not shell.kill_shell({"shell_id": "bash_1"})[1]
    assert shell.kill_shell({"shell_id": "bash_1"}) == (
        "Task bash_1 is not running, so cannot be killed (status: killed)", True)


def test_kill_shell_f_is_a_future(shell):
    shell.bash({"command": "sleep 100", "run_in_background": True})
    future = shell.kill_shell_f({"shell_id": "bash_1"})
    assert future.result(5) == ("Successfully stopped task: bash_1 (sleep 100)", False)


def test_stopping_through_the_registry(shell, tasks):
    shell.bash({"command": "sleep 100", "run_in_background": True})
    assert tasks.stop("bash_1") is True
    assert wait_until(lambda: tasks.get("bash_1").status == "killed", 5)
    assert tasks.stop("bash_1") is False


def test_stop_all_leaves_no_process(shell):
    me = psutil.Process()
    # servers that session fixtures of this worker started are not the shell's
    before = {p.pid for p in me.children(recursive=True)}

    def started():  # the keeper lives as long as the tools, which stay usable
        keeper = shell._runtime.marks.keeper.pid
        return [p.pid for p in me.children(recursive=True) if p.pid not in before | {keeper}]

    for _ in range(3):
        shell.bash({"command": "sleep 1000 & sleep 1000; wait", "run_in_background": True})
    foreground = shell.bash_f({"command": "sleep 1000"})
    # generous bounds: on a loaded machine ten processes can take a while to appear
    assert wait_until(lambda: len(started()) >= 10, 30)
    descendants = started()
    shell.stop_all()
    assert foreground.result(30) == ("Exit code 143", True)
    assert wait_until(lambda: all(gone(pid) for pid in descendants), 30)  # SIGKILL lands soon
    assert [s.status for s in shell.shells] == ["killed"] * 3
    # still usable afterwards
    assert shell.bash({"command": "echo again"}) == ("again", False)


def test_stop_all_keeps_the_unread_output_of_shells(shell):
    shell.bash({"command": "echo finished earlier", "run_in_background": True})
    shell.bash({"command": "echo stopped now; exec sleep 1000", "run_in_background": True})
    assert wait_until(lambda: shell.shells[0].status == "completed"
                      and shell.shells[1].output.size() > 0, 5)
    shell.stop_all()  # the object stays usable: what the shells wrote is still there to read
    assert shell.bash_output({"bash_id": "bash_1"}) == (
        "<status>completed</status>\n<exit_code>0</exit_code>\n<stdout>\nfinished earlier\n</stdout>",
        False)
    assert shell.bash_output({"bash_id": "bash_2"}) == (
        "<status>killed</status>\n<exit_code>143</exit_code>\n<stdout>\nstopped now\n</stdout>",
        False)
