"""``raider-sync demo``: the library's main job, shown on the configured (or embedded) servers."""
from __future__ import annotations

import time

from .client_cli import EXIT_FAILED, EXIT_OK, _Servers, _text_of


def _say(text: str) -> None:
    print(text, flush=True)


def demo(args) -> int:
    started = time.monotonic()
    with _Servers(args) as servers:
        _say(f"started {len(servers)} server(s) in {time.monotonic() - started:.2f} s")
        for server in servers:
            _say(f"  {server.name}: {server.status}"
                 + (f" ({server.reason})" if server.reason else "")
                 + (f", protocol {server.protocol_version}" if server.protocol_version else ""))
        connected = [s for s in servers if s.status == "connected"]
        if not connected:
            return EXIT_FAILED
        server = connected[0]
        _say(f"\ntools of {server.name}:")
        for tool in server.list_tools():
            _say(f"  {tool['name']}: {(tool.get('description') or '').strip()[:60]}")
        echo = next((n for n in server.tool_names if n.endswith("__echo")), None)
        if echo:
            started = time.monotonic()
            result = server.call_tool(echo, {"message": "hello from raider_sync"})
            _say(f"\ncall {echo} -> {_text_of(result)!r} "
                 f"({(time.monotonic() - started) * 1000:.1f} ms)")
            calls = 200
            started = time.monotonic()
            for _ in range(calls):
                server.call_tool(echo, {"message": "x"})
            _say(f"{calls} more calls: {(time.monotonic() - started) / calls * 1000:.3f} ms each")
        if server.has_resources:
            resources = server.list_resources()
            _say(f"\nresources of {server.name}: {[r['uri'] for r in resources]}")
            if resources:
                first = server.read_resource(resources[0]["uri"])[0]
                _say(f"read {resources[0]['uri']}: {first.get('text', '')[:60]!r}...")
    _say("\nstopped every server; nothing left running")
    return EXIT_OK
