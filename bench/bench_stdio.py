"""The stdio leg: the same server driven by raider_sync and by the official SDK, in one run.

Measured per server: connect time (spawn, initialize, tool list), sequential call latency,
throughput with 16 callers (threads for raider_sync, tasks for the SDK), and the SDK as sync
code runs it today (an event loop in a thread, run_coroutine_threadsafe per call).
"""
from __future__ import annotations

import asyncio
import os
import threading
import time

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from raider_sync import McpConfig, McpServer

from .common import ms, p50, ratio, stdio_servers, table, timed

CONNECTS = 5
CALLS = 400
WARMUP = 50
CALLERS = 16
CALLS_PER_CALLER = 50
ROUNDS = 3  # throughput is the best of this many rounds on one connection, for both clients
ARGS = {"message": "hello"}


def _spec(command: list[str]):
    # the handshake era, as the SDK's ClientSession speaks it (bench_modern has the other)
    return McpConfig.from_dict({"mcpServers": {"bench": {"command": command[0],
                                                          "args": command[1:],
                                                          "protocol": "legacy"}}}).server("bench")


# -- raider_sync ---------------------------------------------------------------------------

def raider_connect(command: list[str]) -> float:
    def once():
        server = McpServer(_spec(command), kill_grace=1)
        server.start_f().result()
        assert server.status == "connected", server.reason
        server.stop()
    return p50(timed(once, CONNECTS))


def raider_calls(command: list[str]) -> tuple[float, float]:
    """(p50 sequential call time, calls per second with CALLERS threads)."""
    with McpServer(_spec(command), kill_grace=1) as server:
        tool = "mcp__bench__echo"
        for _ in range(WARMUP):
            server.call_tool(tool, ARGS)
        sequential = p50(timed(lambda: server.call_tool(tool, ARGS), CALLS))

        throughput = max(_threads_round(server, tool) for _ in range(ROUNDS))
    return sequential, throughput


def _threads_round(server: McpServer, tool: str) -> float:
    """Calls per second of CALLERS threads making CALLS_PER_CALLER calls each."""
    barrier = threading.Barrier(CALLERS + 1)

    def caller():
        barrier.wait()
        for _ in range(CALLS_PER_CALLER):
            server.call_tool(tool, ARGS)

    threads = [threading.Thread(target=caller) for _ in range(CALLERS)]
    for t in threads:
        t.start()
    barrier.wait()
    started = time.perf_counter()
    for t in threads:
        t.join()
    return CALLERS * CALLS_PER_CALLER / (time.perf_counter() - started)


# -- the official SDK ----------------------------------------------------------------------

def _params(command: list[str]) -> StdioServerParameters:
    # the same environment raider_sync gives a server (a copy of os.environ, as the seed
    # says): the SDK's default is four variables, and the environment alone moves a node
    # server's start-up by tens of milliseconds
    return StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))


async def _sdk_connect_once(command: list[str]) -> None:
    async with stdio_client(_params(command)) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()


def sdk_connect(command: list[str]) -> float:
    return p50(timed(lambda: asyncio.run(_sdk_connect_once(command)), CONNECTS))


async def _sdk_calls(command: list[str]) -> tuple[float, float]:
    async with stdio_client(_params(command)) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()
            for _ in range(WARMUP):
                await session.call_tool("echo", ARGS)
            times = []
            for _ in range(CALLS):
                started = time.perf_counter()
                await session.call_tool("echo", ARGS)
                times.append(time.perf_counter() - started)

            async def caller():
                for _ in range(CALLS_PER_CALLER):
                    await session.call_tool("echo", ARGS)

            rates = []
            for _ in range(ROUNDS):
                started = time.perf_counter()
                await asyncio.gather(*(caller() for _ in range(CALLERS)))
                rates.append(CALLERS * CALLS_PER_CALLER / (time.perf_counter() - started))
            throughput = max(rates)
    return p50(times), throughput


def sdk_calls(command: list[str]) -> tuple[float, float]:
    return asyncio.run(_sdk_calls(command))


def sdk_from_sync(command: list[str]) -> float:
    """p50 call time of the SDK driven from sync code: a loop thread, one
    run_coroutine_threadsafe(...).result() per call."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="bench-sdk-loop")
    thread.start()
    ready: asyncio.Future
    stop = asyncio.Event()
    holder: dict = {}

    async def hold_session():
        async with stdio_client(_params(command)) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                await session.list_tools()
                holder["session"] = session
                ready.set_result(None)
                await stop.wait()

    def run(coro):
        return asyncio.run_coroutine_threadsafe(coro, loop).result()

    async def make_ready():
        return loop.create_future()

    ready = run(make_ready())
    task = asyncio.run_coroutine_threadsafe(hold_session(), loop)
    run(asyncio.wait_for(asyncio.shield(ready), 30))
    session = holder["session"]
    for _ in range(WARMUP):
        run(session.call_tool("echo", ARGS))
    times = timed(lambda: run(session.call_tool("echo", ARGS)), CALLS)
    loop.call_soon_threadsafe(stop.set)
    task.result(30)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(30)
    loop.close()
    return p50(times)


def main() -> None:
    for label, command in stdio_servers():
        r_connect, s_connect = raider_connect(command), sdk_connect(command)
        r_seq, r_tput = raider_calls(command)
        s_seq, s_tput = sdk_calls(command)
        s_sync = sdk_from_sync(command)
        table(f"stdio: {label}, tool echo", [
            ("measure", "raider_sync", "SDK", "ratio", "SDK from sync", "ratio"),
            ("connect (p50)", ms(r_connect), ms(s_connect), ratio(r_connect, s_connect), "", ""),
            ("sequential call (p50)", ms(r_seq), ms(s_seq), ratio(r_seq, s_seq), ms(s_sync),
             ratio(r_seq, s_sync)),
            (f"throughput, {CALLERS} callers (best of {ROUNDS})", f"{r_tput:8.0f}/s", f"{s_tput:8.0f}/s",
             f"{r_tput / s_tput:5.2f}x", "", ""),
        ])
        print(f"  (throughput ratio: raider_sync / SDK, above 1.00x means raider_sync is faster; "
              f"SDK from sync is {s_sync / r_seq:.2f}x raider_sync's call time)")


if __name__ == "__main__":
    main()
