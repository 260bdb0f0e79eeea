"""bash: foreground results, their texts, limits, the move to the background."""
from __future__ import annotations

import os
import time

import pytest

from raider_sync.shell import BashTools

from shell.shell_helpers import gone, wait_until


def test_output_of_a_successful_command(shell):
    assert shell.bash({"command": "echo hello"}) == ("hello", False)


def test_no_output_text(shell):
    assert shell.bash({"command": "true"}) == ("(Bash completed with no output)", False)


def test_failure_starts_with_exit_code(shell):
    assert shell.bash({"command": "echo broken; exit 3"}) == ("Exit code 3\nbroken", True)
    assert shell.bash({"command": "exit 7"}) == ("Exit code 7", True)


def test_stdout_and_stderr_in_the_order_written(shell):
    text, is_error = shell.bash({"command": "echo one; echo two >&2; echo three; echo four >&2"})
    assert (text, is_error) == ("one\ntwo\nthree\nfour", False)


def test_stdin_is_dev_null(shell):
    assert shell.bash({"command": "cat; echo end"}) == ("end", False)


def test_runs_in_the_working_directory(shell, tmp_path):
    assert shell.bash({"command": "pwd"}) == (str(tmp_path), False)


def test_caller_working_directory_wins(shell, tmp_path):
    other = tmp_path / "worktree"
    other.mkdir()
    assert shell.bash({"command": "pwd"}, {"working_directory": str(other)}) == (str(other), False)


def test_commands_run_in_a_process_group_of_their_own(shell):
    text, _ = shell.bash({"command": "ps -o pgid= -p $$; echo $$"})
    pgid, pid = text.split()
    assert pgid == pid
    assert int(pgid) != os.getpgrp()


def test_non_utf8_output_is_replaced(shell):
    text, is_error = shell.bash({"command": r"printf 'bad \377\376 bytes\n'"})
    assert (text, is_error) == ("bad \ufffd\ufffd bytes", False)


def test_output_over_the_limit_keeps_start_and_end(make_shell):
    shell = make_shell(output_limit=100)
    text, is_error = shell.bash({"command": "printf 'START'; head -c 1000 /dev/zero | tr '\\0' x; "
                                            "printf 'END'"})
    assert not is_error
    assert text.startswith("START" + "x" * 45)
    assert text.endswith("x" * 47 + "END")
    assert "\n\n... [908 characters truncated] ...\n\n" in text


def test_fifty_megabytes_are_cut_with_bounded_memory(make_shell):
    shell = make_shell()
    with open("/proc/self/clear_refs", "w") as refs:  # resets VmHWM: the peak is ours
        refs.write("5")
    before = _rss_kb("VmRSS")
    started = time.monotonic()
    text, is_error = shell.bash({"command": "printf 'FIRST'; head -c 50000000 /dev/zero | tr '\\0' y;"
                                            " printf 'LAST'"})
    took = time.monotonic() - started
    peak_growth_mb = (_rss_kb("VmHWM") - before) / 1024
    assert not is_error
    assert text.startswith("FIRST") and text.endswith("LAST")
    assert f"... [{50000009 - 30000} characters truncated] ..." in text
    assert len(text) < 30100
    assert peak_growth_mb < 32, f"peak RSS grew by {peak_growth_mb:.1f} MB"
    assert took < 20


def _rss_kb(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(field)


def test_timeout_moves_the_command_to_the_background(shell, tasks, tmp_path):
    gate = tmp_path / "gate"
    # the command cannot finish before the gate opens, after bash has answered: an answer at
    # all shows it was moved on at its timeout, not waited for
    text, is_error = shell.bash({"command": f"echo begun; while [ ! -e {gate} ]; do sleep 0.02; "
                                            "done; echo finished", "timeout": 0.2})
    first, _ = shell.bash_output({"bash_id": "bash_1"})
    gate.touch()
    assert (text, is_error) == (
        "Command did not complete within its 0.2s timeout and was moved to the background with "
        "ID: bash_1. You will be notified when it completes.", False)
    answers = [first]
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        answer, is_error = shell.bash_output({"bash_id": "bash_1"})
        assert not is_error
        answers.append(answer)
        if "<status>completed</status>" in answer:
            break
        time.sleep(0.05)
    assert answers[0].startswith("<status>running</status>")
    joined = "".join(answers)
    assert joined.count("begun") == 1 and joined.count("finished") == 1
    assert answers[-1].startswith("<status>completed</status>\n<exit_code>0</exit_code>")
    notes = tasks.notifications("main", block=True, timeout=2)
    assert notes and "<task-id>bash_1</task-id>" in notes[0]


def test_moved_text_without_a_registry(make_shell):
    shell = make_shell()
    text, _ = shell.bash({"command": "sleep 2", "timeout": 0.1})
    assert text == ("Command did not complete within its 0.1s timeout and was moved to the background "
                    "with ID: bash_1. Read its output with bash_output.")
    assert shell.kill_shell({"shell_id": "bash_1"}) == ("Successfully stopped task: bash_1 (sleep 2)",
                                                        False)


def test_timeout_is_cut_down_to_max_timeout(make_shell):
    shell = make_shell(max_timeout=0.2)
    started = time.monotonic()
    text, _ = shell.bash({"command": "sleep 3", "timeout": 100})
    assert time.monotonic() - started < 2
    assert "within its 0.2s timeout" in text


def test_default_timeout_applies_without_one(make_shell):
    shell = make_shell(default_timeout=0.2)
    text, _ = shell.bash({"command": "sleep 3"})
    assert "within its 0.2s timeout" in text


@pytest.mark.parametrize("bad", [0, -1, "x", None])
def test_unusable_timeouts_fall_back_to_the_default(make_shell, bad):
    shell = make_shell(default_timeout=0.2)
    text, _ = shell.bash({"command": "sleep 3", "timeout": bad})
    assert "within its 0.2s timeout" in text


def test_run_in_background_answers_at_once(shell, tmp_path):
    gate = tmp_path / "never"  # never opened: an answer at all shows nothing waited for it
    text, is_error = shell.bash({"command": f"while [ ! -e {gate} ]; do sleep 0.05; done",
                                 "run_in_background": True})
    assert (text, is_error) == ("Command running in background with ID: bash_1. You will be "
                                "notified when it completes.", False)
    assert shell.bash({"command": "true", "run_in_background": True})[0].startswith(
        "Command running in background with ID: bash_2.")


def test_a_command_that_cannot_start(make_shell, tmp_path):
    shell = make_shell(working_directory=str(tmp_path / "missing"))
    text, is_error = shell.bash({"command": "true"})
    assert is_error and text.startswith("Error: the command could not start:")


@pytest.mark.parametrize("command", ["", "   ", None, 5])
def test_a_missing_command_is_an_error(shell, command):
    assert shell.bash({"command": command}) == ("Error: command must be a non-empty string", True)


def test_a_finished_command_leaves_nothing_in_its_group(shell, tmp_path):
    marker = tmp_path / "pid"
    text, _ = shell.bash({"command": f"sleep 30 & echo $! > {marker}; echo started"})
    assert text == "started"
    pid = int(marker.read_text())
    assert wait_until(lambda: gone(pid), 5)


def test_bash_f_returns_a_future(shell):
    future = shell.bash_f({"command": "echo async"})
    assert future.result(5) == ("async", False)


def test_shells_lists_background_shells(shell):
    shell.bash({"command": "sleep 5", "run_in_background": True, "description": "nap"})
    assert [(s.id, s.description, s.running) for s in shell.shells] == [("bash_1", "nap", True)]


def test_working_directory_defaults_to_the_process(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with BashTools(kill_grace=0.2) as shell:
        assert shell.bash({"command": "pwd"}) == (str(tmp_path), False)


def test_the_defaults_are_claude_codes(make_shell):
    shell = make_shell(kill_grace=2.0)
    assert (shell.default_timeout, shell.max_timeout, shell.output_limit) == (120, 600, 30000)
    runtime = shell._runtime
    for inp, seconds in (({}, 120), ({"timeout": 5000}, 600), ({"timeout": 30}, 30)):
        future = shell.bash_f({"command": "sleep 1000", **inp})
        with runtime.lock:
            (command,) = runtime.active
        # the timer that would move it to the background runs at the timeout
        assert abs(command.timer.when - command.started - seconds) < 5
        assert future.cancel()
        assert command.done.result(10) is not None
