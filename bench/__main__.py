"""make bench: every benchmark, raider_sync against the official SDK, in one run.

    python -m bench [stdio|http|shell|gateway|telemetry ...]
"""
from __future__ import annotations

import importlib
import sys
import time

PARTS = ["stdio", "modern", "http", "shell", "gateway", "telemetry"]


def main(argv: list[str]) -> int:
    wanted = argv or PARTS
    print("raider_sync benchmarks (ratios: raider_sync / other; below 1.00x means raider_sync is faster"
          " for times)")
    started = time.monotonic()
    for part in wanted:
        try:
            module = importlib.import_module(f"bench.bench_{part}")
        except ImportError as exc:
            print(f"\n== {part}: not available ({exc})")
            continue
        module.main()
    print(f"\nall benchmarks took {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
