"""raider_sync as a client under the MCP conformance harness, every scenario:

    python client.py URL

One command for a whole run (``--requirements`` or ``--suite``): authorization scenarios
(``auth/*``) go to ``tests/auth/conformance_client.py``, every other to ``client_core.py``.
Both drive only raider_sync's public API. With ``CONFORMANCE_EXIT_DIR`` set, the client's exit
status is recorded there, one file per scenario (a suite run's verdict only counts checks); a
client that is killed or times out records nothing.
"""
from __future__ import annotations

import os
import runpy
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def record(scenario: str, status: int) -> None:
    """Write ``status`` for ``scenario`` under CONFORMANCE_EXIT_DIR (atomically), if set."""
    directory = os.environ.get("CONFORMANCE_EXIT_DIR")
    if not directory:
        return
    path = os.path.join(directory, scenario.replace("/", "__") + ".exit")
    with open(path + ".tmp", "w", encoding="utf-8") as file:
        file.write(f"{status}\n")
    os.replace(path + ".tmp", path)


def main() -> int:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    target = (os.path.join(HERE, "..", "auth", "conformance_client.py")
              if scenario.startswith("auth/") else os.path.join(HERE, "client_core.py"))
    sys.argv[0] = target
    status = 1  # an exception escaping the client is a failure
    try:
        runpy.run_path(target, run_name="__main__")
        status = 0
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        record(scenario, status)
    return status


if __name__ == "__main__":
    sys.exit(main())
