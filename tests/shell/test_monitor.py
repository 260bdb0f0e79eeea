"""monitor: stdout lines as event notifications, batching, bursts, timeouts, ends."""
from __future__ import annotations

import time

import pytest

from shell.shell_helpers import gone, wait_until

EVENT = ("<task-notification>\n<task-id>monitor_1</task-id>\n<summary>Monitor event: \"{desc}\"</summary>\n"
         "<event>{lines}</event>\n</task-notification>")


def collect(tasks, until, timeout=5.0, recipient="main"):
    """Notifications for ``recipient`` until one contains ``until`` (bounded)."""
    got = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got += tasks.notifications(recipient, block=True, timeout=max(0.01, deadline - time.monotonic()))
        if any(until in note for note in got):
            return got
    raise AssertionError(f"no notification with {until!r} in {got}")


@pytest.fixture
def watch(make_shell, tasks):
    return make_shell(tasks=tasks, monitor_min_timeout=0.1,
                      monitor_options={"batch_window": 0.2, "burst_limit": 50, "burst_window": 1.0})


def test_started_text(watch):
    assert watch.monitor({"description": "d", "command": "sleep 5", "timeout_ms": 60000}) == (
        "Monitor started (task monitor_1, expires in 1m unless the source ends first). You will be "
        "notified on each event.", False)


def test_lines_become_events_and_exit_ends_the_watch(watch, tasks):
    watch.monitor({"description": "the build", "command": "echo 'step -> one'; sleep 0.5; echo two",
                   "timeout_ms": 10000})
    notes = collect(tasks, "Monitor stream ended")
    assert notes == [EVENT.format(desc="the build", lines="step -&gt; one"),
                     EVENT.format(desc="the build", lines="two"),
                     "<task-notification>\n<task-id>monitor_1</task-id>\n<status>completed</status>\n"
                     "<summary>Monitor stream ended</summary>\n</task-notification>"]
    entry = tasks.get("monitor_1")
    assert (entry.kind, entry.status) == ("monitor", "completed")


def test_lines_close_together_are_batched(watch, tasks):
    watch.monitor({"description": "b", "command": "echo a; echo b; sleep 0.05; echo c; sleep 0.6; "
                                                  "echo d", "timeout_ms": 10000})
    notes = collect(tasks, "Monitor stream ended")
    events = [n for n in notes if "<event>" in n]
    assert events == [EVENT.format(desc="b", lines="a\nb\nc"), EVENT.format(desc="b", lines="d")]


def test_stderr_is_not_an_event_but_readable(watch, tasks):
    watch.monitor({"description": "e", "command": "echo oops >&2; exit 3", "timeout_ms": 10000})
    notes = collect(tasks, "Monitor stream ended")
    assert notes == ["<task-notification>\n<task-id>monitor_1</task-id>\n<status>failed</status>\n"
                     "<summary>Monitor stream ended (exit code 3)</summary>\n</task-notification>"]
    text, _ = watch.bash_output({"bash_id": "monitor_1"})
    assert text == "<status>failed</status>\n<exit_code>3</exit_code>\n<stdout>\noops\n</stdout>"


def test_a_flooding_monitor_is_stopped_with_a_notice(watch, tasks):
    watch.monitor({"description": "flood", "command": "yes spam", "timeout_ms": 10000})
    notes = collect(tasks, "Monitor stopped")
    assert notes[-1] == EVENT.format(
        desc="flood", lines="[Monitor stopped: more than 50 lines within 1s. Narrow the command's "
                            "output (for example with grep --line-buffered) and re-arm.]")
    assert len(notes) <= 2
    assert wait_until(lambda: tasks.get("monitor_1").status == "failed", 5)


def test_timeout_ends_the_watch(watch, tasks):
    started = time.monotonic()
    watch.monitor({"description": "slow", "command": "echo hi; sleep 100", "timeout_ms": 300})
    notes = collect(tasks, "timed out")
    assert time.monotonic() - started < 3
    assert notes == [EVENT.format(desc="slow", lines="hi"),
                     EVENT.format(desc="slow", lines="[Monitor timed out \u2014 re-arm if needed.]")]
    assert wait_until(lambda: tasks.get("monitor_1").status == "completed", 5)
    assert wait_until(lambda: gone(watch._runtime.monitors["monitor_1"].pid), 5)


def test_kill_shell_stops_a_monitor(watch, tasks):
    watch.monitor({"description": "tail", "command": "sleep 100 & sleep 100; wait",
                   "timeout_ms": 60000}, {"call": "toolu_3"})
    pid = watch._runtime.monitors["monitor_1"].pid
    assert watch.kill_shell({"shell_id": "monitor_1"}) == (
        "Successfully stopped task: monitor_1 (sleep 100 & sleep 100; wait)", False)
    notes = collect(tasks, "was stopped")
    assert notes == ["<task-notification>\n<task-id>monitor_1</task-id>\n<tool-use-id>toolu_3</tool-use-id>\n"
                     "<status>killed</status>\n<summary>Monitor \"tail\" was stopped</summary>\n"
                     "</task-notification>"]
    assert gone(pid)
    assert watch.kill_shell({"shell_id": "monitor_1"}) == (
        "Task monitor_1 is not running, so cannot be killed (status: killed)", True)


def test_events_go_to_the_callers_recipient(watch, tasks):
    watch.monitor({"description": "r", "command": "echo for-agent", "timeout_ms": 5000},
                  {"recipient": "agent_5"})
    notes = collect(tasks, "Monitor stream ended", recipient="agent_5")
    assert "for-agent" in notes[0]
    assert tasks.notifications("main") == []


def test_long_lines_are_cut(make_shell, tasks):
    shell = make_shell(tasks=tasks, monitor_options={"max_line_chars": 10})
    shell.monitor({"description": "l", "command": "printf 'abcdefghijklmnopq\\n'", "timeout_ms": 5000})
    notes = collect(tasks, "Monitor stream ended")
    assert "<event>abcdefghij ... [line truncated]</event>" in notes[0]


@pytest.mark.parametrize("timeout_ms, unattended, expected", [
    (None, False, 300), (600000, False, 600), (5000000, False, 1800), (5000000, True, 600),
    (10, False, 1), (1500, True, 1.5), ("bad", False, 300), (0, False, 300),
])
def test_timeout_clamps(make_shell, tasks, timeout_ms, unattended, expected):
    shell = make_shell(tasks=tasks, unattended=lambda: unattended)
    assert shell.monitor_seconds(timeout_ms) == expected


def test_unattended_is_asked_when_a_monitor_starts(make_shell, tasks):
    asked = []
    shell = make_shell(tasks=tasks, unattended=lambda: asked.append(1) or True)
    text, _ = shell.monitor({"description": "x", "command": "sleep 1", "timeout_ms": 3600000})
    assert asked == [1]
    assert "expires in 10m" in text


def test_monitor_needs_a_registry(make_shell):
    shell = make_shell()
    assert shell.monitor({"description": "x", "command": "true"}) == (
        "Error: monitor needs a task registry (tasks)", True)
    assert "monitor" not in shell.server.tool_names


def test_unknown_monitor_options_are_refused(make_shell, tasks):
    with pytest.raises(TypeError):
        make_shell(tasks=tasks, monitor_options={"batch": 1})


def test_stop_all_stops_monitors(watch, tasks):
    watch.monitor({"description": "m", "command": "sleep 100", "timeout_ms": 60000})
    monitor = watch._runtime.monitors["monitor_1"]
    watch.stop_all()
    assert monitor.status == "killed"
    assert gone(monitor.pid)
    assert "was stopped" in tasks.notifications()[-1]


def test_a_monitor_that_cannot_start(make_shell, tasks, tmp_path):
    shell = make_shell(tasks=tasks, working_directory=str(tmp_path / "missing"))
    text, is_error = shell.monitor({"description": "x", "command": "true"})
    assert is_error and text.startswith("Error: the command could not start:")
    entry = tasks.get("monitor_1")
    assert entry.status == "failed" and entry.error


def test_monitor_through_the_server(watch, tasks):
    result = watch.server.call_tool("monitor", {"description": "srv", "command": "echo via-server",
                                                "timeout_ms": 5000}, timeout=10)
    assert result["content"][0]["text"].startswith("Monitor started (task monitor_1,")
    notes = collect(tasks, "Monitor stream ended")
    assert "<event>via-server</event>" in notes[0]
