"""The embedded demo MCP server: a ToolServer served over stdio with the current Python.

    python -m raider_sync.cli.demo

It is the default server of the command line when no ``.mcp.json`` is found, so
``raider-sync servers`` and ``make demo`` work on a fresh machine with nothing configured.
"""
from __future__ import annotations

import platform
import sys
import time

from ..serve.toolserver import ToolServer

GUIDE = """# raider_sync demo

raider_sync is a synchronous MCP client: every call blocks (or returns a
concurrent.futures.Future), nothing needs asyncio.
"""


def build() -> ToolServer:
    """The demo server's tools, resources and prompts."""
    demo = ToolServer("demo", instructions="A small server that ships with raider_sync.")

    @demo.tool()
    def echo(message: str) -> str:
        """Echo the message back."""
        return message

    @demo.tool()
    def add(a: float, b: float) -> str:
        """Add two numbers."""
        return f"{a + b:g}"

    @demo.tool()
    def wait(progress, seconds: float = 1.0, steps: int = 5) -> str:
        """Wait a while (at most 30 s) in steps, reporting progress, then say how long it took."""
        started = time.monotonic()
        seconds, steps = max(0.0, min(seconds, 30.0)), max(1, min(steps, 100))
        for step in range(steps):
            time.sleep(seconds / steps)
            progress(step + 1, steps, f"step {step + 1} of {steps}")
        return f"waited {time.monotonic() - started:.2f} s"

    @demo.tool()
    def system() -> dict:
        """Describe the machine the server runs on."""
        return {"python": sys.version.split()[0], "platform": platform.platform()}

    demo.add_resource("demo://guide.md", lambda: GUIDE, name="guide",
                      mime_type="text/markdown", description="What raider_sync is")

    @demo.prompt()
    def review(topic: str) -> str:
        """Ask for a review of a topic."""
        return f"Please review {topic} and list three risks."

    return demo


if __name__ == "__main__":
    with build() as server:
        server.serve_stdio()
