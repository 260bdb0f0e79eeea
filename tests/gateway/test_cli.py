"""``raider-sync gateway``: config checks, exit codes, and serving with waitress until SIGTERM."""
from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest
import requests

from raider_sync.cli import build_parser
from raider_sync.gateway import cli

from conftest import free_port, wait_for_port
from gateway.support import ALICE

GOOD = {"public_url": "https://gw.example",
        "servers": [{"name": "files", "transport": "stdio", "command": "mcp-files"},
                    {"name": "remote", "url": "http://127.0.0.1:9/mcp"}],
        "keys": [{"id": "alice", "env": "GW_TEST_ALICE", "servers": ["files", "remote"]}]}


def write(tmp_path, data) -> str:
    path = tmp_path / "gateway.json"
    path.write_text(json.dumps(data))
    return str(path)


def test_the_gateway_subcommand_is_registered():
    args = build_parser().parse_args(["gateway", "--config", "g.json", "--listen", "0.0.0.0:9000"])
    assert args.run is cli.run
    assert (args.config, args.listen, args.threads) == ("g.json", "0.0.0.0:9000", 16)


def test_check_accepts_a_good_config(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("GW_TEST_ALICE", ALICE)
    assert cli.main(["--config", write(tmp_path, GOOD), "--check"]) == 0
    assert "ok (2 servers, 1 keys)" in capsys.readouterr().out


def test_a_bad_config_lists_every_problem_and_exits_2(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("GW_TEST_ALICE", raising=False)
    bad = {**GOOD, "servers": [{"name": "../x", "url": "http://u:p@h/"}]}
    assert cli.main(["--config", write(tmp_path, bad), "--listen", "127.0.0.1:0"]) == 2
    err = capsys.readouterr().err
    assert "servers[0] (../x).name" in err and "servers[0] (../x).url" in err
    assert "keys[0] (alice).servers: no server named 'files'" in err
    assert "u:p@" not in err


def test_check_json_for_scripts(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("GW_TEST_ALICE", ALICE)
    assert cli.main(["--config", write(tmp_path, GOOD), "--check", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "config": str(tmp_path / "gateway.json"), "ok": True, "problems": [],
        "servers": 2, "keys": 1}
    monkeypatch.delenv("GW_TEST_ALICE")
    assert cli.main(["--config", write(tmp_path, GOOD), "--check", "--json"]) == 2
    outcome = json.loads(capsys.readouterr().out)
    assert outcome["ok"] is False and any("alice" in p for p in outcome["problems"])


def test_the_server_is_waitress_unless_granian_is_asked_for(tmp_path, capsys, monkeypatch):
    assert build_parser().parse_args(["gateway"]).server == "waitress"
    assert build_parser().parse_args(["gateway", "--server", "granian"]).server == "granian"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["gateway", "--server", "uwsgi"])
    assert "invalid choice: 'uwsgi'" in capsys.readouterr().err
    # without the gateway-granian extra: exit 1, naming the extra
    monkeypatch.setitem(sys.modules, "granian", None)
    monkeypatch.setenv("GW_TEST_ALICE", ALICE)
    assert cli.main(["--config", write(tmp_path, GOOD), "--server", "granian",
                     "--listen", "127.0.0.1:0"]) == 1
    assert "pip install 'raider_sync[gateway-granian]'" in capsys.readouterr().err


def test_a_bad_listen_address_exits_2(tmp_path, capsys):
    assert cli.main(["--config", write(tmp_path, GOOD), "--listen", "nowhere"]) == 2
    assert "HOST:PORT" in capsys.readouterr().err


def test_it_serves_until_sigterm_and_logs_usage(tmp_path):
    port = free_port()
    usage = tmp_path / "usage.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "raider_sync.gateway", "--config", write(tmp_path, GOOD),
         "--listen", f"127.0.0.1:{port}", "--threads", "2", "--usage-log", str(usage)],
        env={"GW_TEST_ALICE": ALICE, "PATH": "/usr/bin:/bin"}, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    try:
        wait_for_port(port, timeout=20, proc=proc)
        url = f"http://127.0.0.1:{port}"
        listing = requests.get(f"{url}/v1/mcp/servers", headers={"X-Api-Key": ALICE}, timeout=10)
        assert [e["name"] for e in listing.json()["data"]] == ["files", "remote"]
        assert listing.json()["data"][1]["url"] == "https://gw.example/mcp/remote"
        down = requests.post(f"{url}/mcp/remote", headers={"X-Api-Key": ALICE}, json={}, timeout=10)
        assert down.status_code == 502  # nothing listens on the discard port
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    assert f"serving 2 servers on http://127.0.0.1:{port}" in out
    events = [json.loads(line) for line in usage.read_text().splitlines()]
    assert [(e["endpoint"], e["status"]) for e in events] == [("/v1/mcp/servers", 200),
                                                             ("/mcp/remote", 502)]
