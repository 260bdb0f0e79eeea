"""raider_sync as a client under the MCP conformance harness, every scenario:

    python client.py URL

One command for a whole run (``--requirements`` or ``--suite``): authorization scenarios
(``auth/*``) go to ``tests/auth/conformance_client.py``, every other to ``client_core.py``.
Both drive only raider_sync's public API.
"""
from __future__ import annotations

import os
import runpy
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

if __name__ == "__main__":
    auth = os.environ.get("MCP_CONFORMANCE_SCENARIO", "").startswith("auth/")
    target = (os.path.join(HERE, "..", "auth", "conformance_client.py") if auth
              else os.path.join(HERE, "client_core.py"))
    sys.argv[0] = target
    runpy.run_path(target, run_name="__main__")
