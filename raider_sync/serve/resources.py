"""Resources: what the configured servers offer as resources, as two tools and as attachments.

    res = Resources(servers=lambda: hub.clients)
    res.list()                                  # [{server, uri, name, mimeType, description}]
    res.read("docs", "file:///api.md")          # the text; a blob as a note
    res.attachments("Compare @docs:file:///api.md with the code")   # [str, ...]
    hub.mount(res.tool_server)                  # list_mcp_resources, read_mcp_resource

This is what Claude Code does with MCP resources: the tools ListMcpResourcesTool and
ReadMcpResourceTool, and ``@server:scheme://path`` mentions in a prompt, read and attached as
``<system-reminder>`` blocks. A server is named as in the configuration (a plugin's server as
``plugin:NAME:SERVER``) or by the server part of its tool names (its key, ``plugin_NAME_SERVER``).
The servers are asked for on every use, so a reload is seen at once.
"""
from __future__ import annotations

import base64
import binascii
import builtins
import json
import logging
import re
import threading
from concurrent.futures import CancelledError, Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Callable, Iterable, Optional

from pydantic import BaseModel, ConfigDict, Field

from ..config import find_named
from ..errors import NotConnected, RaiderError, RequestTimeout, UnknownServer
from ..threads.futures import all_done, failed, resolved, then
from ..threads.timeouts import seconds
from .toolserver import ToolServer

log = logging.getLogger("raider_sync.resources")

LIST_TOOL = "list_mcp_resources"
READ_TOOL = "read_mcp_resource"
TOOL_SERVER_NAME = "resources"

#: Claude Code's texts for an attached resource and for an empty listing
FULL_CONTENTS = "Full contents of resource:"
DO_NOT_READ_AGAIN = ("Do NOT read this resource again unless you think it may have changed, "
                     "since you already have the full contents.")
NO_RESOURCES = ("No resources found. MCP servers may still provide tools even if they have no "
                "resources.")

#: what may end a sentence after a mention; tried off the end when the whole does not read
TRAILING_PUNCTUATION = ".,;:!?)]}>'\"`"
#: waiting on a server's own bounded future gets this margin before giving up on it
_MARGIN_S = 5.0
_DEFAULT_TIMEOUT_S = 60.0

_MENTION = re.compile(r"(?<!\S)@(\S+)")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


class Resources:
    """The resources of the servers ``servers()`` returns (McpServer or ToolServer objects).

    ``timeout`` (seconds) bounds one read (default: each server's call timeout) and the wait
    for a listing (default 60). Thread-safe; holds no threads of its own except the pool of
    :attr:`tool_server` once that is called, which :meth:`close` joins.
    """

    def __init__(self, servers: Callable[[], Iterable[Any]], *, timeout: float | None = None,
                 tool_server_name: str = TOOL_SERVER_NAME):
        if not callable(servers):
            raise TypeError("servers must be a callable returning the servers, "
                            "e.g. lambda: hub.clients")
        self._servers = servers
        self.timeout = None if timeout is None else seconds(timeout, 0.0, method="Resources")
        self.tool_server_name = tool_server_name
        self._tool_server: ToolServer | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<Resources of {[s.name for s in self.servers()]!r}>"

    def __enter__(self) -> "Resources":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- which server --------------------------------------------------------------------

    def servers(self) -> list:
        """The servers as ``servers()`` gives them right now."""
        return list(self._servers() or [])

    def server(self, name: str) -> Any:
        """The server named ``name`` (as configured, or by its key). Raises UnknownServer,
        whose message lists the available servers."""
        servers = self.servers()
        server = find_named(servers, name)
        if server is not None:
            return server
        raise UnknownServer(f'Server "{name}" not found. Available servers: '
                            f'{", ".join(s.name for s in servers)}')

    def _readable(self, name: str) -> Any:
        server = self.server(name)
        if server.status != "connected":
            why = f": {server.reason}" if getattr(server, "reason", None) else ""
            raise NotConnected(f'Server "{server.name}" is not connected ({server.status}{why})')
        if not server.has_resources:
            raise RaiderError(f'Server "{server.name}" does not support resources')
        return server

    def _timeout(self, timeout: Any, method: str) -> float | None:
        """``timeout`` checked (see :func:`raider_sync.threads.timeouts.seconds`); None: the one this
        object was given, which may be None too (then each server's call timeout)."""
        return self.timeout if timeout is None else seconds(timeout, 0.0, method=method)

    # -- list ----------------------------------------------------------------------------

    def list_f(self, server: str | None = None) -> Future:
        """A future of every resource of the connected servers (or of the one named) as
        ``{server, uri, name, mimeType, description}``. A server that is not connected or has
        no resources adds nothing; a failing listing adds nothing (it is logged). Fails only
        with UnknownServer for a name that is not configured."""
        try:
            servers = [self.server(server)] if server is not None else self.servers()
        except UnknownServer as exc:
            return failed(exc)
        servers = [s for s in servers if s.status == "connected" and s.has_resources]
        futures = [_guarded(s.list_resources_f) for s in servers]
        return then(all_done(futures), lambda _: [
            _entry(s, r) for s, f in zip(servers, futures, strict=True) for r in _listed(s, f)])

    # (the signatures below say builtins.list: this method hides the builtin in the class)
    def list(self, server: str | None = None, *, timeout: float | None = None) -> list[dict]:
        """Blocking :meth:`list_f`. Raises UnknownServer, or RequestTimeout when the listing
        takes longer than ``timeout`` s (default: the ``timeout`` given, else 60)."""
        bound = self._timeout(timeout, "Resources.list")
        return _wait(self.list_f(server), _DEFAULT_TIMEOUT_S if bound is None else bound,
                     "listing the resources")

    # -- read ----------------------------------------------------------------------------

    def read_f(self, server: str, uri: str, *, timeout: float | None = None) -> Future:
        """A future of the text of resource ``uri`` of ``server``: the text of every content
        item, one per line, a binary item (blob) as ``[Binary content: TYPE, N bytes]``.

        Fails with UnknownServer, NotConnected, RaiderError (the server has no resources) or
        what the read failed with (McpError for the server's error answer, RequestTimeout
        after ``timeout`` s, default the server's call timeout)."""
        try:
            bound = self._timeout(timeout, "Resources.read_f")
            target = self._readable(server)
            if uri.startswith("skill://") and hasattr(target, "list_skills_f"):
                inner = _skill_read_f(target, uri, bound)
            else:
                inner = target.read_resource_f(uri, timeout=bound)
        except Exception as exc:  # noqa: BLE001 - the future carries every failure
            return failed(exc)
        return then(inner, contents_text)

    def read(self, server: str, uri: str, *, timeout: float | None = None) -> str:
        """Blocking :meth:`read_f`; raises what it fails with."""
        bound = wait = self._timeout(timeout, "Resources.read")
        if wait is None:
            try:
                wait = self.server(server).call_timeout
            except (UnknownServer, AttributeError):
                wait = _DEFAULT_TIMEOUT_S
        return _wait(self.read_f(server, uri, timeout=bound), wait, f"reading {uri}")

    # -- attachments ---------------------------------------------------------------------

    def mentions(self, prompt: str) -> builtins.list[tuple[Any, builtins.list[str]]]:
        """The distinct ``@server:scheme://path`` mentions of ``prompt`` that name a connected
        server with resources: ``(server, uris to try)``, the whole first, then with trailing
        sentence punctuation taken off one character at a time."""
        servers = [s for s in self.servers() if s.status == "connected" and s.has_resources]
        found: list[tuple[Any, list[str]]] = []
        seen: set[tuple[str, str]] = set()
        for match in _MENTION.finditer(prompt or ""):
            token = match.group(1)
            server, uri = _split_mention(token, servers)
            if server is None or (server.name, uri) in seen:
                continue
            seen.add((server.name, uri))
            candidates = [uri]
            while uri and uri[-1] in TRAILING_PUNCTUATION:
                uri = uri[:-1]
                if _SCHEME.fullmatch(uri) or not _SCHEME.match(uri):
                    break
                candidates.append(uri)
            found.append((server, candidates))
        return found

    def attachments_f(self, prompt: str, *, timeout: float | None = None) -> Future:
        """A future of :meth:`attachments`; fails only with InvalidArgument for a bad
        ``timeout``. The mentions are read in parallel."""
        try:
            bound = self._timeout(timeout, "Resources.attachments_f")
        except RaiderError as exc:
            return failed(exc)
        return self._attachments_f(self.mentions(prompt), bound)

    def attachments(self, prompt: str, *, timeout: float | None = None) -> builtins.list[str]:
        """For each distinct ``@server:scheme://path`` of ``prompt`` that names a connected
        server with resources and can be read: the two ``<system-reminder>`` blocks of an
        attachment, as one string, in the order of the prompt. The path ends at whitespace;
        sentence punctuation at its end is tried off when the whole does not read. A mention
        that names no such server, or does not read, stays text (gives no attachment).
        ``timeout`` bounds each read (default: the server's call timeout)."""
        bound = self._timeout(timeout, "Resources.attachments")
        mentions = self.mentions(prompt)
        tries = max([len(uris) for _, uris in mentions] or [1])
        reads = [bound if bound is not None else getattr(server, "call_timeout", _DEFAULT_TIMEOUT_S)
                 for server, _ in mentions]
        return _wait(self._attachments_f(mentions, bound), tries * max(reads or [0.0]),
                     "reading the mentioned resources")

    def _attachments_f(self, mentions: builtins.list[tuple[Any, builtins.list[str]]],
                       timeout: float | None) -> Future:
        reads = [_first_readable(self, server, uris, timeout) for server, uris in mentions]

        def collect(_: Any) -> list[str]:
            blocks, seen = [], set()
            for future in reads:
                found = future.result()
                if found is None or found[:2] in seen:
                    continue
                seen.add(found[:2])
                blocks.append(attachment(found[2]))
            return blocks

        return then(all_done(reads), collect)

    # -- the tools -----------------------------------------------------------------------

    @property
    def tool_server(self) -> ToolServer:
        """A ToolServer with ``list_mcp_resources(server?)`` and ``read_mcp_resource(server,
        uri)``, built once. The first answers with a JSON list (or a note that there are
        none), the second with the text of the resource; failures are ``isError`` results."""
        with self._lock:
            if self._tool_server is None:
                self._tool_server = self._build_tool_server()
            return self._tool_server

    def _build_tool_server(self) -> ToolServer:
        tools = ToolServer(self.tool_server_name, instructions=(
            "Resources of the configured MCP servers: list them, then read one by server "
            "and URI."))
        tools.add_tool(LIST_TOOL, self._list_tool, input_model=ListInput, description=(
            "Lists the resources of the connected MCP servers. Each resource has a 'server' "
            "field naming its server; give 'server' to list only that server's resources."),
            annotations={"readOnlyHint": True})
        tools.add_tool(READ_TOOL, self._read_tool, input_model=ReadInput, description=(
            "Reads a resource of an MCP server, named by the server and the resource URI, "
            "and answers with its text."), annotations={"readOnlyHint": True})
        return tools

    def _list_tool(self, args: "ListInput") -> Future:
        def render(items: list[dict]) -> str:
            return json.dumps(items, ensure_ascii=False) if items else NO_RESOURCES
        return _tool_answer(self.list_f(args.server or None), render)

    def _read_tool(self, args: "ReadInput") -> Future:
        try:
            self._readable(args.server)
        except RaiderError as exc:  # the server's name, state or capability: said as it is
            return resolved((str(exc), True))
        return _tool_answer(self.read_f(args.server, args.uri), lambda text: text,
                            context=f'Error reading resource "{args.uri}" from server '
                                    f'"{args.server}": ')

    def close(self) -> None:
        """Close :attr:`tool_server` (joins its handler pool). Safe to call twice."""
        with self._lock:
            tools = self._tool_server
        if tools is not None:
            tools.close()


class ListInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    server: Optional[str] = Field(default=None, description=(
        "The name of the server whose resources to list; all servers when left out."))


class ReadInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    server: str = Field(description="The name of the server the resource belongs to.")
    uri: str = Field(description="The URI of the resource to read.")


# -- texts ---------------------------------------------------------------------------------

def system_reminder(text: str) -> str:
    return f"<system-reminder>\n{text}\n</system-reminder>"


def attachment(text: str) -> str:
    """The two ``<system-reminder>`` blocks of an attached resource, as one string."""
    return system_reminder(FULL_CONTENTS + "\n" + text) + "\n" + system_reminder(DO_NOT_READ_AGAIN)


def contents_text(contents: Iterable[Any]) -> str:
    """The text of resources/read contents: every text item, a blob as a note with its size
    and type, one item per line."""
    parts = []
    for item in contents or []:
        if not isinstance(item, dict):
            continue
        if isinstance(item.get("text"), str):
            parts.append(item["text"])
        elif isinstance(item.get("blob"), str):
            mime = item.get("mimeType") or "application/octet-stream"
            parts.append(f"[Binary content: {mime}, {_blob_size(item['blob'])} bytes]")
    return "\n".join(parts)


def _blob_size(blob: str) -> int:
    try:
        return len(base64.b64decode(blob, validate=False))
    except (binascii.Error, ValueError):
        return len(blob) * 3 // 4


def _entry(server: Any, resource: dict) -> dict:
    return {"server": server.name, "uri": resource.get("uri"), "name": resource.get("name"),
            "mimeType": resource.get("mimeType"), "description": resource.get("description")}


# -- futures -------------------------------------------------------------------------------

def _split_mention(token: str, servers: list) -> tuple[Any, str]:
    """The server a mention token names (the longest matching name or key) and its URI."""
    best, best_len = None, -1
    for server in servers:
        for name in (server.name, server.key):
            if len(name) > best_len and token.startswith(name + ":"):
                best, best_len = server, len(name)
    if best is None:
        return None, ""
    uri = token[best_len + 1:]
    match = _SCHEME.match(uri)
    if match is None or match.end() == len(uri):
        return None, ""
    return best, uri


def _first_readable(res: Resources, server: Any, uris: list[str],
                    timeout: float | None) -> Future:
    """A future of ``(server name, uri, text)`` for the first of ``uris`` that reads, else
    None. Tried one after the other, each as soon as the one before failed."""
    outcome: Future = Future()

    def attempt(index: int) -> None:
        if index == len(uris):
            outcome.set_result(None)
            return
        future = res.read_f(server.name, uris[index], timeout=timeout)

        def done(f: Future) -> None:
            try:
                text = f.result()
            except Exception as exc:  # noqa: BLE001 - a mention that does not read stays text
                log.debug("@%s:%s does not read: %s", server.name, uris[index], exc)
                attempt(index + 1)
            else:
                outcome.set_result((server.name, uris[index], text))

        future.add_done_callback(done)

    attempt(0)
    return outcome


def _guarded(start: Callable[[], Future]) -> Future:
    try:
        return start()
    except Exception as exc:  # noqa: BLE001
        return failed(exc)


def _listed(server: Any, future: Future) -> list[dict]:
    try:
        return [r for r in future.result(0) if isinstance(r, dict)]
    except Exception as exc:  # noqa: BLE001 - a failing listing lists nothing
        log.warning("listing the resources of %s failed: %s", server.name, exc)
        return []


def _tool_answer(future: Future, render: Callable[[Any], str], context: str = "") -> Future:
    """A future of ``(text, is_error)`` for a tool: the rendered result, or the error text
    after ``context``."""
    answer: Future = Future()

    def done(f: Future) -> None:
        try:
            answer.set_result((render(f.result()), False))
        except CancelledError:
            answer.set_result((f"{context or 'Error: '}the call was cancelled", True))
        except RaiderError as exc:
            answer.set_result((f"{context}{exc}", True))
        except Exception as exc:  # noqa: BLE001
            answer.set_result((f"{context or 'Error: '}{str(exc) or type(exc).__name__}", True))

    future.add_done_callback(done)
    return answer


def _wait(future: Future, timeout: float, what: str) -> Any:
    try:
        return future.result(timeout + _MARGIN_S)
    except FutureTimeout:
        if future.done():
            raise
        future.cancel()
        raise RequestTimeout(f"{what}: no answer within {timeout:g} s") from None


def _skill_read_f(server: Any, uri: str, timeout: float | None) -> Future:
    """A skill file read and checked against the skill's entry (SkillRejected if it differs)."""
    from ..client.skills import read_verified
    from ..threads.futures import run_in_thread
    bound = timeout if timeout is not None else server.call_timeout
    return run_in_thread(lambda: read_verified(server, uri, bound), f"raider-{server.key}-skill")
