"""McpHub: every configured server together: parallel start, routing, reload, stop."""
from __future__ import annotations

import sys
import threading
import time

import psutil
import pytest

from raider_sync import BashTools, McpConfig
from raider_sync.client.hub import McpHub, ReloadResult
from raider_sync.errors import NotConnected, ToolTimeout, UnknownServer, UnknownTool
from raider_sync.serve.resources import Resources
from raider_sync.serve.toolserver import ToolServer

from conftest import FAKE_SERVER, SDK_SERVER, config_of

DEMO = {"command": sys.executable, "args": ["-m", "raider_sync.cli.demo"]}
SDK = {"command": sys.executable, "args": [SDK_SERVER, "stdio"]}
BROKEN = {"command": "sh", "args": ["-c", "echo boom >&2; exit 1"]}
# Waits (bounded) until the file $GATE exists, then becomes the demo server.
GATED_DEMO = {"command": "sh", "args": [
    "-c", 'i=0; while [ ! -e "$GATE" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; '
          f'exec "{sys.executable}" -m raider_sync.cli.demo']}


class Recorder:
    """on_status events as (name, status, monotonic time), with a way to wait for some."""

    def __init__(self):
        self.events: list[tuple[str, str, float]] = []
        self._cond = threading.Condition()

    def __call__(self, server) -> None:
        with self._cond:
            self.events.append((server.name, server.status, time.monotonic()))
            self._cond.notify_all()

    def wait_for(self, predicate, timeout: float = 60) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: predicate(self.statuses()), timeout)

    def statuses(self) -> dict[str, str]:
        return {name: status for name, status, _ in self.events}

    def first(self, name: str, status: str) -> float:
        return next(t for n, s, t in self.events if n == name and s == status)


@pytest.fixture
def hubs():
    """Make hubs that are stopped after the test."""
    made: list[McpHub] = []

    def make(servers: dict, **options) -> McpHub:
        options.setdefault("kill_grace", 0.5)
        hub = McpHub(config_of(servers), **options)
        made.append(hub)
        return hub

    yield make
    for hub in made:
        hub.stop()


def text_of(result: dict) -> str:
    return "\n".join(block["text"] for block in result["content"] if block["type"] == "text")


# -- start ----------------------------------------------------------------------------------

def test_one_slow_and_one_failing_server_hold_up_no_other(hubs, everything_js, tmp_path):
    gate = tmp_path / "gate"
    recorder = Recorder()
    hub = hubs({"everything": {"command": "node", "args": [everything_js, "stdio"]},
                "sdk": SDK, "demo": DEMO, "broken": BROKEN,
                "slow": {**GATED_DEMO, "env": {"GATE": str(gate)}}}, on_status=recorder)
    started = hub.start_f()
    fast = ("everything", "sdk", "demo")
    # the others settle while the slow one still waits at its gate
    assert recorder.wait_for(lambda s: all(s.get(n) == "connected" for n in fast)
                             and s.get("broken") == "failed")
    assert not started.done()
    assert hub.client("slow").status == "starting"
    assert "boom" in hub.client("broken").reason
    assert hub.call_tool("mcp__demo__echo", {"message": "while slow starts"})["content"][0][
        "text"] == "while slow starts"
    gate.touch()
    assert started.result(60) is hub
    assert hub.statuses() == {"everything": "connected", "sdk": "connected", "demo": "connected",
                              "broken": "failed", "slow": "connected"}
    slow_at = recorder.first("slow", "connected")
    assert all(recorder.first(name, "connected") < slow_at for name in fast)
    assert recorder.first("broken", "failed") < slow_at
    # all of them started at once, not one after the other
    starts = [recorder.first(name, "starting") for name in hub.statuses()]
    assert max(starts) < min(recorder.first(name, "connected") for name in fast)
    assert hub.start_f().result(1) is hub  # again: nothing is started twice
    assert recorder.events.count(("slow", "connected", slow_at)) == 1


def test_start_blocking_and_context_manager_stop_clients_and_mounted(hubs):
    local = ToolServer("local")
    local.add_tool("hello", lambda: "hi")
    with McpHub(config_of({"demo": DEMO}), kill_grace=0.5) as hub:
        hub.mount(local)
        assert hub.statuses() == {"demo": "connected"}
        pid = hub.client("demo").pid
        assert psutil.pid_exists(pid)
        assert text_of(hub.call_tool("hello")) == "hi"
    assert hub.statuses() == {"demo": "stopped"}
    assert local.status == "stopped"
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    hub.stop()  # again is fine


# -- tools and calls ------------------------------------------------------------------------

def test_tools_and_calls_are_routed_by_name(hubs):
    hub = hubs({"sdk": SDK, "demo": DEMO, "broken": BROKEN})
    local = hub.mount(ToolServer("local"))
    local.add_tool("shout", lambda args: args["text"].upper(), input_schema={
        "type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
    assert hub.mount(local) is local and hub.mounted == [local]  # mounted once
    hub.start()
    names = [tool["name"] for tool in hub.tools()]
    assert names == hub.tool_names
    assert {"mcp__sdk__add", "mcp__sdk__echo", "mcp__demo__echo", "mcp__demo__add"} <= set(names)
    assert names[-1] == "shout" and not any(n.startswith("mcp__broken__") for n in names)
    assert all(n.startswith(("mcp__sdk__", "mcp__demo__")) for n in names[:-1])

    assert text_of(hub.call_tool("mcp__sdk__add", {"a": 1, "b": 2})) == "3"
    assert text_of(hub.call_tool_f("mcp__demo__add", {"a": 1, "b": 2.5}).result(30)) == "3.5"
    assert text_of(hub.call_tool("shout", {"text": "hey"})) == "HEY"
    assert hub.call_tool("shout", {})["isError"] is True
    assert hub.route("mcp__sdk__echo") is hub.client("sdk")
    with pytest.raises(NotConnected, match="broken"):
        hub.call_tool("mcp__broken__anything", {})
    with pytest.raises(UnknownTool, match="nope"):
        hub.call_tool("mcp__sdk__nope", {})
    with pytest.raises(UnknownTool):
        hub.call_tool("nope", {})
    assert isinstance(hub.call_tool_f("nope").exception(1), UnknownTool)
    with pytest.raises(ToolTimeout):
        hub.call_tool("mcp__sdk__slow", {"seconds": 20}, timeout=0.3)
    hub.unmount(local)
    assert "shout" not in hub.tool_names and local.status == "connected"
    local.close()


def test_calls_from_many_threads_while_reloading(hubs):
    hub = hubs({"demo": DEMO})
    hub.start()
    answers: list[str] = []
    errors: list[BaseException] = []

    def caller(n: int) -> None:
        try:
            for i in range(5):
                answers.append(text_of(hub.call_tool("mcp__demo__add", {"a": n, "b": i})))
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=caller, args=(n,), name=f"caller-{n}") for n in range(8)]
    for thread in threads:
        thread.start()
    result = hub.reload(config_of({"demo": DEMO, "sdk": SDK}))
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert sorted(answers, key=float) == sorted((f"{n + i:g}" for n in range(8) for i in range(5)),
                                                key=float)
    assert result.kept == ["demo"] and result.started == ["sdk"]
    assert hub.start_f().result(60).statuses() == {"demo": "connected", "sdk": "connected"}


# -- reload ---------------------------------------------------------------------------------

def test_reload_keeps_unchanged_clients_and_replaces_the_rest(hubs):
    hub = hubs({"keep": DEMO, "change": DEMO, "drop": DEMO, "broken": BROKEN})
    hub.start()
    before = {client.name: client for client in hub.clients}
    pids = {name: client.pid for name, client in before.items()}
    fingerprints = {name: client.fingerprint for name, client in before.items()}
    assert all(pids[name] for name in ("keep", "change", "drop"))

    result = hub.reload(config_of({"keep": DEMO, "change": {**DEMO, "env": {"CHANGED": "1"}},
                                   "broken": BROKEN, "added": DEMO}))
    assert isinstance(result, ReloadResult) and result.changed
    assert result.kept == ["keep"]
    assert sorted(result.started) == ["added", "broken", "change"]
    assert sorted(result.stopped) == ["broken", "change", "drop"]
    assert [c.name for c in hub.clients] == ["keep", "change", "broken", "added"]

    hub.start_f().result(60)
    after = {client.name: client for client in hub.clients}
    assert after["keep"] is before["keep"] and after["keep"].pid == pids["keep"]
    assert after["change"] is not before["change"]
    assert after["change"].pid not in (None, pids["change"])
    assert after["change"].fingerprint != fingerprints["change"]
    assert after["added"].status == "connected" and after["added"].pid
    assert before["change"].status == before["drop"].status == "stopped"
    for name in ("change", "drop"):
        assert not psutil.pid_exists(pids[name]) or \
            psutil.Process(pids[name]).status() == psutil.STATUS_ZOMBIE
    assert after["broken"] is not before["broken"]  # a failed server is retried
    assert text_of(hub.call_tool("mcp__added__echo", {"message": "new"})) == "new"
    with pytest.raises(UnknownTool):
        hub.call_tool("mcp__drop__echo", {"message": "gone"})

    again = hub.reload(config_of({"keep": DEMO, "change": {**DEMO, "env": {"CHANGED": "1"}},
                                  "added": DEMO}))
    assert again.kept == ["keep", "change", "added"] and again.started == []
    assert again.stopped == ["broken"]


def test_reload_before_start_starts_nothing(hubs):
    hub = hubs({"demo": DEMO})
    result = hub.reload(config_of({"demo": DEMO, "sdk": SDK}))
    assert result == ReloadResult(kept=["demo"], started=["sdk"], stopped=[], reasons={"sdk": "new"})
    assert hub.statuses() == {"demo": "configured", "sdk": "configured"}
    assert hub.start_f().result(60).statuses() == {"demo": "connected", "sdk": "connected"}
    unchanged = hub.reload(hub.config)
    assert not unchanged.changed and unchanged.kept == ["demo", "sdk"]


def test_resources_follow_the_hub_through_reload(hubs):
    hub = hubs({"demo": DEMO})
    res = Resources(servers=lambda: hub.clients)
    hub.mount(res.tool_server)
    hub.start()
    assert [i["uri"] for i in res.list()] == ["demo://guide.md"]
    assert text_of(hub.call_tool("read_mcp_resource", {"server": "demo", "uri": "demo://guide.md"})
                   ).startswith("# raider_sync demo")
    hub.reload(config_of({"sdk": SDK}))
    hub.start_f().result(60)
    assert [(i["server"], i["uri"]) for i in res.list()] == [("sdk", "test://hello")]
    assert res.attachments("@sdk:test://hello @demo:demo://guide.md") == [
        res.attachments("@sdk:test://hello")[0]]
    hub.stop()
    assert res.tool_server.status == "stopped"  # mounted: stopped with the hub


# -- stop -----------------------------------------------------------------------------------

def test_stop_is_parallel_and_bounded_by_kill_grace(hubs):
    stubborn = {"command": sys.executable, "args": [FAKE_SERVER, "ignore-term"]}
    hub = hubs({f"stubborn{i}": stubborn for i in range(3)}, kill_grace=0.5)
    hub.start()
    pids = [client.pid for client in hub.clients]
    assert all(pids) and hub.statuses() == {f"stubborn{i}": "connected" for i in range(3)}
    spans = {}
    for client in hub.clients:  # record when each server's stop begins and ends
        def timed_stop(client=client, stop=client.stop):
            began = time.monotonic()
            stop()
            spans[client.name] = (began, time.monotonic())
        client.stop = timed_stop
    hub.stop()
    # each needs stdin-close grace + SIGTERM grace (it ignores both) before SIGKILL, and
    # all three stops were under way at once: every one began before any ended
    assert len(spans) == 3
    assert all(end - began >= 0.9 for began, end in spans.values()), spans
    assert max(b for b, _ in spans.values()) < min(e for _, e in spans.values()), spans
    assert set(hub.statuses().values()) == {"stopped"}
    assert not [p for p in pids if psutil.pid_exists(p)
                and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]


# -- naming ---------------------------------------------------------------------------------

def test_clients_by_name_or_key_and_the_config_forms():
    config = config_of({"plugin:kit:docs": DEMO, "sdk": SDK})
    hub = McpHub(config)
    assert [c.name for c in hub.clients] == ["plugin:kit:docs", "sdk"]
    assert hub.client("plugin:kit:docs") is hub.client("plugin_kit_docs")
    with pytest.raises(UnknownServer) as info:
        hub.client("nope")
    assert str(info.value) == 'Server "nope" not found. Available servers: plugin:kit:docs, sdk'
    assert hub.statuses() == {"plugin:kit:docs": "configured", "sdk": "configured"}
    assert hub.tools() == [] and hub.tool_names == []
    with pytest.raises(NotConnected):
        hub.call_tool("mcp__sdk__echo", {"message": "not yet"})
    from_dict = McpHub({"mcpServers": {"demo": DEMO}})
    assert isinstance(from_dict.config, McpConfig) and from_dict.statuses() == {"demo": "configured"}
    with pytest.raises(TypeError, match="McpConfig"):
        McpHub(["demo"])  # type: ignore[arg-type]
    hub.stop()
    from_dict.stop()


def test_stopping_the_hub_closes_mounted_shell_tools(tmp_path):
    shell = BashTools(working_directory=str(tmp_path))
    hub = McpHub({"mcpServers": {}})
    hub.mount(shell.server)
    result = hub.call_tool("bash", {"command": "sleep 30", "run_in_background": True})
    assert not result.is_error and "bash_1" in result.text
    assert shell.background_pids()
    hub.stop()  # the leak guard fails the test if the shell's threads or processes survive
    assert shell.background_pids() == []
    assert shell.bash({"command": "echo late"})[1] is True  # closed: refused
