"""McpHub.reload while calls go on: a call to a server being replaced waits for the new one,
a call already sent to the old process is answered by it before it stops, and a call to a
removed server fails with UnknownTool once the reload has taken it away."""
from __future__ import annotations

import re
import sys
import threading

import psutil
import pytest

from raider_sync import ConnectionClosed, InvalidArgument, McpHub, NotConnected, UnknownTool

from conftest import FAKE_SERVER, config_of, poll

DEMO = {"command": sys.executable, "args": ["-m", "raider_sync.cli.demo"]}
# A well-behaved stdio server in a tenth of the demo's start-up CPU: the bulk of a big hub
PLAIN = {"command": sys.executable, "args": [FAKE_SERVER, "plain"]}
WAIT = 60.0  # the bound of every wait here; none is reached unless something is wrong


def changed(generation: int, entry: dict = DEMO) -> dict:
    return {**entry, "env": {"GENERATION": str(generation)}}


class Caller:
    """A thread calling echo on ``names`` in turn until told to stop; every outcome kept,
    with how many calls had ended and through how many reloads each one went (the test
    counts them in ``reloads``)."""

    def __init__(self, hub: McpHub, names: list[str], label: str):
        self.hub, self.names = hub, names
        self.outcomes: list[tuple[str, str, BaseException | str]] = []  # (tool, message, ...)
        self.spans: list[int] = []  # reloads during each call
        self.ended = self.reloads = 0
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"test-{label}-caller")
        self.thread.start()

    def _run(self) -> None:
        n = 0
        while not self._stop.is_set():
            tool = f"mcp__{self.names[n % len(self.names)]}__echo"
            message = f"call {n}"
            reloads = self.reloads
            try:
                outcome: BaseException | str = self.hub.call_tool(
                    tool, {"message": message}, timeout=WAIT).text
            except Exception as exc:  # noqa: BLE001 - judged by the test
                outcome = exc
            with self._cond:
                self.outcomes.append((tool, message, outcome))
                self.spans.append(self.reloads - reloads)
                self.ended += 1
                self._cond.notify_all()
            n += 1

    def wait_for_calls(self, count: int, what: str) -> None:
        """Until ``count`` more calls have ended (bounded)."""
        with self._cond:
            ended = self.ended
            assert self._cond.wait_for(lambda: self.ended >= ended + count, WAIT), what

    def stop(self) -> list[tuple[str, str, BaseException | str]]:
        self._stop.set()
        self.thread.join(WAIT)
        assert not self.thread.is_alive()
        return self.outcomes

    def failures(self) -> list[str]:
        return [f"{tool}: {type(o).__name__}: {o}" for tool, message, o in self.outcomes
                if o != message]


def gone(pid: int) -> bool:
    return not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_a_call_loop_goes_on_through_twenty_reloads_of_a_changed_server():
    with McpHub(config_of({"demo": DEMO}), kill_grace=0.1) as hub:
        caller = Caller(hub, ["demo"], "demo")
        try:
            caller.wait_for_calls(1, "a call before the reloads")
            for generation in range(1, 21):
                if generation == 10:
                    # halfway the server connects, the loop's calls are answered, and a
                    # call sure to be running on the old process at the reload (it reports
                    # progress from there) is answered from there
                    caller.wait_for_calls(2, "calls answered halfway")
                    old_pid = hub.client("demo").pid
                    running = threading.Event()
                    slow = hub.call_tool_f("mcp__demo__wait", {"seconds": 0.4, "steps": 4},
                                           timeout=WAIT,
                                           on_progress=lambda *_, r=running: r.set())
                    assert running.wait(WAIT)
                # else the new server is still starting, and the loop's call waits for it
                result = hub.reload(config_of({"demo": changed(generation)}))
                caller.reloads += 1
                assert result.reasons == {"demo": "changed: env (GENERATION)"}
                if generation == 10:
                    assert slow.result(WAIT).text.startswith("waited ")
                    assert gone(old_pid)
            caller.wait_for_calls(2, "calls to the last server")
        finally:
            outcomes = caller.stop()
        assert caller.failures() == []
        assert len(outcomes) >= 5
        assert max(caller.spans) >= 5, caller.spans  # a call waited through several reloads
        assert hub.statuses() == {"demo": "connected"}


def test_a_fifty_server_hub_reloaded_with_calls_running():
    # ten servers changed, ten removed and ten added, thirty kept; the first of each group
    # is the demo server, the others the plain fake (fifty demo servers would take most of
    # a minute of CPU to start)
    kept = [f"kept{i}" for i in range(30)]
    changing = [f"changing{i}" for i in range(10)]
    removed = [f"removed{i}" for i in range(10)]
    added = [f"added{i}" for i in range(10)]

    def entry(name: str) -> dict:
        return DEMO if name in ("kept0", "changing0", "removed0", "added0") else PLAIN

    before = {name: entry(name) for name in kept + changing + removed}
    after = {**{name: entry(name) for name in kept},
             **{name: changed(1, entry(name)) for name in changing},
             **{name: entry(name) for name in added}}
    with McpHub(config_of(before), kill_grace=0.1) as hub:
        old_pids = {client.name: client.pid for client in hub.clients}
        callers = {"kept": Caller(hub, kept, "kept"),
                   "changing": Caller(hub, changing, "changing"),
                   "removed": Caller(hub, removed, "removed")}
        try:
            for caller in callers.values():
                caller.wait_for_calls(2, "calls before the reload")
            result = hub.reload(config_of(after))
            # the reload has returned: a call to a removed server now fails at once
            removed_ended = callers["removed"].ended
            for caller in callers.values():
                caller.wait_for_calls(2, "calls after the reload")
        finally:
            outcomes = {label: caller.stop() for label, caller in callers.items()}
        assert sorted(result.started) == sorted(changing + added)
        assert sorted(result.stopped) == sorted(changing + removed)
        assert callers["kept"].failures() == []
        assert callers["changing"].failures() == []
        # removed: answered until the reload took them away, then UnknownTool, nothing else
        kinds = {type(o).__name__ for _, message, o in outcomes["removed"] if o != message}
        assert kinds == {"UnknownTool"}, callers["removed"].failures()
        late = outcomes["removed"][removed_ended + 1:]
        assert late and all(isinstance(o, UnknownTool) for _, _, o in late)
        assert "no server offers a tool named 'mcp__removed" in str(late[-1][2])

        hub.start_f().result(WAIT)
        assert set(hub.statuses().values()) == {"connected"} and len(hub.clients) == 50
        assert hub.call_tool("mcp__added0__echo", {"message": "new"}).text == "new"
        assert hub.call_tool("mcp__added3__echo", {"message": "new"}).text == "new"
        assert {name: hub.client(name).pid for name in kept} == {
            name: old_pids[name] for name in kept}
        assert all(gone(old_pids[name]) for name in changing + removed)


def test_an_answer_lost_past_the_drain_says_the_server_was_replaced():
    with McpHub(config_of({"demo": DEMO}), kill_grace=0.1) as hub:
        old = hub.client("demo")
        with pytest.raises(InvalidArgument, match="drain"):
            hub.reload(config_of({"demo": changed(1)}), drain=-1)
        assert hub.client("demo") is old  # refused before anything changed
        running = threading.Event()
        slow = hub.call_tool_f("mcp__demo__wait", {"seconds": 20, "steps": 200}, timeout=WAIT,
                               on_progress=lambda *_: running.set())
        assert running.wait(WAIT)
        hub.reload(config_of({"demo": changed(1)}), drain=0.2)
        why = "replaced by a reload; changed: env (GENERATION)"
        with pytest.raises(ConnectionClosed) as info:
            slow.result(WAIT)
        assert str(info.value) == f"MCP server 'demo' was stopped before it answered: {why}"
        assert old.status == "stopped" and old.reason.startswith(why)
        with pytest.raises(NotConnected, match=re.escape(f"(stopped: {why}")):
            old.call_tool("mcp__demo__echo", {"message": "to the old client"})


def test_stopping_the_hub_cuts_a_reloads_drain_short():
    with McpHub(config_of({"demo": DEMO}), kill_grace=0.1) as hub:
        old = hub.client("demo")
        running = threading.Event()
        slow = hub.call_tool_f("mcp__demo__wait", {"seconds": 20, "steps": 200}, timeout=WAIT,
                               on_progress=lambda *_: running.set())
        assert running.wait(WAIT)
        reloading = threading.Thread(target=hub.reload, args=(config_of({"demo": changed(1)}),),
                                     kwargs={"drain": WAIT}, name="test-reload")
        reloading.start()
        try:
            poll(lambda: hub.client("demo") is not old, WAIT, "the new server in place")
            assert not slow.done()  # drained: still running on the old process
            hub.stop()
            assert old.status == hub.client("demo").status == "stopped"
            with pytest.raises(ConnectionClosed, match="was stopped"):
                slow.result(WAIT)
        finally:
            reloading.join(WAIT)
        assert not reloading.is_alive()
