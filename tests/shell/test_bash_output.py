"""bash_output: new output since the last read, filter, block, unknown IDs."""
from __future__ import annotations

import os
import time

from shell.shell_helpers import wait_for_file, wait_until


def test_unknown_id(shell):
    assert shell.bash_output({"bash_id": "bash_9"}) == ("No task found with ID: bash_9", True)


def test_unknown_id_without_a_registry(make_shell):
    shell = make_shell()
    assert shell.bash_output({"bash_id": "nope"}) == ("No task found with ID: nope", True)


def test_completed_shell_format(shell):
    shell.bash({"command": "echo one; echo two", "run_in_background": True})
    text, is_error = shell.bash_output({"bash_id": "bash_1", "block": True, "timeout": 5})
    assert (text, is_error) == ("<status>completed</status>\n<exit_code>0</exit_code>\n"
                                "<stdout>\none\ntwo\n</stdout>", False)
    # nothing new: stdout is left out
    assert shell.bash_output({"bash_id": "bash_1"}) == (
        "<status>completed</status>\n<exit_code>0</exit_code>", False)


def test_failed_shell_format(shell):
    shell.bash({"command": "echo oops >&2; exit 4", "run_in_background": True})
    text, _ = shell.bash_output({"bash_id": "bash_1", "block": True, "timeout": 5})
    assert text == "<status>failed</status>\n<exit_code>4</exit_code>\n<stdout>\noops\n</stdout>"


def test_reads_only_what_is_new(shell, tmp_path):
    gate = tmp_path / "gate"
    shell.bash({"command": f"echo first; while [ ! -e {gate} ]; do sleep 0.02; done; echo second",
                "run_in_background": True})
    first = []
    assert wait_until(lambda: first.append(shell.bash_output({"bash_id": "bash_1"})[0])
                      or "first" in first[-1], 5)
    assert "".join(first).count("first") == 1
    gate.touch()
    later = []
    assert wait_until(lambda: later.append(shell.bash_output({"bash_id": "bash_1"})[0])
                      or "<status>completed</status>" in later[-1], 5)
    joined = "".join(later)
    assert joined.count("second") == 1
    assert "first" not in joined


def test_running_status_without_output(shell):
    shell.bash({"command": "sleep 5", "run_in_background": True})
    assert shell.bash_output({"bash_id": "bash_1"}) == ("<status>running</status>", False)


def test_filter_keeps_matching_lines_and_consumes_the_rest(shell):
    shell.bash({"command": "printf 'ok 1\\nFAIL a\\nok 2\\nFAIL b\\n'", "run_in_background": True})
    text, _ = shell.bash_output({"bash_id": "bash_1", "filter": "^FAIL", "block": True, "timeout": 5})
    assert text == "<status>completed</status>\n<exit_code>0</exit_code>\n<stdout>\nFAIL a\nFAIL b\n</stdout>"
    assert "<stdout>" not in shell.bash_output({"bash_id": "bash_1"})[0]


def test_filter_waits_for_whole_lines_while_running(shell, tmp_path):
    gate, half = tmp_path / "gate", tmp_path / "half"
    shell.bash({"command": f"printf 'FAIL pa'; touch {half}; "
                           f"while [ ! -e {gate} ]; do sleep 0.02; done; "
                           "printf 'rt\\n'", "run_in_background": True})
    assert wait_until(half.exists, 10)  # the first half of the line is written
    assert "<stdout>" not in shell.bash_output({"bash_id": "bash_1", "filter": "FAIL"})[0]
    gate.touch()
    text, _ = shell.bash_output({"bash_id": "bash_1", "filter": "FAIL part", "block": True,
                                 "timeout": 5})
    assert "<stdout>\nFAIL part\n</stdout>" in text


def test_invalid_filter(shell):
    shell.bash({"command": "true", "run_in_background": True})
    text, is_error = shell.bash_output({"bash_id": "bash_1", "filter": "("})
    assert is_error and text.startswith("Invalid filter regular expression:")


def test_block_waits_for_the_end(shell):
    shell.bash({"command": "sleep 0.3; echo late", "run_in_background": True})
    started = time.monotonic()
    text, _ = shell.bash_output({"bash_id": "bash_1", "block": True, "timeout": 5})
    assert 0.2 < time.monotonic() - started < 4
    assert text.startswith("<status>completed</status>") and "late" in text


def test_block_gives_up_at_its_timeout(shell):
    shell.bash({"command": "sleep 5", "run_in_background": True})
    started = time.monotonic()
    text, _ = shell.bash_output({"bash_id": "bash_1", "block": True, "timeout": 0.2})
    assert 0.15 < time.monotonic() - started < 2
    assert text == "<status>running</status>"


def test_block_uses_block_timeout_by_default(make_shell):
    shell = make_shell(block_timeout=0.2)
    shell.bash({"command": "sleep 5", "run_in_background": True})
    started = time.monotonic()
    shell.bash_output({"bash_id": "bash_1", "block": True})
    assert time.monotonic() - started < 2


def test_bash_output_f_does_not_block(shell, tmp_path):
    gate = tmp_path / "gate"
    shell.bash({"command": f"while [ ! -e {gate} ]; do sleep 0.02; done; echo x",
                "run_in_background": True})
    future = shell.bash_output_f({"bash_id": "bash_1", "block": True, "timeout": 5})
    assert not future.done()  # it returned while the shell still waits for the gate
    gate.touch()
    assert "x" in future.result(5)[0]


def test_large_background_output_is_cut(make_shell):
    shell = make_shell(output_limit=20)
    shell.bash({"command": "head -c 1000 /dev/zero | tr '\\0' z", "run_in_background": True})
    text, _ = shell.bash_output({"bash_id": "bash_1", "block": True, "timeout": 5})
    assert "... [980 characters truncated] ..." in text


def test_output_file_is_released_once_read_to_the_end(shell):
    before = set(os.listdir("/proc/self/fd"))
    shell.bash({"command": "echo done", "run_in_background": True})
    assert wait_until(lambda: len(set(os.listdir("/proc/self/fd")) - before) >= 1, 2)
    shell.bash_output({"bash_id": "bash_1", "block": True, "timeout": 5})
    leftover = [os.readlink(f"/proc/self/fd/{fd}") for fd in set(os.listdir("/proc/self/fd")) - before
                if os.path.exists(f"/proc/self/fd/{fd}")]
    assert not [target for target in leftover if target.endswith("(deleted)")]


def test_moved_command_output_from_the_start(shell, tmp_path):
    marker = tmp_path / "marker"
    shell.bash({"command": f"echo before; echo x > {marker}; sleep 0.5; echo after", "timeout": 0.1})
    wait_for_file(marker)
    text, _ = shell.bash_output({"bash_id": "bash_1", "block": True, "timeout": 5})
    assert "<stdout>\nbefore\nafter\n</stdout>" in text


def test_block_timeout_is_cut_down_to_max_timeout(make_shell):
    shell = make_shell(max_timeout=0.3, block_timeout=1000)
    shell.bash({"command": "sleep 1000", "run_in_background": True})
    assert shell.bash_output_f({"bash_id": "bash_1", "block": True, "timeout": 1000}).result(
        20) == ("<status>running</status>", False)
    assert shell.bash_output_f({"bash_id": "bash_1", "block": True}).result(20) == (
        "<status>running</status>", False)
