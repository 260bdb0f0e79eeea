"""``raider-sync demo``: the whole library on the configured (or embedded) servers, in seconds.

Servers started in parallel, their tools listed, a call, a resource read through an
``@server:uri`` mention, a background bash command with its task notification, and a monitor
event. Everything started is stopped before it returns.
"""
from __future__ import annotations

import os
import tempfile
import time

from ..client.hub import McpHub
from ..serve.resources import Resources
from ..shell import BashTools, Tasks
from .common import EXIT_FAILED, EXIT_OK, load_config

NOTIFICATION_WAIT_S = 20.0


def _say(text: str = "") -> None:
    print(text, flush=True)


def _first_line(text: str, width: int = 70) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= width else line[: width - 1] + "…"


def demo(args) -> int:
    config = load_config(getattr(args, "config", None))
    started = time.monotonic()
    with McpHub(config) as hub:
        hub.start_f().result(120)
        _say(f"1. started {len(hub.clients)} server(s) in parallel in "
             f"{time.monotonic() - started:.2f} s")
        for server in hub.clients:
            extra = f" ({server.reason})" if server.reason else ""
            _say(f"   {server.name}: {server.status}{extra}")
        connected = [s for s in hub.clients if s.status == "connected"]
        if not connected:
            return EXIT_FAILED

        tools = hub.tools()
        _say(f"\n2. {len(tools)} tools, named as a model sees them:")
        for tool in tools[:8]:
            _say(f"   {tool['name']}: {_first_line(tool.get('description') or '', 50)}")

        echo = next((t["name"] for t in tools if t["name"].endswith("__echo")), None)
        if echo:
            began = time.monotonic()
            result = hub.call_tool(echo, {"message": "hello from raider_sync"})
            _say(f"\n3. call {echo} -> {result.text!r} in {(time.monotonic() - began) * 1000:.1f} ms")

        _mention(hub, connected)
        _shell()
    _say(f"\nstopped every server and shell; nothing left running "
         f"({time.monotonic() - started:.1f} s in all)")
    return EXIT_OK


def _mention(hub: McpHub, connected: list) -> None:
    resources = Resources(servers=lambda: hub.clients)
    try:
        listed = resources.list()
        if not listed:
            _say("\n4. no server offers resources")
            return
        first = listed[0]
        prompt = f"Summarise @{first['server']}:{first['uri']}."
        blocks = resources.attachments(prompt)
        _say(f"\n4. the prompt {prompt!r} brings {len(blocks)} attachment(s):")
        for line in (blocks[0].splitlines() if blocks else [])[:6]:
            _say(f"   | {line}")
    finally:
        resources.close()


def _shell() -> None:
    tasks = Tasks()
    with tempfile.TemporaryDirectory(prefix="raider-demo-") as folder:
        shell = BashTools(working_directory=folder, tasks=tasks)
        try:
            text, _ = shell.bash({"command": "sleep 0.3; echo built > result.txt; echo done",
                                  "run_in_background": True, "description": "a slow build"})
            _say(f"\n5. bash in the background: {text}")
            for note in tasks.notifications("main", block=True, timeout=NOTIFICATION_WAIT_S):
                _say("   notified:\n" + "\n".join(f"   | {line}" for line in note.splitlines()))
            log = os.path.join(folder, "app.log")
            open(log, "w").close()
            text, _ = shell.monitor({"description": "errors in app.log",
                                     "command": f"tail -n +1 -F {log} | grep --line-buffered ERROR",
                                     "timeout_ms": 30000})
            _say(f"\n6. monitor: {text}")
            with open(log, "a") as fh:
                fh.write("INFO all good\nERROR disk full\n")
            for note in tasks.notifications("main", block=True, timeout=NOTIFICATION_WAIT_S):
                _say("   event:\n" + "\n".join(f"   | {line}" for line in note.splitlines()))
        finally:
            shell.close()
