"""The benchmark harness's own parts: rotated rounds, the raw-pipe floor, a child process."""
from __future__ import annotations

import os
import sys

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
