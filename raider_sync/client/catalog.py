"""What a server offers, as this client knows it: the tool catalog and the cached lists.

:class:`Catalog` keeps the tools under their ``mcp__KEY__TOOL`` names (set from every page
of ``tools/list``, filtered, checked by the era, re-listed in the background after
``notifications/tools/list_changed`` once a connection is open) and the prompt and resource
lists, fetched on first use and cached until the server announces a change; a failing list is
empty and not cached.
It fetches through ``fetch_all(method, field, seconds, timeout_message, cache)``, which its
server gives it, and runs re-lists on a pool of its own (one thread, as long as the server).
"""
from __future__ import annotations

import copy
import logging
import threading
from concurrent.futures import Future
from typing import Any, Callable, Optional

from ..config import tool_name
from ..threads.futures import resolved, then
from ..threads.workers import Workers
from .filters import ToolFilter

#: ``fetch_all(method, field, seconds, timeout_message, cache)``: every page of a list
FetchAll = Callable[[str, str, float, Optional[str], str], list]


class Catalog:
    """The tools and lists of one server, across its connections. Thread-safe."""

    def __init__(self, *, key: str, name: str, log: logging.Logger, tool_filter: ToolFilter,
                 fetch_all: FetchAll, call_timeout: float, warnings: list[str],
                 check_tool: Callable[[dict], Optional[str]],
                 on_changed: Callable[[], None]):
        self.key, self.name, self.log = key, name, log
        self.tool_filter = tool_filter
        self._fetch_all = fetch_all
        self.call_timeout = call_timeout
        self.warnings = warnings          # the server's list: each problem said once
        self._check_tool = check_tool     # the era's word on a listed tool
        self._on_changed = on_changed     # tells the server (which calls on_tools_changed)
        self._lock = threading.Lock()
        self.tools: list[dict] = []
        self.original: dict[str, str] = {}
        self.output_schemas: dict[str, dict] = {}  # by original name
        self.filtered: list[str] = []
        self._tools_future: Future = resolved([])
        self._relist_queued = False
        self._tools_asked = 0  # tools/list fetches begun
        self._tools_set = 0    # the oldest fetch whose answer may still be set
        self._connection = 0  # one per connection: forget() begins the next
        self._opened = False  # whether this connection is open enough to list (see opened())
        self._lists: dict[str, Future] = {}
        self._background = self._new_background()

    def _new_background(self) -> Workers:
        # the server's own, not a lane of its session's pool: re-lists run one at a time,
        # and this pool lasts as long as the server, across its connections
        return Workers(1, f"raider-{self.key}-relist")

    # -- tools ---------------------------------------------------------------------------

    def original_of(self, name: str) -> str | None:
        """The server's name of the tool offered as ``name`` (prefixed or original)."""
        original = self.original.get(name)
        if original is None and name in self.original.values():
            return name
        return original

    def listed(self, original: str) -> dict | None:
        """The listing of the tool named ``original`` on the server (prefixed name), or None."""
        with self._lock:
            tools, names = self.tools, self.original
        return next((t for t in tools if names.get(t["name"]) == original), None)

    def tools_f(self) -> Future:
        """A future of copies of the tools, after the re-list under way (if any)."""
        return then(self._tools_future, lambda _: copy.deepcopy(self.tools))

    def fetch_tools(self, timeout: float, timeout_message: str | None = None) -> None:
        """tools/list, every page, within ``timeout`` s; then the tools are set, unless the
        answer to a later tools/list is set already (the start's list and a re-list after an
        early list_changed overlap, and the threads that set them race)."""
        with self._lock:
            self._tools_asked += 1
            asked = self._tools_asked
        self.set_tools(self._fetch_all("tools/list", "tools", timeout, timeout_message, "use"),
                       asked)  # unless a later list was set, or a new connection began

    def set_tools(self, tools: list[dict], asked: int | None = None) -> None:
        listed: list[dict] = []
        original: dict[str, str] = {}
        output_schemas: dict[str, dict] = {}
        warnings: list[str] = []
        filtered: list[str] = []
        for tool in tools:
            if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                warnings.append(f"a tool without a name was dropped: {str(tool)[:100]}")
                continue
            prefixed = tool_name(self.key, tool["name"])
            if not self.tool_filter.allows(tool["name"], prefixed):
                filtered.append(tool["name"])  # allowedTools/disabledTools: not offered
                continue
            problem = self._check_tool(tool)
            if problem is not None:
                warnings.append(problem)
                continue
            if prefixed in original:
                warnings.append(
                    f"tool {tool['name']!r} dropped: its name {prefixed} collides with "
                    f"tool {original[prefixed]!r}")
                continue
            original[prefixed] = tool["name"]
            if isinstance(tool.get("outputSchema"), dict):
                output_schemas[tool["name"]] = tool["outputSchema"]
            listed.append({**tool, "name": prefixed})
        with self._lock:
            if asked is not None:
                if asked < self._tools_set:
                    return  # older than the one set, or asked by an older connection
                self._tools_set = asked
            self.tools, self.original = listed, original
            self.output_schemas = output_schemas
            self.filtered = filtered
            # a re-list finds the same problems again: say each once
            self.warnings.extend(w for w in warnings if w not in self.warnings)

    def tools_changed(self) -> None:
        """notifications/tools/list_changed: the re-list is under way before the server's
        on_tools_changed runs, so a list_tools() it (or anyone it wakes) calls waits for
        the fresh list instead of getting the old one."""
        self.queue_relist()
        self.call_on_changed()

    def queue_relist(self) -> None:
        """Have the tools listed again in the background; tools_f() waits for it."""
        with self._lock:
            queued = self._relist_queued
            if not queued:
                self._relist_queued = True
                if self._tools_future.done():
                    self._tools_future = Future()
                future = self._tools_future
        if not queued:
            try:
                self._background.submit(self._relist, future)
            except RuntimeError:
                future.set_result(None)

    def call_on_changed(self) -> None:
        """Tell the server the tools changed (its callback guards the user's own)."""
        self._on_changed()

    def _relist(self, future: Future) -> None:
        with self._lock:
            self._relist_queued = False
            connection, opened = self._connection, self._opened
        # a connection not yet opened needs no re-list: its first list is asked for after
        # this notice (a server may announce a change while the client still starts, before
        # it knows the era it would list in)
        if opened:
            try:
                self.fetch_tools(self.call_timeout)
            except Exception as exc:  # noqa: BLE001 - keep the old list
                if connection == self._connection:  # else a new connection lists afresh
                    self.warnings.append(f"re-listing the tools failed: {exc}")
        with self._lock:
            if self._relist_queued:
                return  # a newer list_changed came meanwhile: its re-list settles the future
        if not future.done():
            future.set_result(None)

    # -- prompts and resources -----------------------------------------------------------

    def cached_list(self, method: str, field: str, shape: Callable[[list], list],
                    cache: str = "use") -> Future:
        """A future of copies of the list ``method`` answers (its items under ``field``),
        fetched on first use in the background; ``cache`` "refresh" fetches it anew (or
        joins a fetch under way), "bypass" fetches it anew. A failing list is [] and is not
        kept."""
        with self._lock:
            kept = self._lists.get(method) if cache != "bypass" else None
            if kept is not None and cache == "refresh" and kept.done():
                kept = None  # a refresh joins a fetch under way, never a kept answer
            if kept is None:
                future = self._lists[method] = self._background_f(
                    lambda: shape(self._fetch_all(method, field, self.call_timeout, None,
                                                  cache)), what=method)
            else:
                future = kept
        if kept is None:  # outside the lock: a fetch done already runs the callback here,
            # and the callback takes the lock
            future.add_done_callback(lambda done: self._forget_failed(method, done))
        return then(future, lambda items: copy.deepcopy(items or []))

    def _forget_failed(self, method: str, future: Future) -> None:
        """A failed list answers [] once; it is not cached, so the next call asks again."""
        if future.result() is None:
            with self._lock:
                if self._lists.get(method) is future:
                    del self._lists[method]

    def _background_f(self, fn: Callable[[], Any], *, what: str) -> Future:
        def run() -> Any:
            try:
                return fn()
            except Exception as exc:  # noqa: BLE001 - a failing list is an empty one
                self.log.warning("%s: %s failed: %s", self.name, what, exc)
                return None
        try:
            return self._background.submit(run)
        except RuntimeError:
            return resolved(None)

    def forget_lists(self, *methods: str) -> None:
        """Fetch these lists (every list, when none is named) anew when next asked."""
        with self._lock:
            if not methods:
                self._lists.clear()
            for method in methods:
                self._lists.pop(method, None)

    # -- the connection's life -----------------------------------------------------------

    def opened(self) -> None:
        """A new connection knows its era: re-lists may run from now on (its first list, if
        the server offers tools, comes next)."""
        with self._lock:
            self._opened = True

    def forget(self) -> None:
        """What an older connection listed is dropped."""
        with self._lock:
            self._connection += 1
            self._opened = False
            # an answer to a list asked for before is an older connection's: never set
            self._tools_set = self._tools_asked + 1
            self.tools, self.original, self._lists = [], {}, {}
            self.output_schemas = {}
            if not self._tools_future.done():
                self._tools_future.set_result(None)

    def reopen(self) -> None:
        """A stopped server starts again: a new pool for its re-lists."""
        self._background = self._new_background()

    def close(self) -> None:
        """The server stopped: re-lists end (waited for, unless this is one of them)."""
        in_background = threading.current_thread().name.startswith(f"raider-{self.key}-relist")
        self._background.shutdown(wait=not in_background, cancel_futures=True)
        with self._lock:
            if not self._tools_future.done():
                self._tools_future.set_result(None)
