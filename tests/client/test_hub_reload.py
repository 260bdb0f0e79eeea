"""McpHub.reload: identical content restarts nothing, whichever way it was loaded, and the
result says why each server it did restart was restarted."""
from __future__ import annotations

import json
import sys

from raider_sync import McpConfig
from raider_sync.client.hub import McpHub

DEMO = {"command": sys.executable, "args": ["-m", "raider_sync.cli.demo"]}
BROKEN = {"command": "sh", "args": ["-c", "echo boom >&2; exit 1"]}


def write(folder, servers: dict) -> str:
    path = folder / ".mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return str(path)


def test_reloading_the_same_content_from_a_file_restarts_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    servers = {"a": DEMO, "b": {**DEMO, "env": {"X": "1"}}}
    with McpHub(McpConfig.from_dict({"mcpServers": servers})) as hub:
        pids = {client.name: client.pid for client in hub.clients}
        assert all(pids.values())
        result = hub.reload(McpConfig.load(write(tmp_path, servers)))
        assert result.kept == ["a", "b"] and not result.changed and result.reasons == {}
        assert {client.name: client.pid for client in hub.clients} == pids
        # and back again, and the file once more
        assert hub.reload({"mcpServers": servers}).kept == ["a", "b"]
        assert hub.reload(McpConfig.load(str(tmp_path / ".mcp.json"))).kept == ["a", "b"]


def test_the_result_says_why_each_server_was_restarted(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with McpHub(McpConfig.from_dict({"mcpServers": {
            "same": DEMO, "env": {**DEMO, "env": {"TOKEN": "old", "KEEP": "1"}},
            "args": DEMO, "broken": BROKEN, "gone": DEMO}})) as hub:
        new_servers = {"same": DEMO, "env": {**DEMO, "env": {"TOKEN": "new", "KEEP": "1"}},
                       "args": {**DEMO, "args": [*DEMO["args"], "--verbose"]},
                       "broken": BROKEN, "new": DEMO}
        result = hub.reload(McpConfig.from_dict({"mcpServers": new_servers}))
        assert result.kept == ["same"]
        assert result.reasons == {"env": "changed: env (TOKEN)",  # names, never values
                                  "args": "changed: args", "broken": "retried: it had failed",
                                  "new": "new", "gone": "removed"}
        assert sorted(result.started) == ["args", "broken", "env", "new"]
        assert sorted(result.stopped) == ["args", "broken", "env", "gone"]
        hub.start_f().result(60)
        # the same servers loaded for another project: they would see another project dir
        other = tmp_path / "other"
        other.mkdir()
        moved = hub.reload(McpConfig.load(write(other, {"same": DEMO})))
        assert moved.reasons == {"same": "changed: env (CLAUDE_PROJECT_DIR)", "env": "removed",
                                 "args": "removed", "broken": "removed", "new": "removed"}


def test_a_plan_starts_and_stops_nothing_itself():
    """hub_reload.plan only works out what a reload does; the hub starts and stops."""
    from raider_sync.client import hub_reload
    from raider_sync.client.server import McpServer

    old = {spec.name: McpServer(spec) for spec in McpConfig.from_dict(
        {"mcpServers": {"kept": DEMO, "gone": DEMO}}).servers}
    new = McpConfig.from_dict({"mcpServers": {"kept": DEMO, "new": DEMO}})
    plan = hub_reload.plan(old, new, McpServer)
    assert plan.clients["kept"] is old["kept"] and list(plan.clients) == ["kept", "new"]
    assert plan.retired == [old["gone"]] and plan.stop_reasons() == {"gone": "removed by a reload"}
    assert plan.result() == hub_reload.ReloadResult(["kept"], ["new"], ["gone"],
                                                    {"new": "new", "gone": "removed"})
    assert [client.status for client in [*old.values(), plan.clients["new"]]] == \
        ["configured"] * 3
