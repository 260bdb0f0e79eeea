"""A served ToolServer's server card: ``GET <path>/server-card`` (SEP-2127, experimental).

A server card tells a client what a server is and where it is reached before it connects
(see :mod:`raider_sync.config.discovery`, which reads them). The served app cannot know the
name it is reached by, so the card is made per request: its remote is the URL the request
came to (``Host``, the mount point and the app's path), and its ``name`` is that host in
reverse DNS order with the server's key (``com.example.mcp/weather``; ``localhost/KEY`` on a
loopback host). ``wsgi_app(tools, server_card={...})`` lays fields of its own over it (a
``name`` of the publisher's namespace, ``websiteUrl``, ``headers`` the server needs...).

Answered with CORS open to every origin (the card is public), ``Cache-Control: max-age=3600``
and an ``ETag``: a request with a matching ``If-None-Match`` gets 304.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any, Callable

from ..protocol.revisions import LEGACY_VERSIONS, MODERN_VERSIONS

CARD_SCHEMA = "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json"
CARD_TYPE = "application/mcp-server-card+json"
SUFFIX = "/server-card"
_LOOPBACK = {"localhost", "127.0.0.1", "[::1]", "::1"}


def server_card(tool_server: Any, url: str, host: str, overrides: dict | None = None) -> dict:
    """The card of ``tool_server`` reached at ``url`` under ``host`` (no port)."""
    if host in _LOOPBACK:
        namespace = "localhost"
    else:
        namespace = ".".join(reversed(host.split(".")))
    description = (tool_server.instructions or f"{tool_server.name}, served by raider_sync")
    card: dict[str, Any] = {
        "$schema": CARD_SCHEMA,
        "name": f"{namespace}/{tool_server.key}",
        "title": tool_server.name,
        "version": tool_server.version,
        "description": description.strip().split("\n", 1)[0][:100],
        "remotes": [{"type": "streamable-http", "url": url,
                     "supportedProtocolVersions": [*MODERN_VERSIONS, *LEGACY_VERSIONS]}],
    }
    card.update(overrides or {})
    return card


def answer_card(tool_server: Any, environ: dict, start_response: Callable, app_path: str,
                overrides: dict | None) -> list[bytes]:
    """The WSGI answer to ``GET .../server-card`` (405 for another verb)."""
    if environ.get("REQUEST_METHOD") not in ("GET", "HEAD"):
        start_response("405 Method Not Allowed", [("Allow", "GET"), ("Content-Length", "0")])
        return [b""]
    host_header = environ.get("HTTP_HOST") or environ.get("SERVER_NAME", "localhost")
    host = host_header.rsplit(":", 1)[0] if not host_header.endswith("]") else host_header
    url = (f"{environ.get('wsgi.url_scheme', 'http')}://{host_header}"
           f"{environ.get('SCRIPT_NAME', '')}{app_path}")
    body = json.dumps(server_card(tool_server, url, host, overrides), ensure_ascii=False,
                      sort_keys=True).encode()
    etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
    headers = [("ETag", etag), ("Cache-Control", "public, max-age=3600"),
               ("Access-Control-Allow-Origin", "*"), ("Vary", "Host")]
    if environ.get("HTTP_IF_NONE_MATCH") == etag:
        start_response("304 Not Modified", headers)
        return [b""]
    start_response("200 OK", [("Content-Type", CARD_TYPE),
                              ("Content-Length", str(len(body))), *headers])
    return [b"" if environ.get("REQUEST_METHOD") == "HEAD" else body]
