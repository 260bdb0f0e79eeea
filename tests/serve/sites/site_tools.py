"""The ToolServer the mounted sites serve (flask_site.py, django_site.py): echo, a tool that
reports progress, and a pair that proves a progress event is sent while its call still runs
(``hold`` reports, then waits until ``release`` is called with the same key)."""
from __future__ import annotations

import threading

from raider_sync import ToolServer

#: seconds a held call waits for its release at most
HOLD_LIMIT = 30.0

_gates: dict[str, threading.Event] = {}
_gates_lock = threading.Lock()


def _gate(key: str) -> threading.Event:
    with _gates_lock:
        return _gates.setdefault(key, threading.Event())


def site_tools() -> ToolServer:
    tools = ToolServer("site", instructions="The tools of a site.")
    tools.add_tool("echo", lambda text: text, description="Echo the text back.")

    @tools.tool()
    def steps(count: int, progress) -> str:
        """Report ``count`` steps of progress."""
        for step in range(1, count + 1):
            progress(step, count, f"step {step}")
        return f"{count} steps"

    @tools.tool()
    def hold(key: str, progress) -> str:
        """Report a first step, then wait (bounded) until ``release(key)``."""
        progress(1, 2, "holding")
        if not _gate(key).wait(HOLD_LIMIT):
            return "never released"
        progress(2, 2, "released")
        return "released"

    @tools.tool()
    def release(key: str) -> str:
        """Let ``hold(key)`` end."""
        _gate(key).set()
        return "ok"

    return tools
