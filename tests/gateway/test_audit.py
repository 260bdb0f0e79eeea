"""The audit log: a hash-chained JSON line per decision, ``gateway audit verify``, tampering,
torn writes, and several writers on one file."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import requests

from raider_sync.cli import main as raider_sync
from raider_sync.gateway.audit import GENESIS, AuditLog, line_hash, verify

from gateway.support import AUTH, BOB, Mcp, free_port, wait_until

WRITER = """
import sys
from raider_sync.gateway.audit import AuditLog
log = AuditLog(sys.argv[1])
sys.stdin.readline()  # both writers start together
for i in range(int(sys.argv[2])):
    log.record({"key": "k", "server": "s", "method": "POST", "status": 200, "tool": str(i)})
log.close()
"""


def records(path) -> list[dict]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def written(path, count: int) -> None:
    log = AuditLog(str(path))
    try:
        for i in range(count):
            log.record({"key": "alice", "server": "everything", "method": "POST", "status": 200,
                        "rpc": "tools/call", "tool": f"t{i}", "error": None})
    finally:
        log.close()


def test_decisions_through_the_gateway_in_front_of_server_everything(
        everything_http, make_gateway, tmp_path):
    path = tmp_path / "audit.jsonl"
    gw = make_gateway(
        [{"name": "everything", "url": everything_http},
         {"name": "down", "url": f"http://127.0.0.1:{free_port()}/mcp"}],
        keys=[{"id": "alice", "env": "ALICE", "servers": ["everything", "down"]},
              {"id": "bob", "env": "BOB", "servers": []}],
        limits={"requests_per_key": 1}, audit={"path": str(path)})
    client = Mcp(f"{gw.url}/mcp/everything")
    try:
        client.initialize()  # 2 requests: initialize, the initialized notification
        echoed = client.request("tools/call", {"name": "echo", "arguments": {"message": "s3cret"}})
        assert "s3cret" in echoed["result"]["content"][0]["text"]
        assert requests.post(client.url, json={}, timeout=10).status_code == 401
        bob = requests.post(client.url, headers={"Authorization": f"Bearer {BOB}"}, json={},
                            timeout=10)
        assert bob.status_code == 404  # bob may not use it: the same 404 as no such server
        with client.http.get(client.url, headers=client.headers(Accept="text/event-stream"),
                             stream=True, timeout=20) as held:  # the one request alice may hold
            assert held.status_code == 200
            over = client.post({"jsonrpc": "2.0", "id": 9, "method": "tools/list"})
            assert over.status_code == 429
        gw.wait_events(7)  # the stream's own, once its slot is free again
        assert requests.post(f"{gw.url}/mcp/down", headers=AUTH, json={},
                             timeout=10).status_code == 502
    finally:
        client.close()
    gw.wait_events(8)
    assert wait_until(lambda: len(path.read_bytes().splitlines()) == 8)
    lines = records(path)
    seen = [(r["decision"], r["reason"], r["status"], r["key"]) for r in lines]
    assert seen[:3] == [("allowed", None, 200, "alice"), ("allowed", None, 202, "alice"),
                        ("allowed", None, 200, "alice")]
    assert lines[2]["tool"] == "echo" and lines[2]["rpc"] == "tools/call"
    assert ("refused", "unauthorized", 401, None) in seen
    assert ("refused", "not_found", 404, "bob") in seen
    assert ("refused", "too_many_requests", 429, "alice") in seen
    assert ("failed", "upstream_unreachable", 502, "alice") in seen
    assert [r["seq"] for r in lines] == list(range(1, 9))
    assert {r["pid"] for r in lines} == {os.getpid()}
    assert "s3cret" not in path.read_text()  # no argument values unless opted in
    assert verify(str(path)).kind == "intact"
    assert raider_sync(["gateway", "audit", "verify", str(path)]) == 0


def test_argument_values_only_when_the_operator_opts_in(everything_http, make_gateway, tmp_path):
    path, usage = tmp_path / "audit.jsonl", tmp_path / "usage.jsonl"
    gw = make_gateway([{"name": "everything", "url": everything_http}],
                      audit={"path": str(path), "arguments": True}, usage_log=str(usage))
    client = Mcp(f"{gw.url}/mcp/everything")
    try:
        client.initialize()
        client.request("tools/call", {"name": "echo", "arguments": {"message": "s3cret"}})
    finally:
        client.close()
    gw.wait_events(3)
    assert wait_until(lambda: len(path.read_bytes().splitlines()) == 3)
    assert records(path)[2]["arguments"] == {"message": "s3cret"}
    assert "arguments" not in records(path)[0]  # only a tools/call has them
    assert "s3cret" not in usage.read_text()  # never in the usage file or callback
    assert all("arguments" not in e for e in gw.events)


def test_the_chain_starts_at_genesis_and_links_each_line(tmp_path):
    path = tmp_path / "audit.jsonl"
    written(path, 3)
    raw = path.read_bytes().splitlines()
    lines = records(path)
    assert lines[0]["prev"] == GENESIS
    assert [r["prev"] for r in lines[1:]] == [line_hash(line) for line in raw[:-1]]
    verdict = verify(str(path))
    assert (verdict.kind, verdict.records, verdict.head) == ("intact", 3, line_hash(raw[-1]))


def test_an_edited_byte_is_found_naming_the_line(tmp_path, capsys):
    path = tmp_path / "audit.jsonl"
    written(path, 4)
    data = path.read_bytes()
    second = data.index(b"\n") + 1
    at = data.index(b'"status":200', second)
    path.write_bytes(data[:at] + b'"status":201' + data[at + 12:])
    verdict = verify(str(path))
    assert (verdict.kind, verdict.line) == ("broken", 2) and "edited" in verdict.message
    assert raider_sync(["gateway", "audit", "verify", str(path)]) == 1
    assert "line 2: edited" in capsys.readouterr().out


def test_a_deleted_line_is_found_naming_the_line(tmp_path):
    path = tmp_path / "audit.jsonl"
    written(path, 4)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:1] + lines[2:]))
    verdict = verify(str(path))
    assert (verdict.kind, verdict.line) == ("broken", 2) and "removed" in verdict.message
    path.write_bytes(b"".join(lines[1:]))  # the first line gone
    assert (verify(str(path)).kind, verify(str(path)).line) == ("broken", 1)


def test_two_swapped_lines_are_found_naming_the_line(tmp_path):
    path = tmp_path / "audit.jsonl"
    written(path, 4)
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join([lines[0], lines[2], lines[1], lines[3]]))
    verdict = verify(str(path))
    assert (verdict.kind, verdict.line) == ("broken", 2) and "out of sequence" in verdict.message


def test_a_torn_last_line_is_reported_as_torn_and_the_next_writer_seals_it(tmp_path, capsys):
    path = tmp_path / "audit.jsonl"
    written(path, 3)
    whole = path.read_bytes()
    path.write_bytes(whole[:-25])  # the last write cut short by a crash
    verdict = verify(str(path))
    assert (verdict.kind, verdict.line, verdict.records) == ("torn", 3, 2)
    assert verdict.message.startswith("line 3: torn")
    assert raider_sync(["gateway", "audit", "verify", str(path)]) == 1
    assert "torn" in capsys.readouterr().out
    written(path, 2)  # a writer after the crash ends the torn line and chains to its bytes
    verdict = verify(str(path))
    assert verdict.kind == "intact" and verdict.records == 4, verdict.message
    assert verdict.notes == ["line 3: a torn write (a crash), sealed by line 4"]
    assert records_after_torn(path) == [4]


def records_after_torn(path) -> list[int]:
    out = []
    for number, line in enumerate(path.read_bytes().splitlines(), 1):
        try:
            if json.loads(line).get("after_torn"):
                out.append(number)
        except ValueError:
            pass
    return out


def test_an_unreadable_file_exits_2(tmp_path, capsys):
    assert raider_sync(["gateway", "audit", "verify", str(tmp_path / "none")]) == 2
    assert "cannot read" in capsys.readouterr().out


def test_two_processes_appending_at_once_keep_one_chain(tmp_path):
    path = tmp_path / "audit.jsonl"
    written(path, 1)  # an existing file: both chain onto it
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), "300"], env=env,
                              stdin=subprocess.PIPE) for _ in range(2)]
    try:
        for proc in procs:
            proc.stdin.write(b"go\n")
            proc.stdin.close()
        assert [proc.wait(60) for proc in procs] == [0, 0]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
    verdict = verify(str(path))
    assert (verdict.kind, verdict.records) == ("intact", 601), verdict.message
    pids = [r["pid"] for r in records(path)[1:]]
    assert set(pids) == {proc.pid for proc in procs}
    assert any(a != b for a, b in zip(pids, pids[1:], strict=False))  # both wrote while the other did


def test_two_writers_in_one_process_and_threads_keep_one_chain(tmp_path):
    path = tmp_path / "audit.jsonl"
    logs = [AuditLog(str(path)), AuditLog(str(path))]  # two open files, as two workers hold

    def append(log):
        for i in range(200):
            log.record({"status": 200, "tool": str(i)})

    threads = [threading.Thread(target=append, args=(log,)) for log in logs for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    for log in logs:
        log.close()
        log.close()
    logs[0].record({"status": 200})  # closed: nothing written
    verdict = verify(str(path))
    assert (verdict.kind, verdict.records) == ("intact", 800), verdict.message
