"""raider_sync as a client under the MCP conformance harness (every scenario but auth/*).

    python client_core.py URL

The harness appends the mock server's URL and sets MCP_CONFORMANCE_SCENARIO and
MCP_CONFORMANCE_CONTEXT (JSON; ``toolCalls`` lists the calls to make). The script uses only
raider_sync's public API: it connects (protocol "auto"), lists the tools, makes the calls the
context names (or calls every tool, all at once, with arguments drawn from its schema), reads
every resource, gets every prompt, and stops. Exit status 0 when it all worked.
"""
from __future__ import annotations

import json
import logging
import os
import sys

from raider_sync import LostInFlight, McpConfig, McpError, McpServer, SkillRejected

TIMEOUT = 120.0  # a bound for a hang: a harness run starts dozens of clients at once
SCENARIO = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
CONTEXT = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")


def sample(schema: dict, *, required_only: bool = False) -> dict:
    """Arguments for an object schema: a plain value for each property (the required ones
    only with ``required_only``), none where the schema gives a default."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    required = set(schema.get("required") or []) if isinstance(schema, dict) else set()
    values: dict = {}
    for name, prop in (properties or {}).items():
        if not isinstance(prop, dict) or "default" in prop:
            continue
        if required_only and name not in required:
            continue
        kind = prop.get("type")
        if "enum" in prop and prop["enum"]:
            values[name] = prop["enum"][0]
        elif kind in ("number", "integer"):
            values[name] = 1
        elif kind == "boolean":
            values[name] = True
        elif kind == "object":
            values[name] = sample(prop, required_only=True)
        elif kind == "array":
            values[name] = []
        else:
            values[name] = "test"
    return values


def on_elicitation(params: dict) -> dict:
    """Accept, filling in what the form requires (raider_sync adds the defaults)."""
    return {"action": "accept",
            "content": sample(params.get("requestedSchema") or {}, required_only=True)}


def on_sampling(params: dict) -> dict:
    return {"role": "assistant", "model": "conformance",
            "content": {"type": "text", "text": "sampled"}}


def calls_for(server: McpServer) -> list[tuple[str, dict]]:
    """The tool calls to make: the context's, or one per tool."""
    if CONTEXT.get("toolCalls"):
        return [(call["name"], call.get("arguments") or {}) for call in CONTEXT["toolCalls"]]
    tools = server.list_tools(timeout=TIMEOUT)
    originals = {server.original_name(tool["name"]): tool for tool in tools}
    if "json_schema_echo" in originals:  # hand the focal tool's schema back as it came
        focal = next(tool for name, tool in originals.items() if name != "json_schema_echo")
        return [("json_schema_echo", {"schema": focal["inputSchema"]})]
    return [(name, sample(tool.get("inputSchema") or {}, required_only=True))
            for name, tool in originals.items()]


def skills(server: McpServer) -> int:
    """List the skills; load the first unless the scenario is about not reading early. A
    skill that fails verification is rejected (SkillRejected), and that is success here."""
    listed = server.list_skills(timeout=TIMEOUT)
    print(f"skills: {[skill['uri'] for skill in listed]}", file=sys.stderr)
    if SCENARIO != "sep-2640-client-no-prefetch" and listed:
        try:
            skill = server.get_skill(listed[0]["uri"], timeout=TIMEOUT)
            print(f"loaded {skill['uri']} with {len(skill['files'])} files", file=sys.stderr)
        except SkillRejected as exc:
            print(f"rejected: {exc}", file=sys.stderr)
    return 0


def outcome(server: McpServer, name: str, arguments: dict, future) -> dict:
    """The result of a call, called once more when it was lost in flight (its connection
    reset after it went out, so its outcome is unknown). raider_sync never repeats a
    tools/call itself; the caller may, and this one does: the harness's tools are fixtures
    that are safe to call twice, and a harness run starts dozens of clients at once, so its
    servers, all in one Node process, can be held up past their keep-alive timeout (5 s) and
    then reset a connection that a request has just reached."""
    try:
        return future.result(TIMEOUT + 5)
    except LostInFlight as exc:
        print(f"{name}: lost in flight ({exc}); calling it once more", file=sys.stderr)
        return server.call_tool(name, arguments, timeout=TIMEOUT)


def main(url: str) -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    spec = McpConfig.from_dict({"mcpServers": {"conformance": {"type": "http", "url": url}}}
                               ).server("conformance")
    server = McpServer(spec, roots=["file:///tmp/conformance"], on_sampling=on_sampling,
                       on_elicitation=on_elicitation,
                       client_info={"name": "raider_sync-conformance", "version": "1.0"})
    try:
        server.initialize(timeout=TIMEOUT)
        if server.status != "connected":
            print(f"not connected: {server.reason}", file=sys.stderr)
            return 1
        print(f"connected: era {server.era}, revision {server.protocol_version}",
              file=sys.stderr)
        if SCENARIO.startswith("sep-2640"):
            return skills(server)
        calls = calls_for(server)
        sequential = bool(CONTEXT.get("toolCalls"))
        futures = []
        for name, arguments in calls:
            future = server.call_tool_f(name, arguments, timeout=TIMEOUT)
            if sequential:
                outcome(server, name, arguments, future)
            futures.append((name, arguments, future))
        for name, arguments, future in futures:
            try:
                result = outcome(server, name, arguments, future)
            except McpError as exc:
                if sequential:
                    raise
                # a tool of the mock's that is only listed, not meant to be called
                print(f"{name}: error answer {exc}", file=sys.stderr)
                continue
            print(f"{name}: {json.dumps(result)[:200]}", file=sys.stderr)
        for resource in server.list_resources(timeout=TIMEOUT):
            server.read_resource(resource["uri"], timeout=TIMEOUT)
        for prompt in server.list_prompts(timeout=TIMEOUT):
            arguments = {arg["name"]: "test" for arg in prompt.get("arguments") or []
                         if isinstance(arg, dict) and arg.get("required")}
            server.get_prompt(prompt["name"], arguments, timeout=TIMEOUT)
        return 0
    except Exception as exc:  # noqa: BLE001 - the harness reads the exit status
        print(f"failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[-1]))
