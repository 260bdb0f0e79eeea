"""The stateless era (2026-07-28): every request carries ``_meta``, some go in rounds.

:class:`StatelessEra` sends a connection's requests the way the revision wants: ``_meta`` on
every request, the stateless headers over HTTP, ``input_required`` rounds for
``tools/call``, ``prompts/get`` and ``resources/read`` (:mod:`.rounds`), cacheable results
from the host's cache (:mod:`.cache`), and a listen of its own for the list changes the server
announces (``subscriptions/listen``).
"""
from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from ...errors import McpError, RequestTimeout, SubscriptionEnded
from ...jsonrpc import INTERNAL_ERROR
from ...protocol.http_headers import InvalidAnnotation, header_params, message_headers
from ...threads.futures import failed, resolved
from .cache import check_mode
from .host import EraHost
from .listen import LISTEN_TIMEOUT, Subscription, listen_params
from .modern import CACHEABLE, META_LOG_LEVEL, ROUND_METHODS, Description
from .negotiate import ModernConnection
from .rounds import request_rounds_f

if TYPE_CHECKING:  # pragma: no cover
    from ...jsonrpc import Session

#: seconds a start waits for the server to acknowledge its own list-change listen
ACKNOWLEDGE_WAIT = 2.0
#: the longest pause before the internal listen is sent again
MAX_RELISTEN_DELAY = 30.0


def relisten_delay(failures: int) -> float:
    """Seconds before the internal listen is sent again after ``failures`` listens in a row
    that ended without being acknowledged: 1, 2, 4, ... up to MAX_RELISTEN_DELAY."""
    return min(MAX_RELISTEN_DELAY, 2.0 ** min(failures, 16))


class StatelessEra:
    """A connection in the stateless era. Made once ``server/discover`` has answered: the
    session stamps every request with the revision's ``_meta`` from then on."""

    name = "modern"

    def __init__(self, session: "Session", host: EraHost, description: Description,
                 capabilities: dict):
        self.session = session
        self.host = host
        self.description = description
        self.modern = ModernConnection(description, capabilities, host.settings.client_info)
        self.set_log_level(host.log_level)
        host.cache.put("server/discover", None, description.raw)
        session.stamp = self.modern.stamp
        session.transport.stateless(self.modern.version, lambda message: message_headers(
            message, self.modern.params_of))

    def renew(self, deadline, timeout_message: str) -> Description:
        raise McpError(INTERNAL_ERROR, "a stateless connection has no session to renew")

    def set_log_level(self, level: str | None) -> None:
        """Ask for log messages of ``level`` and above on every request from now on (the
        revision's ``logLevel``; None: none)."""
        if level is None:
            self.modern.meta.pop(META_LOG_LEVEL, None)
        else:
            self.modern.meta[META_LOG_LEVEL] = level

    # -- after the start -----------------------------------------------------------------

    def connected(self) -> None:
        """A listen of its own for the list changes the server announces (the handshake era
        gets them unasked), so that tools, prompts and resources are listed again as they
        change."""
        capabilities = self.description.capabilities
        kinds = {kind: bool((capabilities.get(kind) or {}).get("listChanged"))
                 for kind in ("tools", "prompts", "resources")}
        if any(kinds.values()):
            sub = self._listen_internally(kinds)
            # a change made right after the start is announced only to a listen the server
            # already holds: wait (briefly) for its acknowledgement before saying connected
            if sub is not None:
                sub.wait_acknowledged(ACKNOWLEDGE_WAIT)

    def _listen_internally(self, kinds: dict) -> Subscription | None:
        try:
            return self.listen(**kinds, uris=[], store=False, on_end=self._listen_again,
                               opened=False)
        except Exception as exc:  # noqa: BLE001 - lists are then only fetched on demand
            self.host.settings.log.warning("%s: listening for list changes failed: %s",
                                           self.host.settings.name, exc)
            return None

    def _listen_again(self, ended: Subscription) -> None:
        """The internal listen ended under us: nothing is replayed, so listen again after a
        pause and fetch the lists again. The pause doubles (up to :data:`MAX_RELISTEN_DELAY`)
        while listens end unacknowledged (a server refusing them, one full of streams)."""
        host = self.host
        failures = host.relisten_failures
        host.relisten_failures = failures + 1
        stopping = host.stopping

        def again() -> None:
            if stopping.wait(relisten_delay(failures)) or not host.is_up() or self.session.closed:
                return
            kinds = {kind: bool(ended.wanted["notifications"].get(f"{kind}ListChanged"))
                     for kind in ("tools", "prompts", "resources")}
            sub = self._listen_internally(kinds)
            host.cache.clear()
            host.lists_changed()
            if sub is not None and sub.wait_acknowledged(ACKNOWLEDGE_WAIT) and not sub.closed:
                host.relisten_failures = 0
        try:
            host.pool().submit(again)
        except RuntimeError:
            pass

    # -- tools ---------------------------------------------------------------------------

    def check_tool(self, tool: dict) -> str | None:
        """Why a listed tool is dropped (invalid ``x-mcp-header`` annotations over HTTP),
        else None; its annotations are kept for its calls' headers."""
        modern = self.modern
        try:
            modern.tool_params[tool["name"]] = header_params(tool.get("inputSchema"))
        except InvalidAnnotation as exc:
            modern.tool_params.pop(tool["name"], None)
            settings = self.host.settings
            if settings.transport != "http":
                return None  # headers exist only over HTTP: the annotations are moot
            reason = f"tool {tool['name']!r} dropped: {exc}"
            settings.log.warning("%s: %s", settings.name, reason)
            return reason
        return None

    # -- requests ------------------------------------------------------------------------

    def request_f(self, method: str, params: dict | None, cache: str = "use",
                  **options: Any) -> Future:
        """Send ``method``, through ``input_required`` rounds (bounded by
        ``max_input_rounds``) where the method may need input; a tools/call refused for its
        headers (-32020) is sent once more after the tools are listed again. Cacheable
        results are answered from, and kept in, the cache as ``cache`` says (see
        :mod:`.cache`; raises ValueError for another mode)."""
        check_mode(cache)
        session, host = self.session, self.host
        if method in CACHEABLE:
            transform = options.pop("transform", None)
            if cache == "use":
                hit = host.cache.get(method, params)
                if hit is not None:
                    try:
                        return resolved(transform(hit) if transform is not None else hit)
                    except Exception as exc:  # noqa: BLE001 - the future carries it
                        return failed(exc)

            def keep(result: Any) -> Any:
                if cache != "bypass":
                    host.cache.put(method, params, result)
                return transform(result) if transform is not None else result
            options["transform"] = keep
        if method not in ROUND_METHODS:
            return session.request_f(method, params, **options)
        return request_rounds_f(
            session.request_f, method, dict(params or {}),
            answer=host.settings.answer, pool=host.pool(),
            max_rounds=host.settings.max_input_rounds,
            on_mismatch=self._relist if method == "tools/call" else None, **options)

    def _relist(self, seconds: float) -> None:
        self.host.cache.invalidate("tools/list")
        self.host.relist(seconds)

    # -- subscriptions -------------------------------------------------------------------

    def listen(self, *, tools: bool, prompts: bool, resources: bool, uris: list[str],
               timeout: float = 30.0, store: bool = True, on_end=None,
               opened: bool = True) -> Subscription:
        """One ``subscriptions/listen`` request, cancelled at close; with ``opened``, blocks
        until the server acknowledges it (at most ``timeout`` s), and raises what it answered
        instead (McpError for a server that cannot serve it, SubscriptionEnded for a listen
        ended first, RequestTimeout for one not acknowledged in time)."""
        wanted = listen_params(tools, prompts, resources, uris)
        future: Future = self.session.request_f("subscriptions/listen", wanted,
                                                timeout=LISTEN_TIMEOUT)
        sub = Subscription(wanted["notifications"], store=store,
                           on_close=lambda s: self._forget(s, future))
        sub.subscription_id = future.request_id  # type: ignore[attr-defined]
        for method, params in self.host.add(sub, sub.subscription_id):
            sub.offer(method, params)
        sub.follow(future, on_end)
        if opened:
            self._until_acknowledged(sub, future, timeout)
        return sub

    def _until_acknowledged(self, sub: Subscription, future: Future, timeout: float) -> None:
        """Block until the server acknowledged ``sub`` (at most ``timeout`` s). A listen it
        answered (or never acknowledged) is closed and its answer raised: a server that
        cannot serve the listen says so here, not at the first ``next``."""
        sub.wait_acknowledged(timeout)  # set by the acknowledgement, or by the end
        if sub.honored is None and future.done():
            # the answer settles on the reader thread, the acknowledgement on the
            # notification thread: let the notifications already received be handled first
            handled = threading.Event()
            self.session.run_in_order(handled.set)
            handled.wait(ACKNOWLEDGE_WAIT)
        if sub.honored is not None:
            return  # acknowledged: an end after that is next()'s to say
        answered = future.done()
        sub.close()  # cancels the listen request when it is still open
        name = self.host.settings.name
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
        self.host.remove(sub)
        future.cancel()
