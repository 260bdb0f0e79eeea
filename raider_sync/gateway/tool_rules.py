"""Tools per key: which tools of a server a key may list and call.

    {"id": "alice", "env": "ALICE_KEY", "servers": ["everything"],
     "tools": {"everything": {"allow": ["echo", "get-*"], "deny": ["get-env"]}}}

A key's ``tools`` entry names, per server, the tools it may use: ``allow`` (unset: every tool)
and ``deny`` are tool names or globs (``*``, ``?``, ``[...]``), matched as the client's
``allowedTools``/``disabledTools`` are (:class:`~raider_sync.client.filters.ToolFilter`): deny
wins. A key without an entry for a server sees every tool of it.

The gateway does not speak MCP, so the rules act on two messages only:

- a ``tools/call`` of a tool the key may not use is answered by the gateway, before anything
  goes upstream, with what server-everything answers for a tool it does not have (an
  ``isError`` result, "MCP error -32602: Tool X not found"); a batch holding one is refused
  whole, each of its requests answered with an error;
- the answer to a ``tools/list`` has the tools the key may not use taken out of
  ``result.tools``, in a JSON body and in the one SSE event that carries it; every other byte
  of the answer goes through as it came (``nextCursor`` too: each page is filtered on its own).
  A GET stream under rules (a resumed stream may replay a list's answer) has any answer that
  holds a ``tools`` list filtered the same way.

Nothing here blocks; bad rules are reported by :func:`key_problems` at config load.
"""
from __future__ import annotations

import json
import re
from typing import Any, Iterator, Optional

from pydantic import BaseModel, ConfigDict

from ..client.filters import ToolFilter
from ..protocol.codes import INVALID_PARAMS, INVALID_REQUEST

#: a blank line ends an SSE event; a lone CR is a line end, CR LF one line end, not two
_EVENT_END = re.compile(rb"(?:\r\n|\r(?!\n)|\n)(?:\r\n|\r(?!\n)|\n)")
_LINE_END = re.compile(rb"\r\n|\r|\n")


class ToolRules(BaseModel):
    """One server's rules in a key's ``tools``: ``allow`` (None: every tool) and ``deny``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    allow: Optional[list[str]] = None
    deny: list[str] = []


def key_problems(tools: dict[str, ToolRules], servers: list[str]) -> list[str]:
    """What is wrong with a key's ``tools`` given the servers it may use, as ``field: problem``
    texts (empty when fine)."""
    out = []
    for name, rules in tools.items():
        if name not in servers:
            out.append(f"tools.{name}: the key may not use a server named {name!r}")
        for field, patterns in (("allow", rules.allow or []), ("deny", rules.deny)):
            if any(not pattern for pattern in patterns):
                out.append(f"tools.{name}.{field}: a tool name or glob may not be empty")
    return out


def filters(keys) -> dict[tuple[str, str], ToolFilter]:
    """``{(key id, server name): ToolFilter}`` for every rule of ``keys`` (checked entries)."""
    return {(key.id, name): ToolFilter(rules.allow, rules.deny)
            for key in keys for name, rules in key.tools.items()}


#: :meth:`Screen.applies` for an answer that must be filtered but is compressed
ENCODED = object()


class Screen:
    """What the rules of one key and server do to one request: :attr:`refusal` is the answer
    the gateway gives instead of relaying (None: relay it), :meth:`json` and :meth:`events`
    filter the answer. ``ids`` are the JSON-encoded ids of the request's tools/list calls;
    None (a GET stream) means any answer holding a ``tools`` list."""

    def __init__(self, rule: ToolFilter, ids: Optional[set[str]], refusal: Optional[bytes]):
        self.rule, self.ids, self.refusal = rule, ids, refusal

    def applies(self, status: int, headers: list[tuple[str, str]], event_stream: bool) -> Any:
        """This screen for an answer it filters; None for one it leaves alone (an error, an
        empty or non-JSON answer); :data:`ENCODED` for one it should filter but cannot open
        (the gateway never decompresses)."""
        types = [v for k, v in headers if k.lower() == "content-type"]
        kind = types[0].split(";", 1)[0].strip().lower() if types else ""
        if status != 200 or not (event_stream or kind == "application/json"):
            return None
        if any(k.lower() == "content-encoding" and v.strip().lower() not in ("", "identity")
               for k, v in headers):
            return ENCODED
        return self

    def json(self, body: bytes) -> bytes:
        """A JSON answer (one message or a batch) with the key's tools only; ``body`` itself
        when nothing is taken out."""
        try:
            message = json.loads(body)
        except (ValueError, UnicodeDecodeError, RecursionError):
            return body
        changed = any([self._filter(m) for m in message]) if isinstance(message, list) \
            else self._filter(message)
        return _dump(message) if changed else body

    def events(self, chunks: Iterator[bytes]) -> Iterator[bytes]:
        """The SSE stream ``chunks`` with its tools/list answer filtered. Complete events are
        passed on as they arrive (an event is held only until its blank line); once every
        answer looked for went by, the rest goes through untouched."""
        held = b""
        for chunk in chunks:
            if self.ids is not None and not self.ids:
                yield held + chunk if held else chunk
                held = b""
                continue
            held += chunk
            cut = _last_end(held)
            if cut:
                out, held = b"".join(self._event(e) for e in _split(held[:cut])), held[cut:]
                yield out
        if held:
            yield self._event(held)

    def _event(self, event: bytes) -> bytes:
        if b'"tools"' not in event or (self.ids is not None and not self.ids):
            return event
        end = _EVENT_END.search(event)
        body, terminator = (event[:end.start()], event[end.start():]) if end else (event, b"")
        lines = _LINE_END.split(body)
        newline = _LINE_END.search(body)
        data = [line[5:] for line in lines if line.startswith(b"data:")]
        try:
            message = json.loads(b"\n".join(d[1:] if d.startswith(b" ") else d for d in data))
        except (ValueError, UnicodeDecodeError, RecursionError):
            return event
        if not self._filter(message):
            return event
        kept: list[bytes] = []
        for line in lines:
            if line.startswith(b"data:"):
                if data:
                    kept.append(b"data: " + _dump(message))
                    data = []
            else:
                kept.append(line)
        return (newline.group() if newline else b"\n").join(kept) + terminator

    def _filter(self, message: Any) -> bool:
        """Take the tools the key may not use out of ``message`` when it is an answer looked
        for; whether anything was taken out."""
        if not isinstance(message, dict) or "result" not in message:
            return False
        result = message["result"]
        tools = result.get("tools") if isinstance(result, dict) else None
        if self.ids is not None:
            ident = _ident(message.get("id"))
            if ident not in self.ids:
                return False
            self.ids.discard(ident)
        if not isinstance(tools, list):
            return False
        allowed = [t for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)
                   and self.rule.allows(t["name"])]
        if len(allowed) == len(tools):
            return False
        result["tools"] = allowed
        return True


class Screened:
    """An upstream answer (:class:`~raider_sync.gateway.upstream.Answer`) whose SSE events go
    through :meth:`Screen.events`; everything else is the answer's own."""

    def __init__(self, answer: Any, screen: Screen):
        self._answer, self._screen = answer, screen

    def chunks(self, size: int) -> Iterator[bytes]:
        for chunk in self._screen.events(self._answer.chunks(size)):
            if chunk:
                yield chunk

    def __getattr__(self, name: str) -> Any:
        return getattr(self._answer, name)


def screen(rule: Optional[ToolFilter], message: Any, http_method: str, modern: bool
           ) -> Optional[Screen]:
    """The :class:`Screen` of a request under ``rule`` (None: no rule, nothing to do).
    ``message`` is the parsed body of a POST (None otherwise); ``modern`` whether the request
    is of the stateless era (its refusal then carries ``resultType``)."""
    if rule is None or not rule.active:
        return None
    if http_method == "GET":
        return Screen(rule, None, None)
    if http_method != "POST":
        return None
    batch = message if isinstance(message, list) else [message]
    ids: set[str] = set()
    denied = []
    for one in batch:
        if not isinstance(one, dict) or "id" not in one:
            continue
        method, params = one.get("method"), one.get("params")
        if method == "tools/list":
            ids.add(_ident(one["id"]))
        elif method == "tools/call":
            name = params.get("name") if isinstance(params, dict) else None
            if not isinstance(name, str) or not rule.allows(name):
                denied.append(one)
    if not denied:
        return Screen(rule, ids, None) if ids else None
    if not isinstance(message, list):
        return Screen(rule, ids, _dump(_not_found(message, modern)))
    # a batch cannot be half relayed: every request in it is answered, none goes upstream
    answers = [_not_found(one, modern) if one in denied else {
        "jsonrpc": "2.0", "id": one["id"], "error": {
            "code": INVALID_REQUEST,
            "message": "not relayed: the batch calls a tool that is not found"}}
        for one in batch if isinstance(one, dict) and "id" in one]
    return Screen(rule, ids, _dump(answers))


def _not_found(request: dict, modern: bool) -> dict:
    params = request.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    result: dict[str, Any] = {"content": [{"type": "text",
                                           "text": f"MCP error {INVALID_PARAMS}: Tool {name} not found"}],
                              "isError": True}
    if modern:
        result["resultType"] = "complete"
    return {"jsonrpc": "2.0", "id": request.get("id"), "result": result}


def _ident(value: Any) -> str:
    return json.dumps(value)  # 1 and "1" are different ids


def _dump(message: Any) -> bytes:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()


def _last_end(buffer: bytes) -> int:
    """Where the last complete event of ``buffer`` ends (0: none yet). A CR at the very end may
    be the first half of a CR LF, so it waits for the next chunk."""
    cut = 0
    for match in _EVENT_END.finditer(buffer):
        if match.end() == len(buffer) and buffer.endswith(b"\r"):
            break
        cut = match.end()
    return cut


def _split(events: bytes) -> list[bytes]:
    """Complete events, each with its terminating blank line."""
    out, start = [], 0
    for match in _EVENT_END.finditer(events):
        out.append(events[start:match.end()])
        start = match.end()
    if start < len(events):
        out.append(events[start:])
    return out
