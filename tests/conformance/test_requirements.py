"""Each conformance harness run as a whole: it ran exactly the scenarios it names (a new
harness pin that runs others makes this say so) and every harness process of it gave a
passing verdict. The ``--requirements 2026-07-28`` run (every scenario the revision requires,
authorization included, plus the extensions it runs unscored) must also report no failure and
no warning; its scenarios are judged one by one in test_conformance_core.py and tests/auth."""
from __future__ import annotations

import pytest

from conformance.harness import RUNS, TEST_TIMEOUT, runs


@pytest.mark.timeout(TEST_TIMEOUT)
@pytest.mark.parametrize("name", runs())
def test_the_run_ran_its_scenarios_and_passed(conformance_runs, name):
    outcome = conformance_runs(name)
    output = outcome.output[-4000:]
    assert sorted(outcome.scenarios) == sorted(RUNS[name].scenarios), output
    failed = {args: code for args, (code, _output) in outcome.processes.items() if code != 0}
    assert not failed, f"{failed}\n{output}"
    for args, (_code, process_output) in outcome.processes.items():
        if args.startswith("--requirements"):
            assert "0 failed, 0 warnings" in process_output, output
