"""A stdio MCP server built with the official SDK, for the result-size leg.

    python bench/sized_server.py

``text(size)`` returns a text of ``size`` characters (plain content, no structured copy, so
the answer is one text of that size); ``echo(message)`` returns the message.
"""
from mcp.server.mcpserver import MCPServer

PATTERN = "0123456789abcdefghijklmnopqrstuvwxyz" * 64

mcp = MCPServer("raider-bench-sized")


@mcp.tool(structured_output=False)
def text(size: int) -> str:
    """A text of ``size`` characters."""
    return (PATTERN * (size // len(PATTERN) + 1))[:size]


@mcp.tool(structured_output=False)
def echo(message: str) -> str:
    """Echo the message back."""
    return message


if __name__ == "__main__":
    mcp.run("stdio")
