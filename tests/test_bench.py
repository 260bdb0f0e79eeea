"""The benchmark harness's own parts: rotated rounds, the raw-pipe floor, a child process, the
upstream leg's urllib3 rival, and a quick run of the serving leg against its three servers."""
from __future__ import annotations

import http.client
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:  # bench/ is a directory of the checkout, not an installed package
    sys.path.insert(0, ROOT)

from bench.common import SIZED_SERVER, rotated, run_child  # noqa: E402
from bench.floor import RawPipe  # noqa: E402


def test_rotated_rounds_start_one_way_further_each_time_and_keep_medians():
    order = []
    figures = {"a": iter([3.0, 1.0, 2.0]), "b": iter([(1.0, 10.0), (5.0, 30.0), (2.0, 20.0)])}

    def way(name):
        def run():
            order.append(name)
            return next(figures[name])
        return run

    medians = rotated({"a": way("a"), "b": way("b")}, 3)
    assert order == ["a", "b", "b", "a", "a", "b"]
    assert medians == {"a": 2.0, "b": (2.0, 20.0)}


def test_the_floor_drives_a_real_server_one_call_at_a_time_and_pipelined():
    floor = RawPipe([sys.executable, SIZED_SERVER])
    try:
        assert floor.call("text", {"size": 5000}) == floor.call("text", {"size": 5000})
        assert len(floor.call("text", {"size": 5000})) == 5000
        assert len(floor.times(3, "echo", {"message": "x"})) == 3
        assert floor.pipelined(4, 10, "echo", {"message": "x"}) > 0
        assert floor.call("echo", {"message": "after"}) == "after"  # no answer left behind
    finally:
        floor.close()
    assert floor.proc.returncode is not None


def test_a_size_child_reports_its_call_time_and_peak_growth():
    figures = run_child("bench.bench_sizes", ["child", "floor", str(100 * 1024)])
    assert figures["per_call"] > 0
    assert figures["growth"] >= 0


# -- the upstream leg's urllib3 rival keeps the rules of the pool it is measured against ----

@pytest.fixture
def fake_upstream():
    from gateway.support import running_upstream

    with running_upstream() as server:
        yield server


@pytest.mark.parametrize("reuse_pool", [False, True])
def test_the_urllib3_rival_reuses_sends_and_ends_as_the_gateway_pool_does(fake_upstream,
                                                                          monkeypatch, reuse_pool):
    from bench.upstream_urllib3 import Upstream

    from gateway.support import count_sends, wait_until

    sent = count_sends(monkeypatch)
    pool, url = Upstream(4, reuse_pool=reuse_pool), fake_upstream.url
    try:
        for _ in range(3):
            answer = pool.send("POST", f"{url}/echo", {"Content-Type": "application/json"}, b"{}",
                               connect=5, read=10)
            assert answer.status == 200 and answer.length is not None
            assert b'"method": "POST"' in answer.read()
            answer.close()
        assert len(fake_upstream.connections) == 1  # one keep-alive connection for all three
        assert len(sent) == 3 and sent[0].endswith(b"\r\n\r\n{}")  # head and body in one send
        answer = pool.send("GET", f"{url}/big", {}, None, connect=5, read=10)
        next(answer.chunks(1024))
        answer.close()
        assert wait_until(lambda: not fake_upstream.connections)  # half-read: closed, not pooled
        answer = pool.send("GET", f"{url}/sse-truncated", {}, None, connect=5, read=10)
        with pytest.raises(http.client.IncompleteRead):
            list(answer.chunks(1024))
        answer.close()
    finally:
        pool.close()


# -- the ownwork leg: an McpServer over an in-memory transport, and another checkout's code --

def test_the_instant_server_answers_a_call_on_the_callers_thread():
    from bench.instant import ARGS, TOOL, InstantServer

    with InstantServer() as server:
        assert server.status == "connected", server.reason
        assert server.call_tool(TOOL, ARGS).text == "hi"
        assert server.call_tool(TOOL, {"text": "other"}).text == "other"


def test_an_ownwork_child_measures_the_raider_sync_of_the_checkout_it_is_given(tmp_path):
    import shutil

    checkout = tmp_path / "other"
    shutil.copytree(os.path.join(ROOT, "raider_sync"), checkout / "raider_sync",
                    ignore=shutil.ignore_patterns("__pycache__"))
    figures = run_child("bench.bench_ownwork", ["child", "20", "2"], timeout=120,
                        raider_root=str(checkout))
    assert figures["raider_sync"] == str(checkout / "raider_sync")
    assert set(figures["samples"]) == {"call_tool", "call_tool_f().result()", "transport alone"}
    assert all(len(rounds) == 2 and all(us > 0 for us, _ in rounds)
               for rounds in figures["samples"].values())


# -- the serving leg: three servers, the same client ---------------------------------------

def test_the_serving_leg_measures_the_three_servers_quickly():
    done = subprocess.run([sys.executable, "-m", "bench", "--quick", "serving"], cwd=ROOT,
                          capture_output=True, text=True, timeout=100)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "== serving:" in done.stdout, done.stdout[-3000:]
    lines = done.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("== serving:"))
    assert lines[header + 1].split() == ["clients", "measure", "raider_sync", "SDK", "(uvicorn)",
                                         "ratio", "FastMCP", "(uvicorn)", "ratio"]
    rows = lines[header + 2:header + 8]
    assert [row.split()[:2] for row in rows[::3]] == [["1", "client"], ["16", "clients"]]
    for row in rows:  # every server's figure and both ratios, each a positive number
        figures = re.split(r"\s{2,}", row.strip())[-5:]
        numbers = [re.fullmatch(r"(\d+(?:\.\d+)?)(?: ms| us|x)?", f) for f in figures]
        assert all(numbers) and all(float(n.group(1)) > 0 for n in numbers), row
