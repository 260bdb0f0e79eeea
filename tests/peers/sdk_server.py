"""A real MCP server built with the official Python SDK (``mcp`` package), for tests and benchmarks.

    python sdk_server.py stdio
    python sdk_server.py stdio-modern-only      # the SDK's 2026-07-28 serving loop alone
    python sdk_server.py streamable-http PORT [--json] [--stateless]
    python sdk_server.py sse PORT
"""
import asyncio
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ElicitRequest, ElicitRequestFormParams, InputRequiredResult
from pydantic import BaseModel

MODERN = "2026-07-28"

mcp = MCPServer("raider-test-sdk", instructions="A test server built with the official SDK.")


@mcp.tool()
def echo(message: str) -> str:
    """Echo the message back."""
    return message


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@mcp.tool()
async def slow(seconds: float, ctx: Context, steps: int = 4) -> str:
    """Sleep for a while, reporting progress."""
    for i in range(steps):
        await ctx.report_progress(i + 1, steps, f"step {i + 1}")
        await asyncio.sleep(seconds / steps)
    return f"slept {seconds}"


@mcp.tool()
async def grow(ctx: Context) -> str:
    """Add a tool named 'extra' and announce the changed tool list."""
    def extra() -> str:
        """A tool added at run time."""
        return "extra!"
    mcp.add_tool(extra, name="extra")
    if ctx.protocol_version == MODERN:  # the stateless revision: on subscriptions/listen
        await ctx.notify_tools_changed()
    else:
        await ctx.session.send_tool_list_changed()
    return "grown"


class Answer(BaseModel):
    answer: str


@mcp.tool()
async def ask(question: str, ctx: Context) -> str | InputRequiredResult:
    """Ask the client's user a question (elicitation): a server request in the handshake
    era, an input_required round in the stateless one."""
    if ctx.protocol_version != MODERN:
        reply = await ctx.elicit(question, Answer)
        return f"{reply.action}: {reply.data.answer if reply.data else ''}"
    responses = ctx.input_responses or {}
    if "q" not in responses:
        schema = {"type": "object", "properties": {"answer": {"type": "string"}},
                  "required": ["answer"]}
        return InputRequiredResult(
            input_requests={"q": ElicitRequest(params=ElicitRequestFormParams(
                message=question, requested_schema=schema))},
            request_state="asked")
    reply = responses["q"]
    content = getattr(reply, "content", None) or {}
    return f"{reply.action}: {content.get('answer', '')} (state {ctx.request_state})"


@mcp.tool()
def fail(message: str) -> str:
    """Raise an error."""
    raise ValueError(message)


@mcp.resource("test://hello", mime_type="text/plain")
def hello() -> str:
    """A greeting."""
    return "hello from the sdk"


@mcp.prompt()
def greet(name: str) -> str:
    """Greet someone."""
    return f"Please greet {name}."


async def serve_modern_only() -> None:
    """The SDK's stateless serving loop without its handshake fallback: initialize is refused
    with -32022 naming 2026-07-28 only."""
    from mcp.server.runner import _serve_modern_stream
    from mcp.server.stdio import stdio_server

    low = mcp._lowlevel_server
    async with stdio_server() as (read_stream, write_stream):
        async with low.lifespan(low) as state:
            await _serve_modern_stream(low, read_stream, write_stream, lifespan_state=state,
                                       raise_exceptions=False)


if __name__ == "__main__":
    kind = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if kind == "stdio":
        mcp.run("stdio")
    elif kind == "stdio-modern-only":
        import anyio
        anyio.run(serve_modern_only)
    elif kind == "sse":
        mcp.run("sse", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        mcp.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]),
                json_response="--json" in sys.argv, stateless_http="--stateless" in sys.argv)
