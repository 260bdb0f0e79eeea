"""``protocol: auto`` against a handshake-era server that never answers server/discover: the
start does not stall in silence, the stall names the fix, and the verdict outlives the
process (raider_sync.client.eras.verdicts), in a cache that concurrent processes, corrupt files and
unwritable folders cannot break.

No real server at hand ignores an unknown request (server-everything, the SDK's and
FastMCP's servers answer -32601), so tests/fakes/fake_server.py plays one (``deaf``)."""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
import time

import pytest

from raider_sync import McpServer
from raider_sync.client.eras import negotiate, verdicts

from conftest import fake_spec, run_script

WAIT = 30.0


def warnings_of(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def seen_methods(server: McpServer) -> list[str]:
    seen = json.loads(server.call_tool("mcp__fake__seen", {}).text)
    return [message["method"] for message in seen]


def test_a_server_ignoring_discover_starts_within_seconds_and_says_how_to_skip_the_probe(
        caplog):
    caplog.set_level(logging.WARNING, logger="raider_sync")
    server = McpServer(fake_spec("deaf"), kill_grace=0.3)
    try:
        began = time.monotonic()
        server.start_f().result(WAIT)
        took = time.monotonic() - began
        assert server.status == "connected", server.reason
        assert server.era == "legacy"
        # the probe's own limit is 20 s here (two thirds of the 30 s start): the ping after
        # it shows the server reads requests and ignores this one
        assert took < 10, f"the start took {took:.1f} s"
        assert seen_methods(server)[:3] == ["server/discover", "ping", "initialize"]
        said = [m for m in warnings_of(caplog) if "server/discover" in m]
        assert said, warnings_of(caplog)
        assert "'fake'" in said[0] and '"protocol": "legacy"' in said[0]
        assert negotiate.remembered(server.fingerprint) == "legacy"
    finally:
        server.stop()


def test_a_silent_start_is_logged_while_it_waits(caplog):
    """A server that answers nothing before initialize (not even a ping) may be one still
    starting: the probe waits its time, and says so after a few seconds."""
    caplog.set_level(logging.WARNING, logger="raider_sync")
    server = McpServer(fake_spec("deaf-until-initialize"), kill_grace=0.3,
                       startup_timeout_ms=6000, probe_timeout=3)  # a 4 s probe
    try:
        server.start_f().result(WAIT)
        assert server.status == "connected", server.reason
        assert server.era == "legacy"
        said = warnings_of(caplog)
        waiting = [m for m in said if "no answer to server/discover after 3 s" in m]
        assert waiting, said
        assert "'fake'" in waiting[0] and '"protocol": "legacy"' in waiting[0]
        assert any("had no answer within" in m and '"protocol": "legacy"' in m
                   for m in said), said
    finally:
        server.stop()


def test_the_verdict_outlives_the_process(era_cache):
    """Two processes in a row, as two ``raider-sync call`` runs: the second starts the
    server with initialize alone."""
    body = """
        began = time.monotonic()
        with McpServer(fake_spec("deaf"), kill_grace=0.3) as server:
            took = time.monotonic() - began
            seen = json.loads(server.call_tool("mcp__fake__seen", {}).text)
            print(json.dumps({"era": server.era, "took": took,
                              "methods": [m["method"] for m in seen]}))
    """
    first = run_script(body)
    assert first["era"] == "legacy" and "server/discover" in first["methods"]
    assert len(os.listdir(era_cache)) == 1
    second = run_script(body)
    assert second["era"] == "legacy"
    assert "server/discover" not in second["methods"], second
    assert second["methods"][0] == "initialize"


def test_the_cache_is_off_or_moved_by_its_variable(monkeypatch, tmp_path):
    monkeypatch.setenv(verdicts.ENV, "off")
    assert verdicts.folder() is None
    verdicts.keep("stdio:x:1", "legacy")
    assert verdicts.recall("stdio:x:1") == "legacy", "kept in memory for the process"
    assert os.listdir(tmp_path) == []
    monkeypatch.setenv(verdicts.ENV, str(tmp_path / "moved"))
    assert verdicts.recall("stdio:x:1") is None, "another folder, another cache"
    verdicts.keep("stdio:x:1", "modern")
    assert len(os.listdir(tmp_path / "moved")) == 1
    monkeypatch.delenv(verdicts.ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert verdicts.folder() == str(tmp_path / "xdg" / "raider_sync" / "eras")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert verdicts.folder() == str(tmp_path / ".cache" / "raider_sync" / "eras")


def only_file(folder) -> str:
    [name] = [n for n in os.listdir(folder) if n.endswith(".json")]
    return os.path.join(folder, name)


@pytest.mark.parametrize("content", ["{not json", "[]", '{"era": "legacy"}',
                                     '{"fingerprint": "stdio:x:1", "era": "medieval", "at": 1}',
                                     "\x00\xff"])
def test_a_corrupt_verdict_is_no_verdict_and_is_written_anew(era_cache, content):
    verdicts.keep("stdio:x:1", "legacy")
    path = only_file(era_cache)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(content)
    with verdicts._lock:
        verdicts._memory.clear()  # as another process would find it
    assert verdicts.recall("stdio:x:1") is None
    verdicts.keep("stdio:x:1", "modern")
    assert verdicts.recall("stdio:x:1") == "modern"
    with open(path, encoding="utf-8") as fh:
        assert json.load(fh)["era"] == "modern"


def test_an_old_verdict_is_probed_again(era_cache):
    verdicts.keep("stdio:x:1", "legacy")
    path = only_file(era_cache)
    with open(path, encoding="utf-8") as fh:
        record = json.load(fh)
    record["at"] -= verdicts.MAX_AGE + 60
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(record, fh)
    with verdicts._lock:
        verdicts._memory.clear()
    assert verdicts.recall("stdio:x:1") is None


def test_an_unreadable_cache_is_no_verdict_and_never_an_error(era_cache):
    verdicts.keep("stdio:x:1", "legacy")
    path = only_file(era_cache)
    os.unlink(path)
    os.mkdir(path)  # neither readable as a file nor replaceable by one, even for root
    assert verdicts.recall("stdio:x:1") == "legacy", "this process's own verdict"
    verdicts.keep("stdio:x:1", "modern")  # the write fails quietly
    assert verdicts.recall("stdio:x:1") == "modern"
    assert sorted(os.listdir(era_cache)) == [os.path.basename(path)], "no temporary file left"


def test_processes_writing_at_once_never_leave_half_a_verdict(era_cache):
    """Two processes write the same server's verdict over and over while this one reads it:
    every read finds a whole verdict."""
    writer = textwrap.dedent("""
        from raider_sync.client.eras import verdicts
        for n in range(2000):
            verdicts.keep("stdio:x:1", ("legacy", "modern")[n % 2])
    """)
    verdicts.keep("stdio:x:1", "legacy")
    path = only_file(era_cache)
    procs = [subprocess.Popen([sys.executable, "-c", writer]) for _ in range(2)]
    try:
        reads = 0
        while any(p.poll() is None for p in procs) or reads < 50:
            with open(path, encoding="utf-8") as fh:
                assert json.load(fh)["era"] in ("legacy", "modern")
            reads += 1
    finally:
        for proc in procs:
            assert proc.wait(60) == 0
    assert [n for n in os.listdir(era_cache) if n.endswith(".tmp")] == []
