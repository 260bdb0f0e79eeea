"""The output cap and the time limit of shells."""
from __future__ import annotations

import pytest

from raider_sync import BashTools, ConfigError

from shell.shell_helpers import gone, wait_until

CAP = 200_000


def test_a_background_shell_that_writes_too_much_is_stopped(make_shell, tasks):
    shell = make_shell(tasks=tasks, max_output_bytes=CAP)
    shell.bash({"command": "yes", "run_in_background": True, "description": "flood"})
    text, _ = shell.bash_output({"bash_id": "bash_1", "block": True, "timeout": 20})
    assert text.startswith("<status>killed</status>"), text[:200]
    assert text.rstrip().endswith(f"[The command was stopped: its output passed {CAP} bytes.]\n"
                                  "</stdout>")
    note = tasks.notifications("main", block=True, timeout=5)[0]
    assert (f'<summary>Background command "flood" was stopped: its output passed {CAP} bytes'
            "</summary>") in note
    assert shell.shells[0].output is None or shell.shells[0].output.closed


def test_a_foreground_command_that_writes_too_much_is_stopped(make_shell):
    shell = make_shell(max_output_bytes=CAP)
    text, is_error = shell.bash({"command": "yes", "timeout": 30})
    assert is_error and text.startswith("Exit code 143\n"), text[:200]
    assert text.endswith(f"[The command was stopped: its output passed {CAP} bytes.]")
    assert shell.shells == []


def test_output_under_the_cap_is_left_alone(make_shell):
    shell = make_shell(max_output_bytes=CAP, output_limit=CAP)
    assert shell.bash({"command": "head -c 100000 /dev/zero | tr '\\0' x; echo"})[0] == "x" * 100000


def test_the_default_cap_protects_the_disk():
    with BashTools() as default, BashTools(max_output_bytes=None) as unlimited:
        assert default.max_output_bytes == 512 << 20
        assert unlimited.max_output_bytes is None


def test_a_background_shell_over_its_time_limit_is_stopped(make_shell, tasks):
    shell = make_shell(tasks=tasks, background_time_limit=0.5)
    shell.bash({"command": "echo begun; sleep 1000", "run_in_background": True})
    pid = shell.shells[0].pid
    text, _ = shell.bash_output({"bash_id": "bash_1", "block": True, "timeout": 20})
    assert text == ("<status>killed</status>\n<exit_code>143</exit_code>\n<stdout>\nbegun\n\n"
                    "[The command was stopped: it ran for more than 0.5s.]\n</stdout>")
    assert wait_until(lambda: gone(pid))
    assert "was stopped: it ran for more than 0.5s</summary>" in tasks.notifications(
        "main", block=True, timeout=5)[0]


def test_the_time_limit_counts_from_the_start_of_a_moved_command(make_shell):
    shell = make_shell(background_time_limit=0.6)
    text, _ = shell.bash({"command": "sleep 1000", "timeout": 0.2})
    assert "moved to the background with ID: bash_1" in text
    text, _ = shell.bash_output({"bash_id": "bash_1", "block": True, "timeout": 20})
    assert text.startswith("<status>killed</status>") and "more than 0.6s" in text


def test_the_time_limit_leaves_foreground_commands_alone(make_shell):
    shell = make_shell(background_time_limit=0.1)
    assert shell.bash({"command": "sleep 0.4; echo done"}) == ("done", False)


@pytest.mark.parametrize("option", ["max_output_bytes", "background_time_limit"])
@pytest.mark.parametrize("value", [0, -1, "100", True, float("nan")])
def test_a_limit_must_be_a_positive_number(option, value):
    with pytest.raises(ConfigError, match=option):
        BashTools(**{option: value})
