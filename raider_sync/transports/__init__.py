"""Transports move JSON-RPC messages and nothing else: no ids, no MCP meaning.

Every transport has ``start(deliver, closed, timeout)``, ``send(message, deadline)`` and
``close()``; ``deliver(message)`` is called on the transport's reader thread for each message
received, ``closed(error)`` once when the connection ends without being closed by its owner.
"""
from __future__ import annotations

from ..errors import RaiderError
from ..protocol.messages import DEFAULT_MAX_MESSAGE_SIZE
from .base import Transport
from .http import StreamableHttpTransport
from .sse import LegacySseTransport
from .stdio import StdioTransport

__all__ = ["LegacySseTransport", "StdioTransport", "StreamableHttpTransport", "Transport",
           "open_transport"]


def open_transport(spec, *, env: dict[str, str], kill_grace: float,
                   max_message_size: int | None = None, auth=None) -> Transport:
    """The transport a server spec names (not yet started); ``auth`` serves HTTP ones. The
    bound on one received message is the spec's ``max_message_size``, else
    ``max_message_size``, else 64 MiB."""
    limit = spec.max_message_size or max_message_size or DEFAULT_MAX_MESSAGE_SIZE
    if spec.transport == "stdio":
        return StdioTransport(spec.command, spec.args, env=env, cwd=spec.cwd, name=spec.key,
                              kill_grace=kill_grace, max_message_size=limit)
    if spec.transport == "http":
        return StreamableHttpTransport(spec.url, name=spec.key, headers=spec.headers,
                                       headers_helper=spec.headers_helper, env=env,
                                       max_message_size=limit, auth=auth)
    if spec.transport == "sse":
        return LegacySseTransport(spec.url, name=spec.key, headers=spec.headers,
                                  headers_helper=spec.headers_helper, env=env,
                                  max_message_size=limit, auth=auth)
    raise RaiderError(f"the {spec.transport} transport is not available in this version")
