"""Tasks: entries, notifications, and other entries reached through bash_output/kill_shell."""
from __future__ import annotations

import threading
import time

import pytest

from raider_sync.shell import Tasks, task_notification
from raider_sync.shell.shells import Caller, Shell

from shell.shell_helpers import wait_until


def test_ids_per_kind():
    tasks = Tasks()
    assert [tasks.register("agent").id, tasks.register("agent").id, tasks.register("bash").id] == [
        "agent_1", "agent_2", "bash_1"]


def test_get_by_id_or_name():
    tasks = Tasks()
    first = tasks.register("agent", name="reviewer", description="review")
    assert tasks.get("agent_1") is first
    assert tasks.get("reviewer") is first
    tasks.finish("agent_1", "completed")
    second = tasks.register("agent", name="reviewer")
    assert tasks.get("reviewer") is second  # the running one
    tasks.finish(second.id, "failed", error="boom")
    assert tasks.get("reviewer") is second  # the latest
    assert tasks.get("nobody") is None


def test_entries_filter():
    tasks = Tasks()
    tasks.register("agent")
    tasks.register("bash")
    tasks.finish("bash_1", "completed")
    assert [e.id for e in tasks.entries()] == ["agent_1", "bash_1"]
    assert [e.id for e in tasks.entries("bash")] == ["bash_1"]
    assert [e.id for e in tasks.entries(running=True)] == ["agent_1"]


def test_taken_id_is_refused():
    tasks = Tasks()
    tasks.register("agent", task_id="agent_7")
    with pytest.raises(ValueError):
        tasks.register("agent", task_id="agent_7")
    assert tasks.new_id("agent") == "agent_1"


def test_finish_rules():
    tasks = Tasks()
    entry = tasks.register("agent", recipient="main")
    with pytest.raises(ValueError):
        tasks.finish(entry.id, "running")
    with pytest.raises(LookupError):
        tasks.finish("agent_9")
    tasks.finish(entry.id, "completed", report="done", notification="first")
    tasks.finish(entry.id, "failed", report="again", notification="second")
    assert (entry.status, entry.report) == ("completed", "done")
    assert entry.done.result(0) is entry
    assert tasks.notifications() == ["first"]


def test_stop_calls_the_entry_and_only_when_running():
    tasks = Tasks()
    asked = []
    tasks.register("agent", name="worker", stop=lambda: asked.append(1))
    tasks.register("agent")  # cannot be stopped
    assert tasks.stop("worker") is True
    assert tasks.stop("agent_2") is False
    assert tasks.stop("agent_9") is False
    tasks.finish("agent_1", "killed")
    assert tasks.stop("agent_1") is False
    assert asked == [1]


def test_notifications_per_recipient_and_callback():
    seen = []
    tasks = Tasks(on_notification=lambda recipient, text: seen.append((recipient, text)))
    tasks.notify("main", "a")
    tasks.notify("agent_2", "b")
    tasks.notify("main", "c")
    assert tasks.pending("main") == 2
    assert tasks.notifications("main") == ["a", "c"]
    assert tasks.notifications("main") == []
    assert tasks.notifications("agent_2") == ["b"]
    assert seen == [("main", "a"), ("agent_2", "b"), ("main", "c")]


def test_a_failing_callback_does_not_reach_the_notifier():
    def broken(recipient, text):
        raise RuntimeError("x")
    tasks = Tasks(on_notification=broken)
    tasks.notify("main", "kept")
    assert tasks.notifications() == ["kept"]


def test_blocking_notifications():
    tasks = Tasks()
    started = time.monotonic()
    assert tasks.notifications("main", block=True, timeout=0.1) == []
    assert 0.08 < time.monotonic() - started < 2
    timer = threading.Timer(0.1, lambda: tasks.notify("main", "late"))
    timer.start()
    try:
        assert tasks.notifications("main", block=True, timeout=5) == ["late"]
    finally:
        timer.join()


def test_task_notification_escapes():
    text = task_notification("bash_1", summary='Background command "a < b && c" completed',
                             status="completed", tool_use_id="toolu_1")
    assert text == ("<task-notification>\n<task-id>bash_1</task-id>\n<tool-use-id>toolu_1</tool-use-id>\n"
                    "<status>completed</status>\n<summary>Background command \"a &lt; b &amp;&amp; c\" "
                    "completed</summary>\n</task-notification>")


# -- the texts of a background shell's end ---------------------------------------------------

def _ended_shell(exit_code: int, description: str = "", call: str | None = None) -> Shell:
    shell = Shell("make test", description, "/", Caller(call=call))
    shell.id = "bash_4"
    shell.exit_code = exit_code
    return shell


@pytest.mark.parametrize("status, code, summary", [
    ("completed", 0, 'Background command "run tests" completed (exit code 0)'),
    ("failed", 2, 'Background command "run tests" failed with exit code 2'),
    ("killed", 143, 'Background command "run tests" was stopped'),
])
def test_notification_texts(shell, status, code, summary):
    text, label = shell.notification(_ended_shell(code, "run tests", "c4"), status)
    assert label == summary
    assert text == ("<task-notification>\n<task-id>bash_4</task-id>\n<tool-use-id>c4</tool-use-id>\n"
                    f"<status>{status}</status>\n<summary>{summary}</summary>\n</task-notification>")


def test_notification_uses_the_command_without_description(shell):
    text, label = shell.notification(_ended_shell(0), "completed")
    assert label == 'Background command "make test" completed (exit code 0)'
    assert "<tool-use-id>" not in text


def test_background_end_notifies_its_recipient(shell, tasks):
    shell.bash({"command": "exit 1", "run_in_background": True, "description": "check"},
               {"recipient": "agent_2", "call": "toolu_9"})
    notes = tasks.notifications("agent_2", block=True, timeout=5)
    assert notes == ["<task-notification>\n<task-id>bash_1</task-id>\n<tool-use-id>toolu_9</tool-use-id>\n"
                     "<status>failed</status>\n<summary>Background command \"check\" failed with exit "
                     "code 1</summary>\n</task-notification>"]
    assert tasks.notifications("main") == []
    entry = tasks.get("bash_1")
    assert (entry.kind, entry.status, entry.recipient, entry.call) == ("bash", "failed", "agent_2",
                                                                       "toolu_9")


def test_kill_notifies(shell, tasks):
    shell.bash({"command": "sleep 100", "run_in_background": True})
    shell.kill_shell({"shell_id": "bash_1"})
    notes = tasks.notifications("main", block=True, timeout=5)
    assert len(notes) == 1 and "<status>killed</status>" in notes[0]
    assert 'Background command "sleep 100" was stopped' in notes[0]


# -- agent-like entries ------------------------------------------------------------------------

def test_bash_output_of_an_agent(shell, tasks):
    agent = tasks.register("agent", name="reviewer", description="review the diff")
    assert shell.bash_output({"bash_id": "agent_1"}) == ("<status>running</status>", False)
    assert shell.bash_output({"bash_id": "reviewer"}) == ("<status>running</status>", False)
    tasks.finish(agent.id, "completed", report="Looks good.")
    assert shell.bash_output({"bash_id": "reviewer"}) == (
        "<status>completed</status>\n<output>\nLooks good.\n</output>", False)


def test_bash_output_of_a_failed_agent_gives_its_error(shell, tasks):
    tasks.register("agent")
    tasks.finish("agent_1", "failed", report="partial", error="the model refused")
    assert shell.bash_output({"bash_id": "agent_1"}) == (
        "<status>failed</status>\n<output>\nthe model refused\n</output>", False)


def test_bash_output_blocks_for_an_agent(shell, tasks):
    tasks.register("agent")
    timer = threading.Timer(0.2, lambda: tasks.finish("agent_1", "completed", report="done"))
    timer.start()
    try:
        future = shell.bash_output_f({"bash_id": "agent_1", "block": True, "timeout": 5})
        assert future.result(5) == ("<status>completed</status>\n<output>\ndone\n</output>", False)
    finally:
        timer.join()


def test_bash_output_block_for_an_agent_times_out(shell, tasks):
    tasks.register("agent")
    started = time.monotonic()
    assert shell.bash_output({"bash_id": "agent_1", "block": True, "timeout": 0.1}) == (
        "<status>running</status>", False)
    assert time.monotonic() - started < 2


def test_kill_shell_asks_an_agent_to_stop(shell, tasks):
    asked = threading.Event()
    tasks.register("agent", name="worker", description="refactor", stop=asked.set)
    assert shell.kill_shell({"shell_id": "worker"}) == (
        "Successfully stopped task: agent_1 (refactor)", False)
    assert asked.is_set()
    tasks.finish("agent_1", "killed")
    assert shell.kill_shell({"shell_id": "agent_1"}) == (
        "Task agent_1 is not running, so cannot be killed (status: killed)", True)


def test_kill_shell_of_an_agent_without_stop(shell, tasks):
    tasks.register("agent")
    assert shell.kill_shell({"shell_id": "agent_1"}) == ("Error: task agent_1 cannot be stopped", True)


def test_stop_all_ends_a_blocked_wait_for_an_agent(shell, tasks):
    tasks.register("agent")
    future = shell.bash_output_f({"bash_id": "agent_1", "block": True, "timeout": 60})
    started = time.monotonic()
    shell.stop_all()
    assert future.result(5) == ("<status>running</status>", False)
    assert time.monotonic() - started < 5


def test_a_blocked_wait_that_comes_as_the_tools_close_is_answered(shell, tasks):
    # the moment between the watcher's final stop and the end of close(): no timer runs
    # any more, so the wait must not rely on one
    tasks.register("agent")
    shell._runtime.reaper.stop(final=True)
    future = shell.bash_output_f({"bash_id": "agent_1", "block": True, "timeout": 60})
    assert future.result(5) == ("<status>running</status>", False)


def test_the_blocking_bash_output_waits_for_an_agent(shell, tasks):
    # agents run on threads of their own here: a blocking wait stops nothing (unlike the
    # seed's event loop), so the blocking method waits as its _f twin does
    entry = tasks.register("agent")

    def finish_once_waited_for() -> None:
        assert wait_until(lambda: entry.done._done_callbacks, 20)
        tasks.finish("agent_1", "completed", report="done")

    finisher = threading.Thread(target=finish_once_waited_for)
    finisher.start()
    try:
        assert shell.bash_output({"bash_id": "agent_1", "block": True, "timeout": 30}) == (
            "<status>completed</status>\n<output>\ndone\n</output>", False)
    finally:
        finisher.join(30)
