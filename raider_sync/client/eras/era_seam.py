"""The one place McpServer meets the two eras: open, send, check a tool, close.

:class:`EraSeam` settles a server's era when it starts (:mod:`.negotiate`) and from then on
sends every request the way that era wants: unchanged in the handshake era; in the stateless
era with ``_meta`` on every request, the stateless headers over HTTP and ``input_required``
rounds for ``tools/call``, ``prompts/get`` and ``resources/read`` (:mod:`.rounds`).
"""
from __future__ import annotations

import collections
import logging
import threading
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from ...errors import McpError, RequestTimeout, SubscriptionEnded
from ...threads.futures import Deadline, failed, resolved
from ..lifecycle import UP
from ...threads.workers import Workers
from .cache import ResultCache, check_mode
from ...protocol.http_headers import InvalidAnnotation, header_params, message_headers
from .listen import (ACKNOWLEDGED, KINDS, LISTEN_TIMEOUT, UPDATED, Subscription,
                     listen_params)
from .modern import (CACHEABLE, META_SUBSCRIPTION, ROUND_METHODS, Description,
                     modern_capabilities)
from . import liveness
from .negotiate import (LEGACY_FIX, PROBE_TIMEOUT, ModernConnection, check_choice,
                        discover_sender, open_era, remembered)
from .rounds import MAX_INPUT_ROUNDS, request_rounds_f

if TYPE_CHECKING:  # pragma: no cover
    from ...jsonrpc import Session
    from ..server import McpServer

__all__ = ["EraSeam", "MAX_INPUT_ROUNDS", "PROBE_TIMEOUT", "check_choice"]

log = logging.getLogger("raider_sync.eras")

#: seconds a start waits for the server to acknowledge its own list-change listen
ACKNOWLEDGE_WAIT = 2.0
#: the longest pause before the internal listen is sent again
MAX_RELISTEN_DELAY = 30.0


def relisten_delay(failures: int) -> float:
    """Seconds before the internal listen is sent again after ``failures`` listens in a row
    that ended without being acknowledged: 1, 2, 4, ... up to MAX_RELISTEN_DELAY."""
    return min(MAX_RELISTEN_DELAY, 2.0 ** min(failures, 16))


class EraSeam:
    """The era of one McpServer's connection, and how its requests are sent."""

    def __init__(self, server: "McpServer"):
        self.server = server
        self.modern: ModernConnection | None = None
        self._pool: Workers | None = None
        self._closed = False
        self._stopping = threading.Event()
        self._subs_lock = threading.Lock()
        self._subs: list[Subscription] = []
        # listen notifications that came before their subscription was registered
        self._early: collections.deque = collections.deque(maxlen=64)
        self._relisten_failures = 0
        self.cache = ResultCache()

    # -- opening -------------------------------------------------------------------------

    def open(self, session: "Session", deadline: Deadline) -> None:
        """Settle the era (probe, or handshake) within ``deadline``; the server's era,
        protocol_version, capabilities, server_info and instructions are then set. Raises
        what refuses the server."""
        server = self.server
        transport = session.transport
        self.modern = None
        self.cache.clear()
        session.stamp = None
        capabilities = modern_capabilities(server._client_capabilities())
        # over stdio the probe can tell a server ignoring it from a slow one; over HTTP a
        # slow answer may be an authorization under way, and the server answers anyway
        send = discover_sender(session, transport, capabilities, server.client_info,
                               liveness=server.transport == "stdio",
                               stalled=self._stalled if server.transport == "stdio" else None)

        def handshake(version: str) -> None:
            transport.stateless(None)
            session.stamp = None
            server._handshake(session, deadline, version=version)

        protocol = server.protocol
        if server.transport == "sse" and protocol == "auto":
            protocol = "legacy"  # HTTP+SSE belongs to the handshake era alone
        description = open_era(protocol, server.fingerprint, send, handshake, deadline,
                               server.probe_timeout, warn=self._warn)
        if description is not None:
            self._become_modern(session, description, capabilities)

    def _warn(self, message: str) -> None:
        self.server.log.warning("MCP server %r: %s", self.server.name, message)

    def _stalled(self, seconds_left: float) -> None:
        """The probe has waited long: say so, and how to skip it, unless the server was
        found to speak the stateless era before (then it is only slow to start)."""
        if remembered(self.server.fingerprint) == "modern":
            return
        self._warn(f"no answer to server/discover after {liveness.STALL_WARNING:g} s; "
                   f"waiting up to {seconds_left:.0f} s more (a server still starting answers "
                   f"late); if it speaks only the initialize handshake, {LEGACY_FIX} to start "
                   f"it without the probe")

    def _become_modern(self, session: "Session", description: Description,
                       capabilities: dict) -> None:
        server = self.server
        modern = ModernConnection(description, capabilities, server.client_info)
        self.cache.put("server/discover", None, description.raw)
        self.modern = modern
        session.stamp = modern.stamp
        session.transport.stateless(modern.version,
                                    lambda message: message_headers(message, modern.params_of))
        server.protocol_version = description.protocol_version
        server.capabilities = dict(description.capabilities)
        server.server_info = dict(description.server_info)
        server.instructions = description.instructions
        server.era = "modern"

    def connected(self) -> None:
        """Called once the server is connected: in the stateless era, a listen of its own for
        the list changes the server announces (the handshake era gets them unasked), so
        that tools, prompts and resources are listed again as they change."""
        if self.modern is None:
            return
        kinds = {kind: bool((self.server.capabilities.get(kind) or {}).get("listChanged"))
                 for kind in ("tools", "prompts", "resources")}
        if any(kinds.values()):
            sub = self._listen_internally(kinds)
            # a change made right after the start is announced only to a listen the server
            # already holds: wait (briefly) for its acknowledgement before saying connected
            if sub is not None:
                sub.wait_acknowledged(ACKNOWLEDGE_WAIT)

    def _listen_internally(self, kinds: dict) -> Subscription | None:
        try:
            return self.listen(**kinds, uris=(), store=False, on_end=self._listen_again,
                               opened=False)
        except Exception as exc:  # noqa: BLE001 - lists are then only fetched on demand
            self.server.log.warning("%s: listening for list changes failed: %s",
                                    self.server.name, exc)
            return None

    def _listen_again(self, ended: Subscription) -> None:
        """The internal listen ended under us: nothing is replayed, so listen again after a
        pause and fetch the lists again. The pause doubles (up to :data:`MAX_RELISTEN_DELAY`)
        while listens end unacknowledged (a server refusing them, one full of streams)."""
        failures = self._relisten_failures
        self._relisten_failures = failures + 1

        def again() -> None:
            if self._stopping.wait(relisten_delay(failures)) or self.server.status not in UP:
                return
            kinds = {kind: bool(ended.wanted["notifications"].get(f"{kind}ListChanged"))
                     for kind in ("tools", "prompts", "resources")}
            sub = self._listen_internally(kinds)
            self.cache.clear()
            self.server._lists_changed()
            if sub is not None and sub.wait_acknowledged(ACKNOWLEDGE_WAIT) and not sub.closed:
                self._relisten_failures = 0
        try:
            self._input_pool().submit(again)
        except RuntimeError:
            pass

    # -- tools ---------------------------------------------------------------------------

    def check_tool(self, tool: dict) -> str | None:
        """Why a listed tool is dropped (invalid ``x-mcp-header`` annotations over HTTP, in
        the stateless era), else None; its annotations are kept for its calls' headers."""
        modern = self.modern
        if modern is None:
            return None
        try:
            modern.tool_params[tool["name"]] = header_params(tool.get("inputSchema"))
        except InvalidAnnotation as exc:
            modern.tool_params.pop(tool["name"], None)
            if self.server.transport != "http":
                return None  # headers exist only over HTTP: the annotations are moot
            reason = f"tool {tool['name']!r} dropped: {exc}"
            self.server.log.warning("%s: %s", self.server.name, reason)
            return reason
        return None

    # -- requests ------------------------------------------------------------------------

    def request_f(self, session: "Session", method: str, params: dict | None,
                  cache: str = "use", **options: Any) -> Future:
        """Send ``method``; in the stateless era through ``input_required`` rounds (bounded by
        the server's ``max_input_rounds``) where the method may need input, and a tools/call
        refused for its headers (-32020) is sent once more after the tools are listed again.
        Cacheable results are answered from, and kept in, the cache as ``cache`` says (see
        :mod:`.cache`; raises ValueError for another mode)."""
        check_mode(cache)
        if self.modern is None:
            return session.request_f(method, params, **options)
        if method in CACHEABLE:
            transform = options.pop("transform", None)
            if cache == "use":
                hit = self.cache.get(method, params)
                if hit is not None:
                    try:
                        return resolved(transform(hit) if transform is not None else hit)
                    except Exception as exc:  # noqa: BLE001 - the future carries it
                        return failed(exc)

            def keep(result: Any) -> Any:
                if cache != "bypass":
                    self.cache.put(method, params, result)
                return transform(result) if transform is not None else result
            options["transform"] = keep
        if method not in ROUND_METHODS:
            return session.request_f(method, params, **options)
        server = self.server
        return request_rounds_f(
            session.request_f, method, dict(params or {}),
            answer=server.client_handlers.handle, pool=self._input_pool(),
            max_rounds=server.max_input_rounds,
            on_mismatch=self._relist if method == "tools/call" else None, **options)

    # -- subscriptions -------------------------------------------------------------------

    def listen(self, *, tools: bool = False, prompts: bool = False, resources: bool = False,
               uris=(), timeout: float = 30.0, store: bool = True,
               on_end=None, opened: bool = True) -> Subscription:
        """A :class:`Subscription` to the changes asked for. Stateless era: one
        ``subscriptions/listen`` request, cancelled at close; with ``opened``, blocks until
        the server acknowledges it (at most ``timeout`` s), and raises what it answered
        instead (McpError for a server that cannot serve it). Handshake era: the session's
        notifications, with ``resources/subscribe`` for each URI (blocks up to ``timeout`` s
        for each). Raises NotConnected, McpError, SubscriptionEnded (a listen ended before
        it was acknowledged), RequestTimeout (not acknowledged in time)."""
        server = self.server
        session = server._session
        if server.status not in (*UP, "starting") or session is None:
            raise server._not_connected()
        uris = [str(uri) for uri in uris]
        wanted = listen_params(tools, prompts, resources, uris)
        if self.modern is None:
            sub = Subscription(wanted["notifications"], store=store,
                               on_close=lambda s: self._unsubscribe(s, uris, timeout))
            for uri in uris:
                session.request("resources/subscribe", {"uri": uri}, timeout=timeout)
            sub.acknowledge(dict(wanted["notifications"]))
            with self._subs_lock:
                self._subs.append(sub)
            return sub
        sub = Subscription(wanted["notifications"], store=store,
                           on_close=lambda s: self._forget(s, future))
        future = session.request_f("subscriptions/listen", wanted, timeout=LISTEN_TIMEOUT)
        sub.subscription_id = future.request_id  # type: ignore[attr-defined]
        with self._subs_lock:
            self._subs.append(sub)
            early = [item for item in self._early if _tag(item[1]) == sub.subscription_id]
        for method, params in early:
            sub.offer(method, params)
        sub.follow(future, on_end)
        if opened:
            self._until_acknowledged(session, sub, future, timeout)
        return sub

    def _until_acknowledged(self, session: "Session", sub: Subscription, future: Future,
                            timeout: float) -> None:
        """Block until the server acknowledged ``sub`` (at most ``timeout`` s). A listen it
        answered (or never acknowledged) is closed and its answer raised: a server that
        cannot serve the listen says so here, not at the first ``next``."""
        sub.wait_acknowledged(timeout)  # set by the acknowledgement, or by the end
        if sub.honored is None and future.done():
            # the answer settles on the reader thread, the acknowledgement on the
            # notification thread: let the notifications already received be handled first
            handled = threading.Event()
            session.run_in_order(handled.set)
            handled.wait(ACKNOWLEDGE_WAIT)
        if sub.honored is not None:
            return  # acknowledged: an end after that is next()'s to say
        answered = future.done()
        sub.close()  # cancels the listen request when it is still open
        name = self.server.name
        if not answered:
            raise RequestTimeout(f"MCP server {name!r} did not acknowledge "
                                 f"subscriptions/listen within {timeout:g} s")
        error = None if future.cancelled() else future.exception()
        if isinstance(error, McpError):
            raise McpError(error.code, f"MCP server {name!r} cannot serve this listen: "
                                       f"subscriptions/listen was answered with "
                                       f"{error.message!r}", error.data) from error
        if error is not None:
            raise error
        raise SubscriptionEnded(f"MCP server {name!r} ended subscriptions/listen before "
                                f"acknowledging it")

    def _forget(self, sub: Subscription, future: Future) -> None:
        with self._subs_lock:
            if sub in self._subs:
                self._subs.remove(sub)
        future.cancel()

    def _unsubscribe(self, sub: Subscription, uris: list[str], timeout: float) -> None:
        with self._subs_lock:
            if sub in self._subs:
                self._subs.remove(sub)
        session = self.server._session
        for uri in uris:
            if session is None:
                return
            try:
                session.request("resources/unsubscribe", {"uri": uri}, timeout=timeout)
            except Exception as exc:  # noqa: BLE001 - the subscription is gone anyway
                log.debug("resources/unsubscribe %s failed: %s", uri, exc)

    def offer(self, method: str, params: dict) -> None:
        """Hand a notification to the subscriptions it belongs to (on the notification
        thread)."""
        if method != ACKNOWLEDGED and method not in KINDS and method != UPDATED:
            return
        self.cache.notified(method, params)
        with self._subs_lock:
            subs = list(self._subs)
            taken = False
            for sub in subs:
                taken = sub.offer(method, params) or taken
            if not taken and _tag(params) is not None:
                self._early.append((method, params))

    def _relist(self, seconds: float) -> None:
        self.cache.invalidate("tools/list")
        self.server._fetch_tools(seconds)

    def _input_pool(self) -> Workers:
        # the server's own, not a lane of its session's pool: input handlers (a person
        # answering an elicitation) and relistens outlive a connection; 4 at once
        if self._pool is None:
            self._pool = Workers(4, f"raider-{self.server.key}-input")
            if self._closed:
                self._pool.shutdown()
        return self._pool

    def close(self) -> None:
        """End every subscription and stop the input handlers' pool (waits for handlers
        under way)."""
        self._closed = True
        self._stopping.set()
        with self._subs_lock:
            subs, self._subs = self._subs, []
        for sub in subs:
            sub._end("the server was stopped")
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)


def _tag(params: dict) -> object:
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta.get(META_SUBSCRIPTION) if isinstance(meta, dict) else None
