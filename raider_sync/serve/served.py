"""The server side of the stateless revision, for a served ToolServer.

    era = ServedEra()
    era.claim(method, params)      # "modern" or "legacy", fixed by the first request
    check_envelope(params)         # the revision a stateless request carries, or McpError

A served connection (one stdio client) speaks the era of its first request: ``initialize``
opens the handshake era; anything carrying the stateless ``_meta`` (``server/discover`` first,
usually) opens the stateless one. A later request of the other era is refused: ``initialize``
on a stateless connection with -32022 naming the revisions served, a stateless request on a
handshake connection with -32600. Nothing here blocks.
"""
from __future__ import annotations

import threading
from typing import Any

from ..client.eras.modern import (
    META_CAPABILITIES,
    META_SERVER_INFO,
    META_SUBSCRIPTION,
    META_VERSION,
    MODERN_VERSIONS,
)
from ..errors import McpError
from ..protocol.codes import INVALID_PARAMS, INVALID_REQUEST, RESOURCE_NOT_FOUND, UNSUPPORTED_VERSION
from .tasks.running import declares_tasks, missing_extension


def has_envelope(params: Any) -> bool:
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and META_VERSION in meta


def meta_version(params: Any) -> Any:
    """The revision a request's ``_meta`` names (None: none)."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta.get(META_VERSION) if isinstance(meta, dict) else None


def stateless_error(exc: McpError, method: str, params: dict) -> McpError:
    """The error a stateless request is answered with for ``exc``: a resources/read of a URI
    the server does not have is -32602 with ``data.uri`` in the stateless revision, where
    the handshake era's is -32002; anything else as it is."""
    if method == "resources/read" and exc.code == RESOURCE_NOT_FOUND:
        data = exc.data if isinstance(exc.data, dict) else {}
        return McpError(INVALID_PARAMS, exc.message, {**data, "uri": params.get("uri")})
    return exc


def check_envelope(params: dict) -> str:
    """The revision of a stateless request. Raises McpError -32602 for a request without the
    required ``_meta`` keys, -32022 for a revision not served."""
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        meta = {}
    missing = [key for key in (META_VERSION, META_CAPABILITIES) if key not in meta]
    if missing:
        raise McpError(INVALID_PARAMS, f"the request's _meta lacks {', '.join(missing)}")
    version = meta[META_VERSION]
    if version not in MODERN_VERSIONS:
        raise McpError(UNSUPPORTED_VERSION, f"unsupported protocol version {version!r}",
                       {"supported": list(MODERN_VERSIONS), "requested": version})
    return version


def discover_result(capabilities: dict, server_info: dict, instructions: str | None) -> dict:
    """The answer to ``server/discover``."""
    result: dict[str, Any] = {"resultType": "complete", "ttlMs": 0, "cacheScope": "public",
                              "supportedVersions": list(MODERN_VERSIONS),
                              "capabilities": capabilities,
                              "_meta": {META_SERVER_INFO: dict(server_info)}}
    if instructions:
        result["instructions"] = instructions
    return result


def listen_ack(params: dict, request_id: Any, can: dict) -> dict:
    """The honored subset of a listen request's filter (``can``: which list kinds may
    change, ``resourceSubscriptions``: whether resources are announced, ``taskIds``:
    whether tasks are served), as the params of its acknowledgement. ``taskIds`` asked for
    by a client that does not declare the tasks extension is refused with McpError -32021,
    as the extension requires."""
    wanted = params.get("notifications")
    if not isinstance(wanted, dict):
        wanted = {}
    if "taskIds" in wanted and not declares_tasks(params):
        raise missing_extension("task status notifications (taskIds)")
    honored: dict[str, Any] = {key: True for key in ("toolsListChanged", "promptsListChanged",
                                                     "resourcesListChanged")
                               if wanted.get(key) and can.get(key)}
    uris = wanted.get("resourceSubscriptions")
    if can.get("resourceSubscriptions") and isinstance(uris, list):
        uris = [uri for uri in uris if isinstance(uri, str) and uri]
        if uris:
            honored["resourceSubscriptions"] = uris
    task_ids = wanted.get("taskIds")
    if can.get("taskIds") and isinstance(task_ids, list):
        task_ids = [task for task in task_ids if isinstance(task, str) and task]
        if task_ids:
            honored["taskIds"] = task_ids
    return {"notifications": honored, "_meta": {META_SUBSCRIPTION: request_id}}


def listen_notification(honored: dict, request_id: Any, *, tools_changed: bool = False,
                        uri: str | None = None, task: dict | None = None) -> dict | None:
    """The notification a listen stream of filter ``honored`` carries for a change of the
    tool list, of the resource ``uri`` (or of one below it), or of the status of ``task``
    (a DetailedTask: ``notifications/tasks``); None when it asked for none of them."""
    meta = {"_meta": {META_SUBSCRIPTION: request_id}}
    if task is not None:
        if task.get("taskId") not in (honored.get("taskIds") or ()):
            return None
        return {"jsonrpc": "2.0", "method": "notifications/tasks", "params": {**task, **meta}}
    if tools_changed:
        if not honored.get("toolsListChanged"):
            return None
        return {"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": meta}
    uris = honored.get("resourceSubscriptions") or []
    if uri is None or not any(uri == u or uri.startswith(u.rstrip("/") + "/") for u in uris):
        return None
    return {"jsonrpc": "2.0", "method": "notifications/resources/updated",
            "params": {"uri": uri, **meta}}


def listen_result(request_id: Any) -> dict:
    """The answer that ends a listen stream gracefully (the server stops)."""
    return {"resultType": "complete", "_meta": {META_SUBSCRIPTION: request_id}}


class ServedEra:
    """The era one served connection speaks: set by its first request."""

    def __init__(self) -> None:
        self.era: str | None = None
        self._lock = threading.Lock()

    def claim(self, method: str, params: dict) -> str:
        """The era of this request on this connection (the first request fixes it). Raises
        McpError for a request of the other era."""
        modern = method != "initialize" and has_envelope(params)
        with self._lock:
            if self.era is None and (modern or method == "initialize"):
                self.era = "modern" if modern else "legacy"
            era = self.era
        if era == "modern" and method == "initialize":
            raise McpError(UNSUPPORTED_VERSION, "this connection speaks the stateless revision; "
                                                "initialize is not accepted",
                           {"supported": list(MODERN_VERSIONS),
                            "requested": params.get("protocolVersion")})
        if era == "legacy" and modern:
            raise McpError(INVALID_REQUEST, "this connection began with initialize; requests "
                                            "of the stateless revision are not accepted")
        if era is None and method == "server/discover":
            raise McpError(INVALID_PARAMS, "server/discover without the stateless _meta")
        return era or "legacy"
