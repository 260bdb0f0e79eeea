"""The wire rules of MCP, with no I/O and no threads: what is sent and how it reads.

- :mod:`.revisions`: the revisions raider_sync speaks; the requests that may be sent twice
- :mod:`.handshake`: the initialize handshake's params and what its answer must be
- :mod:`.pages`: the pagination loop of the list methods
- :mod:`.codes`: every JSON-RPC and MCP error code, each named once
- :mod:`.messages`: JSON-RPC messages: encoding, decoding, kinds, error answers
- :mod:`.http_headers`: the stateless revision's per-message HTTP headers
- :mod:`.sse_events`: the event-stream (SSE) framing, parsed and encoded
- :mod:`.events`, :mod:`.webhooks`: the events extension (a draft) and its webhook signature

Everything above imports from here or from these modules; nothing here imports from above.
The names below are the ones ``raider_sync.protocol`` had as a single module.
"""
from __future__ import annotations

from .codes import UNSUPPORTED_PROTOCOL_VERSION
from .handshake import check_initialize_result, initialize_params, translate_initialize_error
from .pages import MAX_PAGES, fetch_all_pages
from .revisions import (
                        CLIENT_PROTOCOL_VERSION,
                        KNOWN_PROTOCOL_VERSIONS,
                        REPEATABLE_METHODS,
                        STATELESS_PROTOCOL_VERSION,
                        STATELESS_REASON,
)

__all__ = ["CLIENT_PROTOCOL_VERSION", "KNOWN_PROTOCOL_VERSIONS", "MAX_PAGES",
           "REPEATABLE_METHODS", "STATELESS_PROTOCOL_VERSION", "STATELESS_REASON",
           "UNSUPPORTED_PROTOCOL_VERSION", "check_initialize_result", "fetch_all_pages",
           "initialize_params", "translate_initialize_error"]
