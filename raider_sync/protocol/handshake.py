"""The rules of the initialize handshake: what raider_sync sends, what it accepts back.

Pure functions: the caller sends the request and hands over the answer.
"""
from __future__ import annotations

from typing import Any

from ..errors import McpError, UnsupportedProtocol
from .codes import INTERNAL_ERROR, UNSUPPORTED_VERSION
from .revisions import (
    CLIENT_PROTOCOL_VERSION,
    KNOWN_PROTOCOL_VERSIONS,
    STATELESS_PROTOCOL_VERSION,
    STATELESS_REASON,
)


def initialize_params(capabilities: dict, client_info: dict,
                      version: str = CLIENT_PROTOCOL_VERSION) -> dict:
    """The params of the ``initialize`` request raider_sync sends."""
    return {"protocolVersion": version, "capabilities": capabilities,
            "clientInfo": client_info}


def check_initialize_result(result: Any) -> str:
    """The negotiated revision of an ``initialize`` result. Raises UnsupportedProtocol for a
    revision raider_sync does not accept, McpError for a result that is not one."""
    if not isinstance(result, dict) or not isinstance(result.get("protocolVersion"), str):
        raise McpError(INTERNAL_ERROR, "the initialize answer has no protocolVersion")
    version = result["protocolVersion"]
    if version == STATELESS_PROTOCOL_VERSION:
        raise UnsupportedProtocol(UNSUPPORTED_VERSION, STATELESS_REASON)
    if version not in KNOWN_PROTOCOL_VERSIONS:
        raise UnsupportedProtocol(
            UNSUPPORTED_VERSION,
            f"the server answered protocol version {version}, raider_sync asked for "
            f"{CLIENT_PROTOCOL_VERSION} and accepts {', '.join(KNOWN_PROTOCOL_VERSIONS)}")
    return version


def translate_initialize_error(error: McpError) -> McpError:
    """An initialize error answer, recognised as the stateless revision's refusal (-32022
    naming only 2026-07-28 as supported) where it is one."""
    supported = error.data.get("supported") if isinstance(error.data, dict) else None
    if error.code == UNSUPPORTED_VERSION or supported is not None:
        if isinstance(supported, list) and not set(supported) & set(KNOWN_PROTOCOL_VERSIONS):
            return UnsupportedProtocol(error.code, STATELESS_REASON
                                       if STATELESS_PROTOCOL_VERSION in supported else
                                       f"the server supports only {', '.join(map(str, supported))}; "
                                       f"raider_sync speaks {', '.join(KNOWN_PROTOCOL_VERSIONS)}",
                                       error.data)
    return error
