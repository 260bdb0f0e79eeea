"""allowed_commands and the validator, asked before any command starts."""
from __future__ import annotations

import pytest

from raider_sync.shell.gates import first_word, refusal


def test_first_word():
    assert first_word("  git status --short") == "git"
    assert first_word("") == ""


@pytest.mark.parametrize("verdict, expected", [
    (True, None), (1, None),
    ("blocked by policy", "Command blocked by policy"),
    (False, "Command denied"), (None, "Command denied"), (0, "Command denied"),
    ("", "Command denied"), ("yes", "Command yes"), ({"ok": 1}, "Command denied"),
])
def test_validator_verdicts(verdict, expected):
    assert refusal("ls", "/", validator=lambda command, cwd: verdict) == expected


def test_validator_exception_refuses():
    def broken(command, cwd):
        raise RuntimeError("policy file missing")
    assert refusal("ls", "/", validator=broken) == "Command denied: policy file missing"


def test_allowed_commands_first():
    assert refusal("rm -rf x", "/", allowed=["ls"]) == "Command not allowed: rm"
    assert refusal("ls -la", "/", allowed=["ls"]) is None


def test_foreground_refused_before_it_starts(make_shell, tmp_path):
    shell = make_shell(allowed_commands=["echo"])
    marker = tmp_path / "ran"
    assert shell.bash({"command": f"touch {marker}"}) == ("Command not allowed: touch", True)
    assert not marker.exists()
    assert shell.bash({"command": "echo fine"}) == ("fine", False)


def test_background_refused_before_it_starts(make_shell, tmp_path):
    shell = make_shell(allowed_commands=["echo"])
    marker = tmp_path / "ran"
    assert shell.bash({"command": f"touch {marker}", "run_in_background": True}) == (
        "Command not allowed: touch", True)
    assert not marker.exists()
    assert shell.shells == []


def test_monitor_refused_before_it_starts(make_shell, tasks, tmp_path):
    shell = make_shell(tasks=tasks, allowed_commands=["tail"])
    marker = tmp_path / "ran"
    assert shell.monitor({"description": "x", "command": f"touch {marker}"}) == (
        "Command not allowed: touch", True)
    assert not marker.exists()
    assert tasks.entries() == []


def test_validator_sees_command_and_directory_in_all_paths(make_shell, tasks, tmp_path):
    asked = []

    def validator(command, cwd):
        asked.append((command, cwd))
        return "refused by the loadguard"

    shell = make_shell(tasks=tasks, validator=validator)
    other = str(tmp_path / "wt")
    expected = ("Command refused by the loadguard", True)
    assert shell.bash({"command": "make"}) == expected
    assert shell.bash({"command": "make bg", "run_in_background": True}) == expected
    assert shell.bash({"command": "make wt"}, {"working_directory": other}) == expected
    assert shell.monitor({"description": "d", "command": "tail -f log"}) == expected
    assert asked == [("make", str(tmp_path)), ("make bg", str(tmp_path)), ("make wt", other),
                     ("tail -f log", str(tmp_path))]


def test_validator_denied_without_reason(make_shell):
    shell = make_shell(validator=lambda command, cwd: False)
    assert shell.bash({"command": "ls"}) == ("Command denied", True)


def test_validator_allows(make_shell):
    shell = make_shell(validator=lambda command, cwd: True)
    assert shell.bash({"command": "echo allowed"}) == ("allowed", False)
