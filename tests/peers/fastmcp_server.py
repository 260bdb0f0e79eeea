"""A real MCP server built with FastMCP (``fastmcp`` package), for tests: both eras.

    python fastmcp_server.py stdio [--modern-only]
    python fastmcp_server.py http PORT [--modern-only]

``--modern-only``: a public FastMCP middleware refuses ``initialize`` with -32022 naming
2026-07-28 alone, so the server speaks only the stateless revision (FastMCP itself, like the
official SDK, always serves both eras).
"""
import asyncio
import sys

import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.server.middleware import Middleware
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel

MODERN = "2026-07-28"

server = FastMCP("raider-test-fastmcp", instructions="A test server built with FastMCP.")


@server.tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@server.tool
async def slow(seconds: float, ctx: Context, steps: int = 4) -> str:
    """Sleep for a while, reporting progress."""
    for i in range(steps):
        await ctx.report_progress(i + 1, steps, f"step {i + 1}")
        await asyncio.sleep(seconds / steps)
    return f"slept {seconds}"


class Answer(BaseModel):
    answer: str


@server.tool
async def ask(question: str, ctx: Context) -> str | mcp_types.InputRequiredResult:
    """Ask the client's user (elicitation): a server request in the handshake era, an
    input_required round in the stateless one."""
    if not ctx._is_modern_protocol():
        reply = await ctx.elicit(question, Answer)
        return f"{reply.action}: {getattr(getattr(reply, 'data', None), 'answer', '')}"
    responses = ctx.input_responses or {}
    if "q" not in responses:
        schema = {"type": "object", "properties": {"answer": {"type": "string"}},
                  "required": ["answer"]}
        return mcp_types.InputRequiredResult(
            input_requests={"q": mcp_types.ElicitRequest(params=mcp_types.ElicitRequestFormParams(
                message=question, requested_schema=schema))},
            request_state="asked")
    reply = responses["q"]
    content = getattr(reply, "content", None) or {}
    return f"{reply.action}: {content.get('answer', '')} (state {ctx.request_state})"


@server.tool
async def grow(ctx: Context) -> str:
    """Add a tool named 'extra' and announce the changed tool list (on this request's
    stream: FastMCP serves no subscriptions/listen)."""
    def extra() -> str:
        """A tool added at run time."""
        return "extra!"
    server.tool(extra)
    await ctx.send_notification(mcp_types.ToolListChangedNotification())
    return "grown"


@server.resource("test://hello", mime_type="text/plain")
def hello() -> str:
    """A greeting."""
    return "hello from fastmcp"


@server.prompt
def greet(name: str) -> str:
    """Greet someone."""
    return f"Please greet {name}."


class ModernOnly(Middleware):
    """Refuse the handshake: this server speaks the stateless revision alone."""

    async def on_initialize(self, context, call_next):
        asked = getattr(getattr(context.message, "params", None), "protocol_version", None)
        raise MCPError(-32022, "Unsupported protocol version: this server speaks 2026-07-28 only",
                       {"supported": [MODERN], "requested": asked})


if __name__ == "__main__":
    if "--modern-only" in sys.argv:
        server.add_middleware(ModernOnly())
    if sys.argv[1] == "stdio":
        server.run("stdio", show_banner=False)
    else:
        server.run("http", host="127.0.0.1", port=int(sys.argv[2]), show_banner=False)
