"""The MCP conformance harness's server scenarios, judging a ToolServer served over HTTP.

The fixture (server_fixture.py: the reference "everything" server's tools, resources and
prompts, written on ToolServer's public API) is served by the project's own WSGI app under
waitress on a free port, in this process, once per module. Harness 0.2.0-alpha.12 runs the
scenarios against it: each spec wire in one harness process (``--suite all --spec-version V``
runs every scenario of that wire, one after another, in a few seconds), and the extension
scenarios, which no wire selects, one process each, a few side by side. Each run executes
once, on the first test that needs it; one test per scenario and wire reads its verdict, so a
failure names them. The suite's scheduler (tests/conftest.py) hands the tests of one run to
one worker, so that xdist spreads the runs and none executes twice.

A scenario passes strictly: it recorded checks, none of them FAILURE or WARNING (a scenario
that outlives the harness's per-scenario timeout records a FAILURE), and at least one
SUCCESS besides ``wire-schema-valid``, the check the harness adds to every scenario that
exchanged a message: a scenario whose own checks are all SKIPPED or INFO has judged nothing.

``EXPECTED`` names the scenarios that pass today. Every other one is xfail(strict=True) with
the reason in ``MISSING``: when a feature lands and its scenario passes, the XPASS fails the
suite until the scenario moves into ``EXPECTED``.
"""
from __future__ import annotations

import json
import os
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pytest

from raider_sync.serve.serving_http import wsgi_app
from raider_sync.serve.wsgi_server import Serving

from conformance.harness import harness_installed, run_harness
from conformance.server_fixture import fixture_server

V2025, V2026, EXTENSIONS = "2025-11-25", "2026-07-28", "extensions"
#: every scenario of each run, as ``list`` files them (harness 0.2.0-alpha.12)
SCENARIOS = {
    V2025: [
        "server-initialize", "server-session-lifecycle", "logging-set-level", "ping",
        "completion-complete", "tools-list", "tools-call-simple-text", "tools-call-image",
        "tools-call-audio", "tools-call-embedded-resource", "tools-call-mixed-content",
        "tools-call-with-logging", "tools-call-error", "tools-call-with-progress",
        "tools-call-sampling", "tools-call-elicitation", "json-schema-2020-12",
        "elicitation-sep1034-defaults", "server-sse-polling", "server-sse-multiple-streams",
        "elicitation-sep1330-enums", "resources-list", "resources-read-text",
        "resources-read-binary", "resources-templates-read", "resources-subscribe",
        "resources-unsubscribe", "prompts-list", "prompts-get-simple", "prompts-get-with-args",
        "prompts-get-embedded-resource", "prompts-get-with-image", "dns-rebinding-protection"],
    V2026: [
        "server-stateless", "completion-complete", "tools-list", "tools-call-simple-text",
        "tools-call-image", "tools-call-audio", "tools-call-embedded-resource",
        "tools-call-mixed-content", "tools-call-error", "tools-call-with-progress",
        "json-schema-2020-12", "server-sse-multiple-streams", "resources-list",
        "resources-read-text", "resources-read-binary", "resources-templates-read",
        "sep-2164-resource-not-found", "prompts-list", "prompts-get-simple",
        "prompts-get-with-args", "prompts-get-embedded-resource", "prompts-get-with-image",
        "dns-rebinding-protection", "caching", "http-header-validation",
        "http-custom-header-server-validation",
        *(f"input-required-result-{name}" for name in (
            "basic-elicitation", "basic-sampling", "basic-list-roots", "request-state",
            "multiple-input-requests", "multi-round", "missing-input-response",
            "non-tool-request", "result-type", "unsupported-methods", "tampered-state",
            "capability-check", "ignore-extra-params", "validate-input"))],
    EXTENSIONS: [
        "sep-2640-skills-directory", "sep-2640-skills-enumeration", "sep-2640-skills-manifest",
        *(f"tasks-{name}" for name in (
            "lifecycle", "capability-negotiation", "wire-fields", "request-state-removal",
            "mrtr-input", "request-headers", "dispatch-and-envelope", "status-notifications",
            "required-task-error", "mrtr-composition"))],
}

#: the scenarios that pass strictly today, by run
EXPECTED = {
    V2025: {
        "server-initialize", "ping", "tools-list", "tools-call-simple-text", "tools-call-image",
        "tools-call-audio", "tools-call-embedded-resource", "tools-call-mixed-content",
        "tools-call-error", "tools-call-with-progress", "json-schema-2020-12", "resources-list",
        "resources-read-text", "resources-read-binary", "prompts-list", "prompts-get-simple",
        "prompts-get-with-args", "prompts-get-embedded-resource", "prompts-get-with-image",
        "dns-rebinding-protection", "logging-set-level", "completion-complete",
        "tools-call-with-logging", "tools-call-sampling", "tools-call-elicitation",
        "elicitation-sep1034-defaults", "elicitation-sep1330-enums",
        "resources-templates-read", "server-session-lifecycle", "server-sse-polling",
        "server-sse-multiple-streams", "resources-subscribe", "resources-unsubscribe"},
    V2026: {
        "tools-list", "tools-call-simple-text", "tools-call-image", "tools-call-audio",
        "tools-call-embedded-resource", "tools-call-mixed-content", "tools-call-error",
        "tools-call-with-progress", "json-schema-2020-12", "server-sse-multiple-streams",
        "resources-list", "resources-read-text", "resources-read-binary",
        "sep-2164-resource-not-found", "prompts-list", "prompts-get-simple",
        "prompts-get-with-args", "prompts-get-embedded-resource", "prompts-get-with-image",
        "dns-rebinding-protection", "caching", "http-header-validation",
        "http-custom-header-server-validation", "input-required-result-unsupported-methods",
        "input-required-result-validate-input", "completion-complete", "server-stateless",
        "resources-templates-read",
        *(f"input-required-result-{name}" for name in (
            "basic-elicitation", "basic-sampling", "basic-list-roots", "request-state",
            "multiple-input-requests", "multi-round", "missing-input-response",
            "non-tool-request", "result-type", "tampered-state", "capability-check",
            "ignore-extra-params"))},
    EXTENSIONS: {name for name in SCENARIOS[EXTENSIONS]
                 if name != "tasks-status-notifications"},
}

#: why each scenario not in EXPECTED fails, by scenario (the same reason on every run)
MISSING = {
    "tasks-status-notifications": "the harness skips every check of it (its "
                                  "subscriptions/listen rewrite is pending)",
}

#: the harness's bound on one scenario (its timeout is a FAILURE of that scenario)
SCENARIO_TIMEOUT_MS = 20_000
PROCESS_TIMEOUT = 300
#: a run executes inside the first test that reads it
TEST_TIMEOUT = 600
AT_ONCE = 4
#: the harness's own check on the wire schema, added to every scenario that sent a message
WIRE_SCHEMA = "wire-schema-valid"
# <output dir>/server-<scenario>-<ISO time with ':' and '.' as '-'>/checks.json
_RESULT_DIR = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z$")


def processes(run: str) -> list[tuple[str, ...]]:
    """The harness processes of ``run``, each an argument list after ``server --url URL``."""
    if run == EXTENSIONS:
        return [("--scenario", name) for name in SCENARIOS[EXTENSIONS]]
    return [("--suite", "all", "--spec-version", run)]


@dataclass
class Outcome:
    """A run: the checks recorded, by scenario, and every harness process's output."""
    checks: dict[str, list]
    output: str


def _harness(url: str, args: tuple[str, ...], out: str) -> str:
    """One harness process, in its own process group (killed whole when it overruns); its
    output. Its exit status is not read: it fails whenever one scenario fails."""
    _, output = run_harness("0.2", ["server", "--url", url, "--timeout",
                                    str(SCENARIO_TIMEOUT_MS), "-o", out, *args],
                            out, PROCESS_TIMEOUT)
    return f"$ {' '.join(args)}\n{output}"


def execute(url: str, run: str, out: str) -> Outcome:
    """Run ``run`` against ``url`` with its results under ``out``; blocks until every harness
    process has ended (each bounded by PROCESS_TIMEOUT)."""
    with ThreadPoolExecutor(AT_ONCE, thread_name_prefix="conformance-server") as pool:
        outputs = list(pool.map(lambda args: _harness(url, args, out), processes(run)))
    checks: dict[str, list] = {}
    for name in os.listdir(out):
        match = _RESULT_DIR.match(name)
        path = os.path.join(out, name, "checks.json")
        if match and os.path.exists(path):
            with open(path, encoding="utf-8") as file:
                checks[match["scenario"]] = json.load(file)
    return Outcome(checks, "".join(outputs))


class Runs:
    """The runs against one served fixture: each executed on first use and kept."""

    def __init__(self, url: str, tmp_path_factory) -> None:
        self.url = url
        self._factory = tmp_path_factory
        self._done: dict[str, Outcome | BaseException] = {}
        self._lock = threading.Lock()

    def __call__(self, run: str) -> Outcome:
        with self._lock:
            if run not in self._done:
                try:
                    out = str(self._factory.mktemp(f"server-{run}"))
                    self._done[run] = execute(self.url, run, out)
                except Exception as exc:  # noqa: BLE001 - every test of the run reports it
                    self._done[run] = exc
            done = self._done[run]
        if isinstance(done, BaseException):
            raise AssertionError(f"the harness run {run} failed: {done}")
        return done


@pytest.fixture(scope="module")
def server_runs(tmp_path_factory):
    """The fixture served under waitress on a free port for the module's tests, with
    sessions for the handshake era's clients, and its harness runs (each executed by the
    first test that reads it)."""
    harness_installed("0.2")
    server = fixture_server()
    app = wsgi_app(server, sessions=True)
    serving = Serving(app).start()
    try:
        yield Runs(f"{serving.url}/mcp", tmp_path_factory)
    finally:
        app.close(5)
        serving.stop(10)
        server.close()


def verdict(checks: list) -> list[str]:
    """Why a scenario's checks do not pass strictly (empty: they pass)."""
    if not checks:
        return ["no checks were recorded"]
    bad = [f"{c.get('status')} {c.get('id')}: {c.get('errorMessage') or c.get('description')}"
           for c in checks if c.get("status") in ("FAILURE", "WARNING")]
    if not bad and not any(c.get("status") == "SUCCESS" and c.get("id") != WIRE_SCHEMA
                           for c in checks):
        bad.append("no check of the scenario's own succeeded (all "
                   + ", ".join(sorted({str(c.get("status")) for c in checks
                                       if c.get("id") != WIRE_SCHEMA})) + ")")
    return bad


def cases() -> list:
    """(run, scenario) parameters, ids ``<run>/<scenario>`` (tests/conftest.py's scheduler
    reads the run from them); a scenario not in EXPECTED is xfail(strict=True) with its
    reason."""
    found = []
    for run, names in SCENARIOS.items():
        for name in names:
            marks = () if name in EXPECTED[run] else pytest.mark.xfail(
                reason=MISSING[name], strict=True)
            found.append(pytest.param(run, name, id=f"{run}/{name}", marks=marks))
    return found


@pytest.mark.timeout(TEST_TIMEOUT)
@pytest.mark.parametrize("run,scenario", cases())
def test_server_scenario_passes_strictly(server_runs, run, scenario):
    outcome = server_runs(run)
    checks = outcome.checks.get(scenario)
    assert checks is not None, f"no result for {scenario}:\n{outcome.output[-3000:]}"
    problems = verdict(checks)
    assert not problems, "\n".join(problems)


@pytest.mark.timeout(TEST_TIMEOUT)
@pytest.mark.parametrize("run", list(SCENARIOS))
def test_the_run_ran_exactly_its_scenarios(server_runs, run):
    """A new harness pin that adds, drops or renames a scenario makes this say so."""
    outcome = server_runs(run)
    assert sorted(outcome.checks) == sorted(SCENARIOS[run]), outcome.output[-3000:]


def test_every_scenario_is_expected_or_has_a_reason():
    for run, names in SCENARIOS.items():
        assert EXPECTED[run] <= set(names), run
        assert all(name in EXPECTED[run] or name in MISSING for name in names), run


def test_the_verdict_is_strict():
    success = {"id": "x", "status": "SUCCESS"}
    wire = {"id": WIRE_SCHEMA, "status": "SUCCESS"}
    assert verdict([success, wire]) == []
    assert verdict([]) and verdict([wire]) and verdict([{"id": "x", "status": "INFO"}, wire])
    assert verdict([success, {"id": "y", "status": "WARNING"}])
    assert verdict([success, {"id": "scenario-timeout", "status": "FAILURE"}])
