"""The client's side of MCP: what raider_sync answers when a server asks it something.

    McpServer(spec, roots=["file:///home/me/project"],            # or a callable returning them
              on_sampling=lambda params: {"role": "assistant", "model": "m",
                                          "content": {"type": "text", "text": "hi"}},
              on_elicitation=lambda params: {"action": "accept"})

:class:`ClientCapabilities` declares exactly the capabilities that have a handler (``roots``,
``sampling``, ``elicitation`` in form mode) and answers ``roots/list``,
``sampling/createMessage`` and ``elicitation/create``. Handlers run on the session's handler
pool, never on a transport's reader thread, so they may block (a user prompt, a model call);
what one raises becomes the JSON-RPC error answer (:class:`McpError` keeps its code, anything
else is -32603). A request without a handler is answered -32601 (method not found).

Form elicitation (SEP-1034): when the handler accepts without a value for a field whose schema
gives a ``default``, the default is filled in, as a form pre-filled with it would have been.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Iterable, Union

from ..errors import McpError
from ..jsonrpc import MethodNotFound
from ..protocol.codes import INTERNAL_ERROR

Roots = Union[Iterable[Union[str, dict]], Callable[[], Iterable[Union[str, dict]]]]
Handler = Callable[[dict], dict]

ELICITATION_ACTIONS = ("accept", "decline", "cancel")


class ClientCapabilities:
    """The handlers a client offers to servers, and the capabilities they declare.

    ``roots``: file:// URIs, absolute paths or ``{"uri", "name"?}`` dicts, or a callable
    returning them on each ``roots/list``. ``on_sampling(params)`` returns a
    CreateMessageResult dict; ``on_elicitation(params)`` an ElicitResult dict
    (``{"action": "accept"|"decline"|"cancel", "content"?: {...}}``). Raises ValueError for a
    root that is not a file:// URI or absolute path, TypeError for a handler that is not
    callable.
    """

    def __init__(self, *, roots: Roots | None = None, on_sampling: Handler | None = None,
                 on_elicitation: Handler | None = None):
        for label, handler in (("on_sampling", on_sampling), ("on_elicitation", on_elicitation)):
            if handler is not None and not callable(handler):
                raise TypeError(f"{label} must be callable, not {type(handler).__name__}")
        if roots is not None and not callable(roots):
            roots = normalize_roots(roots)  # a fixed list is checked once, now
        # a callable asked at each roots/list, or the fixed list, checked
        self.roots: Callable[[], Iterable[str | dict]] | list[dict] | None = roots
        self.on_sampling = on_sampling
        self.on_elicitation = on_elicitation

    def declared(self) -> dict:
        """The ``capabilities`` of initialize: one entry per handler, nothing else."""
        capabilities: dict[str, Any] = {}
        if self.roots is not None:
            capabilities["roots"] = {}
        if self.on_sampling is not None:
            capabilities["sampling"] = {}
        if self.on_elicitation is not None:
            capabilities["elicitation"] = {"form": {}}
        return capabilities

    def handle(self, method: str, params: dict) -> dict:
        """The answer to a server request. Raises MethodNotFound for a method without a
        handler, McpError (or whatever a handler raises) for a failure."""
        if method == "roots/list" and self.roots is not None:
            return {"roots": self._roots(self.roots)}
        if method == "sampling/createMessage" and self.on_sampling is not None:
            return _object(self.on_sampling(params), "on_sampling")
        if method == "elicitation/create" and self.on_elicitation is not None:
            return self._elicit(self.on_elicitation, params)
        raise MethodNotFound(method)

    @staticmethod
    def _roots(roots: Callable[[], Iterable[str | dict]] | list[dict]) -> list[dict]:
        if callable(roots):
            try:
                return normalize_roots(roots())
            except (TypeError, ValueError) as exc:
                raise McpError(INTERNAL_ERROR, f"the client's roots are not usable: {exc}") from exc
        return [dict(root) for root in roots]

    @staticmethod
    def _elicit(on_elicitation: Handler, params: dict) -> dict:
        result = _object(on_elicitation(params), "on_elicitation")
        action = result.get("action")
        if action not in ELICITATION_ACTIONS:
            raise McpError(INTERNAL_ERROR, f"on_elicitation answered action {action!r}; expected "
                                           f"one of {', '.join(ELICITATION_ACTIONS)}")
        if action == "accept" and params.get("mode", "form") == "form":
            content = result.get("content")
            if content is not None and not isinstance(content, dict):
                raise McpError(INTERNAL_ERROR, "on_elicitation's content must be an object")
            result = {**result, "content": apply_defaults(params.get("requestedSchema"), content)}
        return result


def normalize_roots(roots: Iterable[str | dict]) -> list[dict]:
    """``[{"uri": "file://...", "name"?: ...}]`` from URIs, absolute paths or root dicts.
    Raises ValueError for anything else (MCP roots are file:// URIs)."""
    if isinstance(roots, (str, bytes, dict)):
        raise TypeError("roots must be a list of file:// URIs or paths, not a single value")
    out = []
    for root in roots:
        if isinstance(root, dict):
            uri = root.get("uri")
            entry = dict(root)
        elif isinstance(root, str):
            uri = root
            entry = {}
        else:
            raise TypeError(f"a root must be a string or a dict, not {type(root).__name__}")
        if isinstance(uri, str) and os.path.isabs(uri) and not uri.startswith("file:"):
            uri = Path(uri).as_uri()
        if not isinstance(uri, str) or not uri.startswith("file://"):
            raise ValueError(f"a root must be a file:// URI or an absolute path: {uri!r}")
        entry["uri"] = uri
        if "name" not in entry:
            name = os.path.basename(uri[len("file://"):].rstrip("/"))
            if name:
                entry["name"] = name
        out.append(entry)
    return out


def apply_defaults(schema: Any, content: dict | None) -> dict:
    """``content`` with every property of ``schema`` that has a ``default`` and no value in
    ``content`` set to that default (SEP-1034)."""
    filled = dict(content or {})
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if isinstance(properties, dict):
        for name, prop in properties.items():
            if isinstance(prop, dict) and "default" in prop and filled.get(name) is None:
                filled[name] = prop["default"]
    return filled


def _object(value: Any, who: str) -> dict:
    if not isinstance(value, dict):
        raise McpError(INTERNAL_ERROR, f"{who} must return a dict, not {type(value).__name__}")
    return value
