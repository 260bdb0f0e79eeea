"""A server built with the official SDK whose one resource takes a while to read and counts its
reads (the coalesce leg): ``python read_server.py`` serves over stdio."""
import asyncio

from mcp.server.mcpserver import MCPServer

#: how long one read of the resource takes, so that concurrent reads overlap
READ_SECONDS = 0.05

mcp = MCPServer("raider-bench-reads")
reads = 0


@mcp.resource("bench://slow", mime_type="text/plain")
async def slow() -> str:
    """A document that takes a while to read."""
    global reads
    reads += 1
    await asyncio.sleep(READ_SECONDS)
    return "the document " * 64


@mcp.tool()
def count() -> str:
    """How many reads the resource has had."""
    return str(reads)


if __name__ == "__main__":
    mcp.run("stdio")
