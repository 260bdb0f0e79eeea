"""The three servers of the serving leg (bench_serving.py), each with the same tool, one
process each:

    python serving_peers.py raider_sync PORT   # a ToolServer under waitress: serve_http
    python serving_peers.py sdk PORT           # the official SDK's MCPServer under uvicorn
    python serving_peers.py fastmcp PORT       # FastMCP's server under uvicorn

``echo(text)`` answers its text. Each server keeps its default settings but one: the SDK's and
FastMCP's log at WARNING, so that uvicorn writes no line per request (waitress writes none).
All three serve at http://127.0.0.1:PORT/mcp until SIGTERM.
"""
from __future__ import annotations

import sys


def echo(text: str) -> str:
    """Echo the text back."""
    return text


def serve_raider_sync(port: int) -> None:
    from raider_sync import ToolServer
    from raider_sync.serve.serving_http import serve_http

    with ToolServer("bench") as tools:
        tools.add_tool("echo", echo)
        serve_http(tools, "127.0.0.1", port)


def serve_sdk(port: int) -> None:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("bench-sdk", log_level="WARNING")
    server.tool()(echo)
    server.run("streamable-http", host="127.0.0.1", port=port)


def serve_fastmcp(port: int) -> None:
    from fastmcp import FastMCP

    server = FastMCP("bench-fastmcp")
    server.tool(echo)
    server.run("http", host="127.0.0.1", port=port, log_level="warning", show_banner=False)


SERVERS = {"raider_sync": serve_raider_sync, "sdk": serve_sdk, "fastmcp": serve_fastmcp}

if __name__ == "__main__":
    SERVERS[sys.argv[1]](int(sys.argv[2]))
