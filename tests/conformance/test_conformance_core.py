"""The MCP conformance harness as a test peer: every client scenario but authorization, on
the 2026-07-28 wire (in the revision's requirements run) and the 2025-11-25 one (harness
0.1.16 and 0.2.0-alpha.12), and the skills extension's, judged strictly: no FAILURE, no
WARNING, no timeout, the client's exit status 0 (tests/conformance/harness.py)."""
from __future__ import annotations

import pytest

from conformance.harness import TEST_TIMEOUT, assert_passes_strictly, cases


@pytest.mark.timeout(TEST_TIMEOUT)
@pytest.mark.parametrize("run,scenario", cases(auth=False))
def test_scenario_passes_strictly(conformance_runs, run, scenario):
    assert_passes_strictly(conformance_runs(run), scenario)
