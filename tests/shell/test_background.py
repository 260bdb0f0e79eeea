"""Background, the part of BashTools behind bash_output and kill_shell: it reads the options
it is given at each call, and finds shells and monitors by id."""
from __future__ import annotations

from raider_sync.shell.background import Background


def test_the_options_are_the_calls(shell, tasks):
    shell.bash({"command": "head -c 1000 /dev/zero | tr '\\0' z", "run_in_background": True})
    background = Background(shell._runtime)
    assert background.find("bash_1") is shell.shells[0] and background.find("bash_9") is None
    text, is_error = background.output_f({"bash_id": "bash_1", "block": True}, tasks,
                                         timeout=5, limit=20).result(10)
    assert not is_error and "... [980 characters truncated] ..." in text
    assert background.output_f({"bash_id": "bash_9"}, None, timeout=5, limit=20).result(10) == (
        "No task found with ID: bash_9", True)
    shell.bash({"command": "sleep 100", "run_in_background": True})
    assert background.kill_f({"shell_id": "bash_2"}, tasks, kill_grace=0.3).result(10) == (
        "Successfully stopped task: bash_2 (sleep 100)", False)
