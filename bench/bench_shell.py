"""The shell leg: BashTools against plain subprocess, in one run.

Measured: the overhead of a trivial command (``bash({"command": "true"})`` against
``subprocess.run(["bash", "-c", "true"], capture_output=True)``; target within 1.3x), and a
command printing 200 MB: peak RSS growth of this process (target under 64 MB) and time
against ``sh -c 'CMD > /dev/null'`` (target within 1.5x) and ``sh -c 'CMD > FILE'`` (what
any output file costs the command itself).
"""
from __future__ import annotations

import os
import subprocess
import tempfile

from raider_sync.shell import BashTools

from .common import ms, p50, ratio, table, timed

TRIVIAL_RUNS = 200
WARMUP = 20
BIG_RUNS = 3
BIG_BYTES = 200_000_000
BIG_COMMANDS = [
    ("seq (CPU-bound printer)", "seq 1 24000000"),
    ("yes | head (cheap printer)", f"yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c {BIG_BYTES}"),
]


def interleaved(fns: list, repeat: int) -> list[float]:
    """The p50 seconds of each of ``fns``, run in turn ``repeat`` times (so a change of load
    on the machine hits them alike)."""
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            samples[i] += timed(fn, 1)
    return [p50(s) for s in samples]


def trivial() -> list[tuple[str, ...]]:
    rows = [("command", "BashTools.bash p50", "subprocess.run p50", "ratio (target <= 1.30x)")]
    with BashTools(kill_grace=1) as shell:
        for command in ("true", "echo hello"):
            def ours(command=command) -> None:
                shell.bash({"command": command})

            def theirs(command=command) -> None:
                subprocess.run(["bash", "-c", command], capture_output=True, check=True)
            interleaved([ours, theirs], WARMUP)
            mine, other = interleaved([ours, theirs], TRIVIAL_RUNS)
            rows.append((command, ms(mine), ms(other), ratio(mine, other)))
    return rows


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
        return True
    except OSError:
        return False


def big(label: str, command: str) -> tuple[str, ...]:
    growths = []
    with BashTools(kill_grace=1, default_timeout=120) as shell, \
            tempfile.TemporaryDirectory() as tmp:
        target = os.path.join(tmp, "out")

        def ours() -> None:
            can_reset = _reset_peak()
            before = _status_kb("VmRSS")
            text, is_error = shell.bash({"command": command})
            assert not is_error and "characters truncated" in text, text[:200]
            peak = _status_kb("VmHWM") if can_reset else _status_kb("VmRSS")
            growths.append((peak - before) / 1024)

        def null() -> None:
            subprocess.run(["sh", "-c", f"{command} > /dev/null"], check=True)

        def to_file() -> None:
            subprocess.run(["sh", "-c", f"{command} > {target}"], check=True)
        mine, nothing, file = interleaved([ours, null, to_file], BIG_RUNS)
    return (label, ms(mine), ms(nothing), ratio(mine, nothing), ms(file), ratio(mine, file),
            f"{max(growths):6.1f} MB")


def main() -> None:
    table("shell: trivial command overhead", trivial())
    rows = [("command printing ~200 MB", "BashTools.bash", "sh > /dev/null", "ratio (<= 1.5x)",
             "sh > file", "ratio", "peak RSS growth (< 64 MB)")]
    for label, command in BIG_COMMANDS:
        rows.append(big(label, command))
    table("shell: 200 MB of output, result cut to 30000 characters", rows)


if __name__ == "__main__":
    main()
