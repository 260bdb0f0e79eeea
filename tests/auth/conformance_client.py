"""The MCP conformance harness's client, driving raider_sync's public API only.

    conformance_client.py [--debug] URL        (MCP_CONFORMANCE_SCENARIO, MCP_CONFORMANCE_CONTEXT set)

Connects to URL with an McpServer whose OAuth is set up from the scenario's context (a
pre-registered client, a grant without a person, DPoP), lists the tools, calls the first with
``{}`` and exits 0; exits 1 when the server cannot be reached or the call fails.
"""
from __future__ import annotations

import json
import logging
import os
import sys

from raider_sync import McpConfig, McpServer, RaiderError
from raider_sync.auth import (
    ClientCredentials,
    IdJag,
    JwtBearer,
    MemoryTokenStore,
    OAuth,
    PrivateKeyJWT,
    redirect_consent,
)

CIMD_URL = "https://conformance-test.local/client-metadata.json"
#: bounds for a hang, not for speed: a harness run starts dozens of clients at once
TIMEOUT = 120.0


def make_auth(scenario: str, context: dict) -> OAuth:
    options: dict = {"store": MemoryTokenStore(), "consent": redirect_consent(),
                     "client_metadata_url": CIMD_URL}
    name = scenario.removeprefix("auth/")
    if name == "pre-registration":
        options.update(client_id=context["client_id"], client_secret=context["client_secret"])
    elif name == "client-credentials-basic":
        options["grant"] = ClientCredentials(context["client_id"], context["client_secret"])
    elif name == "client-credentials-jwt":
        options["grant"] = PrivateKeyJWT(context["client_id"], context["private_key_pem"],
                                         context.get("signing_algorithm", "ES256"))
    elif name.startswith(("cross-app-access", "enterprise-managed-authorization")):
        options["grant"] = IdJag(context["idp_token_endpoint"], context["idp_id_token"],
                                 context["idp_client_id"], context["client_id"],
                                 context.get("client_secret"))
    elif name == "wif-jwt-bearer":
        options["grant"] = JwtBearer(context["valid_jwt"], context.get("client_id"))
    elif name in ("dpop", "dpop-nonce"):
        options["dpop"] = True
    return OAuth(**options)


def main(argv: list[str]) -> int:
    if "--debug" in argv:
        logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
    url = argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    config = McpConfig.from_dict({"mcpServers": {"conformance": {"type": "http", "url": url}}})
    server = McpServer(config.server("conformance"), startup_timeout_ms=int(TIMEOUT * 1000),
                       auth=make_auth(scenario, context))
    try:
        server.initialize()
        if server.status != "connected":
            print(f"not connected: {server.status}: {server.reason}", file=sys.stderr)
            return 1
        tools = server.list_tools(timeout=TIMEOUT)
        if tools:
            server.call_tool(tools[0]["name"], {}, timeout=TIMEOUT)
        return 0
    except RaiderError as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
