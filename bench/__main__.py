"""make bench: every benchmark, raider_sync against the official SDK and FastMCP, in one run.

    python -m bench [--quick] [--profile] [stdio|callers|sizes|servers|modern|http|shell|gateway|
                                           upstream|telemetry|ownwork|pinned|serving|coalesce ...]

No leg named: all of them. ``--quick``: one round where a leg would take several (a smoke
run of the harness; the figures are noisier). ``--profile``: the ownwork leg prints where
the time of a call goes (cProfile, per function and per module).
"""
from __future__ import annotations

import importlib
import sys
import time
import traceback

from . import common

PARTS = ["stdio", "callers", "sizes", "servers", "modern", "http", "shell", "gateway", "upstream",
         "telemetry", "ownwork", "pinned", "serving", "coalesce"]
FLAGS = {"--quick": "QUICK", "--profile": "PROFILE"}


def main(argv: list[str]) -> int:
    for flag, setting in FLAGS.items():
        if flag in argv:
            setattr(common, setting, True)
    argv = [arg for arg in argv if arg not in FLAGS]
    unknown = [part for part in argv if part not in PARTS]
    if unknown:
        print(f"unknown leg(s): {', '.join(unknown)}; the legs: {', '.join(PARTS)}",
              file=sys.stderr)
        return 2
    wanted = argv or PARTS
    print("raider_sync benchmarks (ratios: raider_sync / other; below 1.00x means raider_sync is faster"
          " for times)")
    started = time.monotonic()
    failed = []
    for part in wanted:
        try:
            module = importlib.import_module(f"bench.bench_{part}")
        except ImportError as exc:
            print(f"\n== {part}: not available ({exc})")
            continue
        try:
            module.main()
        except Exception:  # one leg's failure (a server too slow to start) spares the others
            failed.append(part)
            print(f"\n== {part}: failed", flush=True)
            traceback.print_exc()
    print(f"\nall benchmarks took {time.monotonic() - started:.1f} s"
          + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
