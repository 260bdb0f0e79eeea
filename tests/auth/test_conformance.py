"""The MCP conformance harness's authorization scenarios, judged strictly.

Every authorization scenario of harness 0.1.16, and of 0.2.0-alpha.12 on the 2025-11-25 wire
(the 2026-07-28 ones forced onto it) and in the 2026-07-28 requirements run, against
``tests/conformance/client.py``, which hands them to ``conformance_client.py`` (raider_sync's
public API). The runs and the strict verdict are in tests/conformance/harness.py: no FAILURE,
no WARNING, no timeout, and exit status 0 unless the scenario expects the client to refuse.
"""
from __future__ import annotations

import pytest

from conformance.harness import TEST_TIMEOUT, assert_passes_strictly, cases


@pytest.mark.timeout(TEST_TIMEOUT)
@pytest.mark.parametrize("run,scenario", cases(auth=True))
def test_auth_scenario(conformance_runs, run, scenario):
    assert_passes_strictly(conformance_runs(run), scenario)
