"""The stdio clients the benchmarks compare, behind one face.

Each is built connected (spawn, ``initialize``, tool list) to a server started from a command
line, with a copy of the caller's environment (raider_sync's default; the SDK's is four
variables, and the environment alone moves a node server's start by tens of milliseconds):

- ``call(tool, args)``: the text of one call's result;
- ``times(count, tool, args)``: seconds each of ``count`` sequential calls took;
- ``throughput(callers, per_caller, tool, args)``: calls per second with ``callers``
  concurrent callers (threads for raider_sync, tasks for the async clients);
- ``close()``.

The async clients (the official SDK's ``ClientSession``, FastMCP's ``Client``) are held open
by a task on an event loop in a thread; their calls are timed inside that loop, as an async
program sees them. ``SdkPeer.times_from_sync`` times the SDK as sync code drives it today:
``run_coroutine_threadsafe(...).result()`` per call.
"""
from __future__ import annotations

import asyncio
import os
import time
from concurrent.futures import Future
from contextlib import asynccontextmanager, contextmanager

from raider_sync import McpConfig, McpServer

from .common import LoopThread, released_together, timed
from .floor import RawPipe

CONNECT_TIMEOUT = 120.0


def raider_spec(command: list[str], name: str = "bench"):
    # the handshake era, as the SDK's ClientSession and FastMCP's legacy mode speak it
    return McpConfig.from_dict({"mcpServers": {name: {"command": command[0], "args": command[1:],
                                                       "protocol": "legacy"}}}).server(name)


class RaiderPeer:
    name = "raider_sync"

    def __init__(self, command: list[str], **options):
        self.server = McpServer(raider_spec(command), kill_grace=1, **options)
        self.server.start_f().result(CONNECT_TIMEOUT)
        if self.server.status != "connected":
            reason = self.server.reason
            self.server.stop()
            raise RuntimeError(f"raider_sync did not connect: {reason}")

    def call(self, tool: str, args: dict) -> str:
        return self.server.call_tool(f"mcp__bench__{tool}", args).text

    def times(self, count: int, tool: str, args: dict) -> list[float]:
        name = f"mcp__bench__{tool}"
        return timed(lambda: self.server.call_tool(name, args), count)

    def throughput(self, callers: int, per_caller: int, tool: str, args: dict) -> float:
        name = f"mcp__bench__{tool}"

        def calls() -> None:
            for _ in range(per_caller):
                self.server.call_tool(name, args)
        return callers * per_caller / released_together(callers, calls)

    def close(self) -> None:
        self.server.stop()


class AsyncPeer:
    """An async client's session held open in a loop thread; subclasses give ``_session``:
    an async context manager that yields ``async call(tool, args) -> text``."""

    name = "async"

    def __init__(self, command: list[str]):
        self.runner = LoopThread(f"bench-{self.name}-loop")
        self._stop: asyncio.Event | None = None
        ready: Future = Future()

        async def hold() -> None:
            self._stop = asyncio.Event()
            try:
                async with self._session(command) as call:
                    self._call = call
                    ready.set_result(None)
                    await self._stop.wait()
            except BaseException as exc:
                if not ready.done():
                    ready.set_exception(exc)
                raise

        self._held = asyncio.run_coroutine_threadsafe(hold(), self.runner.loop)
        try:
            ready.result(CONNECT_TIMEOUT)
        except BaseException:
            self._held.cancel()
            self.runner.close()
            raise

    def _session(self, command: list[str]):
        raise NotImplementedError

    def call(self, tool: str, args: dict) -> str:
        return self.runner.run(self._call(tool, args))

    def times(self, count: int, tool: str, args: dict) -> list[float]:
        async def measure() -> list[float]:
            samples = []
            for _ in range(count):
                started = time.perf_counter()
                await self._call(tool, args)
                samples.append(time.perf_counter() - started)
            return samples
        return self.runner.run(measure())

    def times_from_sync(self, count: int, tool: str, args: dict) -> list[float]:
        return timed(lambda: self.runner.run(self._call(tool, args)), count)

    def throughput(self, callers: int, per_caller: int, tool: str, args: dict) -> float:
        async def caller() -> None:
            for _ in range(per_caller):
                await self._call(tool, args)

        async def measure() -> float:
            started = time.perf_counter()
            await asyncio.gather(*(caller() for _ in range(callers)))
            return callers * per_caller / (time.perf_counter() - started)
        return self.runner.run(measure())

    def close(self) -> None:
        self.runner.loop.call_soon_threadsafe(self._stop.set)  # type: ignore[union-attr]
        try:
            self._held.result(30)
        finally:
            self.runner.close()


class SdkPeer(AsyncPeer):
    name = "SDK"

    @asynccontextmanager
    async def _session(self, command: list[str]):
        # imported here, not at the top: a child process measuring another client skips them
        from mcp.client.session import ClientSession
        from mcp.client.stdio import StdioServerParameters, stdio_client
        params = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                await session.list_tools()
                self.session = session  # for legs that ask more than tools/call

                async def call(tool: str, args: dict) -> str:
                    return (await session.call_tool(tool, args)).content[0].text
                yield call


class FastMcpPeer(AsyncPeer):
    name = "FastMCP"

    @asynccontextmanager
    async def _session(self, command: list[str]):
        from fastmcp import Client
        from fastmcp.client.transports import StdioTransport
        transport = StdioTransport(command[0], command[1:], env=dict(os.environ), keep_alive=False)
        async with Client(transport, mode="legacy") as client:
            await client.list_tools()

            async def call(tool: str, args: dict) -> str:
                return (await client.call_tool(tool, args)).content[0].text
            yield call


@contextmanager
def all_connected(command: list[str], warmup: int, tool: str, args: dict):
    """The floor, raider_sync, the SDK and FastMCP (in that order), each connected to a server
    of its own started from ``command`` and warmed up with ``warmup`` calls; all closed on the
    way out."""
    peers: list = []
    try:
        for peer_class in (RawPipe, RaiderPeer, SdkPeer, FastMcpPeer):
            peers.append(peer_class(command))
        for peer in peers:
            peer.times(warmup, tool, args)
        yield peers
    finally:
        for peer in peers:
            peer.close()
