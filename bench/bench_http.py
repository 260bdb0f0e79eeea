"""The HTTP leg: one tools/call over Streamable HTTP, four ways, against the same server.

The official SDK's server (``tests/peers/sdk_server.py streamable-http``), once answering with
JSON bodies and once with event streams. Per answer mode, measured in the same run, rounds
interleaved (the best round of each kept, so a noisy moment hurts every client alike):

- floor: a bare ``requests.Session`` POSTing the same tools/call and reading the body;
- raider_sync: ``McpServer.call_tool``;
- SDK async: the official client's ``ClientSession.call_tool`` timed inside its event loop;
- SDK from sync: the same session driven from sync code through a loop thread
  (``run_coroutine_threadsafe(...).result()`` per call), as sync programs use it today.

Targets: raider_sync within 1.15x of the floor and below the SDK's native async client.
"""
from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time

import requests
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from raider_sync import McpConfig, McpServer

from .common import (SDK_SERVER, free_port, ms, p50, ratio, start_listening, stop_process, table,
                     timed)

WARMUP = 50
CALLS = 150
ROUNDS = 5
ARGS = {"message": "hello"}
VERSION = "2025-11-25"


def _start_server(flags: list[str]) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = start_listening([sys.executable, SDK_SERVER, "streamable-http", str(port), *flags], port)
    return proc, f"http://127.0.0.1:{port}/mcp"


# -- the floor: requests, nothing else ---------------------------------------------------

class Floor:
    """One session of bare POSTs over one keep-alive connection."""

    def __init__(self, url: str):
        self.url = url
        self.http = requests.Session()
        self.headers = {"Accept": "application/json, text/event-stream",
                        "Content-Type": "application/json"}
        answer = self.http.post(url, headers=self.headers, data=json.dumps({
            "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": VERSION, "capabilities": {},
                "clientInfo": {"name": "floor", "version": "1"}}}))
        self.headers["Mcp-Session-Id"] = answer.headers["mcp-session-id"]
        self.headers["MCP-Protocol-Version"] = VERSION
        self.http.post(url, headers=self.headers,
                       data=json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        self.body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                "params": {"name": "echo", "arguments": ARGS}})

    def call(self) -> None:
        answer = self.http.post(self.url, headers=self.headers, data=self.body)
        if b"hello" not in answer.content:
            raise RuntimeError(f"unexpected answer: {answer.content[:200]!r}")

    def close(self) -> None:
        self.http.delete(self.url, headers=self.headers)
        self.http.close()


# -- the official SDK's client, in a loop thread ------------------------------------------

class SdkClient:
    """The SDK's session, held open by a task on an event loop in a thread."""

    def __init__(self, url: str):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="bench-sdk-loop")
        self.thread.start()
        self.stop_event: asyncio.Event | None = None
        self.session: ClientSession | None = None
        ready = threading.Event()

        async def hold() -> None:
            self.stop_event = asyncio.Event()
            async with streamable_http_client(url) as streams:
                read, write = streams[0], streams[1]
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    await session.list_tools()
                    self.session = session
                    ready.set()
                    await self.stop_event.wait()

        self.task = asyncio.run_coroutine_threadsafe(hold(), self.loop)
        if not ready.wait(30):
            raise TimeoutError("the SDK client did not connect within 30 s")

    def run(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(60)

    def call_from_sync(self) -> None:
        self.run(self.session.call_tool("echo", ARGS))  # type: ignore[union-attr]

    def native_times(self, count: int) -> list[float]:
        """Per-call seconds of ``count`` calls timed inside the event loop."""
        async def measure() -> list[float]:
            times = []
            for _ in range(count):
                started = time.perf_counter()
                await self.session.call_tool("echo", ARGS)  # type: ignore[union-attr]
                times.append(time.perf_counter() - started)
            return times
        return self.run(measure())

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.stop_event.set)  # type: ignore[union-attr]
        self.task.result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)
        self.loop.close()


# -- one answer mode ----------------------------------------------------------------------

def measure_mode(label: str, flags: list[str]) -> dict[str, float]:
    proc, url = _start_server(flags)
    floor = raider = sdk = None
    try:
        floor = Floor(url)
        spec = McpConfig.from_dict({"mcpServers": {"bench": {"type": "http", "url": url,
                                                             "protocol": "legacy"}}}
                                   ).server("bench")
        raider = McpServer(spec)
        raider.start_f().result(30)
        if raider.status != "connected":
            raise RuntimeError(f"raider_sync did not connect: {raider.reason}")
        sdk = SdkClient(url)
        tool = "mcp__bench__echo"
        ways = {
            "floor": floor.call,
            "raider_sync": lambda: raider.call_tool(tool, ARGS),
            "SDK from sync": sdk.call_from_sync,
        }
        for fn in ways.values():
            timed(fn, WARMUP)
        sdk.native_times(WARMUP)
        best: dict[str, float] = {}
        for _ in range(ROUNDS):
            for name, fn in ways.items():
                value = p50(timed(fn, CALLS))
                best[name] = min(best.get(name, value), value)
            value = p50(sdk.native_times(CALLS))
            best["SDK async"] = min(best.get("SDK async", value), value)
        return best
    finally:
        for client in (raider, sdk, floor):
            if client is not None:
                (client.stop if isinstance(client, McpServer) else client.close)()
        stop_process(proc)


def main() -> None:
    started = time.monotonic()
    for label, flags in (("JSON answers", ["--json"]), ("SSE answers", [])):
        best = measure_mode(label, flags)
        floor, ours = best["floor"], best["raider_sync"]
        rows = [("client", "per call (p50)", "raider_sync / it")]
        for name in ("floor", "raider_sync", "SDK async", "SDK from sync"):
            rows.append((name, ms(best[name]), ratio(ours, best[name]) if name != "raider_sync"
                         else ""))
        table(f"http: SDK server, {label}, tool echo (best of {ROUNDS} rounds of {CALLS})", rows)
        verdict_floor = "ok" if ours <= 1.15 * floor else "MISSED"
        verdict_sdk = "ok" if ours < best["SDK async"] else "MISSED"
        print(f"  targets: within 1.15x of the floor: {ours / floor:.2f}x {verdict_floor}; "
              f"below the SDK's async client: {ours / best['SDK async']:.2f}x {verdict_sdk}")
    print(f"  (http leg took {time.monotonic() - started:.1f} s)")


if __name__ == "__main__":
    main()
