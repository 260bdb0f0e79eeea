"""Every JSON-RPC and MCP error code raider_sync sends or looks for, each named once.

JSON-RPC 2.0 reserves -32768..-32000 for itself (the first five below); MCP uses codes of
the range it leaves to implementations for what is its own. Code that answers or reads an
error names it from here; a number written out anywhere else is a bug.
"""
from __future__ import annotations

#: the body is not JSON
PARSE_ERROR = -32700
#: not a valid JSON-RPC request (a wrong ``jsonrpc``, ``method``, ``params`` or ``id``)
INVALID_REQUEST = -32600
#: the method is not served
METHOD_NOT_FOUND = -32601
#: the params do not fit the method (an unknown prompt, a bad cursor, a missing ``_meta``)
INVALID_PARAMS = -32602
#: the peer failed at the request, or answered it with something that is not its result
INTERNAL_ERROR = -32603

#: MCP: resources/read of a URI the server does not have
RESOURCE_NOT_FOUND = -32002
#: MCP 2026-07-28: the Mcp-Method or Mcp-Name header disagrees with the body
HEADER_MISMATCH = -32020
#: MCP 2026-07-28: the request needs a client capability its ``_meta`` does not declare
MISSING_CAPABILITY = -32021
#: MCP: no protocol revision in common (``data.supported`` names the server's)
UNSUPPORTED_VERSION = -32022
#: the name :mod:`raider_sync.protocol` has always exported for it
UNSUPPORTED_PROTOCOL_VERSION = UNSUPPORTED_VERSION
#: a request cancelled by its sender
REQUEST_CANCELLED = -32800
#: the gateway: the key is over a rate limit (HTTP 429; ``data`` names the limit and the
#: seconds to wait). JSON-RPC's generic server error: MCP gives rate limits no code of its own
RATE_LIMITED = -32000

#: the codes only a server of the stateless revision answers
STATELESS_CODES = (HEADER_MISMATCH, MISSING_CAPABILITY, UNSUPPORTED_VERSION)

# The events extension (io.modelcontextprotocol/events, a draft): its provisional codes
#: events: an unknown event name, or no webhook subscription by that key (``data.kind``)
EVENT_NOT_FOUND = -32023
#: events: the caller may not subscribe to that event with those arguments
EVENT_FORBIDDEN = -32024
#: events: a server limit was reached (``data.limit``)
EVENT_EXHAUSTED = -32025
#: events: a well-formed request asks for what is not offered (``data.feature``)
EVENT_UNSUPPORTED = -32026
#: events: a webhook endpoint failed verification or could not be reached (``data.reason``)
CALLBACK_ENDPOINT_ERROR = -32027
