"""What a client asks of a server beyond its tool calls: prompts, resources, skills,
completions, the log level, resource subscriptions, ping, and any method by name.

:class:`Asks` sends each request the one way (:meth:`Asks.request_f`: a start under way
waited for within the request's deadline, ``Connection.when_up_f``, then the era's
``request_f``), fails at once one whose capability the connected server does not declare,
and shapes the answer. It keeps the resource subscriptions, so a new session subscribes
again. Its :class:`~raider_sync.McpServer` keeps the public methods and their docs; those
of these requests delegate to the method of the same name here (``request_f`` and
``request``: to :meth:`Asks.request_any_f` and :meth:`Asks.request_any`), which checks the
arguments (a malformed one raises) and the timeout, by the face's own rule ``bound`` (a bad
one fails the future of an ``_f`` method, and is raised by a blocking one), as the face's
docs say.
"""
from __future__ import annotations

import copy
import logging
import threading
from concurrent.futures import Future
from typing import Any, Callable, Optional

from ..errors import ConfigError, RaiderError, RequestTimeout
from ..jsonrpc import ProgressCallback, Session
from ..protocol import fetch_all_pages
from ..threads.futures import Deadline, failed, resolved, run_in_thread, then, wait_bounded
from . import skills
from .calls import seconds, tool_arguments
from .coalesce import Coalescer
from .connection import Connection
from .eras.era_seam import Era
from .eras.stateless import StatelessEra
from .lifecycle import UP
from .surface import LOG_LEVELS, check_request, completion_argument, completion_ref, refusal

#: ``bound(timeout, method)``: the seconds a request may take (the face's rule, which names
#: ``McpServer.<method>`` in its error)
Bound = Callable[[Any, str], float]
#: ``wait(future, seconds)``: the future's result; an interrupt cancels the request
Wait = Callable[[Future, float], Any]


class Asks:
    """The requests of one server other than tool calls. Thread-safe.

    ``owner`` is the :class:`~raider_sync.McpServer`: what a start resolves to, what the
    skills are read through, and where ``era`` and ``capabilities`` (what it learnt of the
    server) are read at each request."""

    def __init__(self, owner: Any, *, connection: Connection, bound: Bound, wait: Wait,
                 log: logging.Logger):
        self.owner = owner
        self.connection = connection
        self.bound = bound
        self.wait = wait
        self.log = log
        self._lock = threading.Lock()
        self._subscriptions: set[str] = set()
        #: identical reads in flight (a resource, a prompt with its arguments) share one
        #: request (see :mod:`.coalesce`)
        self.reads = Coalescer()

    # -- sending -------------------------------------------------------------------------

    def request_f(self, method: str, params: dict | None, bound: float, *,
                  inline: bool = False, cache: str = "use",
                  timeout_error: type[RequestTimeout] = RequestTimeout,
                  what: str | None = None, **options: Any) -> Future:
        """``method`` sent the way the era wants (``_meta``, headers, ``input_required``
        rounds), after a start under way, all within one deadline ``bound`` s from now (a
        timeout already checked); ``options`` go to the session (``on_progress``,
        ``transform``)."""
        def send(session: Session, era: Era, deadline: Deadline, inline: bool) -> Future:
            return era.request_f(method, params, cache, deadline=deadline, inline=inline,
                                 wait=inline, timeout_error=timeout_error, **options)

        return self.connection.when_up_f(self.owner, Deadline(bound), send, inline,
                                         timeout_error, what or method)

    def fetch_all(self, method: str, field: str, timeout: float,
                  timeout_message: str | None = None, cache: str = "use") -> list[dict]:
        """Every page of a paginated list, within ``timeout`` s in all, on the connection as
        it is (also while it starts). Blocks; raises NotConnected, McpError, RequestTimeout."""
        def request(params: dict | None, seconds: float) -> dict:
            connection = self.connection
            session, era = connection.session, connection.era
            if session is None or era is None:
                raise connection.not_connected()
            return wait_bounded(era.request_f(method, params, cache, timeout=seconds, wait=True,
                                              timeout_message=timeout_message), seconds)
        return fetch_all_pages(request, field, timeout)

    def _offered(self, capability: str, what: str, sub: str | None = None) -> Optional[Future]:
        """A failed future when the connected server does not declare ``capability``."""
        if self.connection.status not in UP:
            return None
        refused = refusal(self.owner.name, self.owner.capabilities, capability, what, sub)
        return failed(refused) if refused is not None else None

    # -- prompts, resources, skills and ping ---------------------------------------------

    def get_prompt_f(self, name: str, arguments: dict | None, timeout: Any) -> Future:
        try:
            bound = self.bound(timeout, "get_prompt_f")
            arguments = tool_arguments(arguments, name)
        except RaiderError as exc:
            return failed(exc)
        params: dict[str, Any] = {"name": name}
        if arguments:
            params["arguments"] = {k: str(v) for k, v in arguments.items()}
        key = ("prompts/get", name, tuple(sorted(params.get("arguments", {}).items())))
        return self.shared_read_f(key, bound, lambda: self.request_f("prompts/get", params,
                                                                     bound))

    def read_resource_f(self, uri: str, timeout: Any, cache: str) -> Future:
        try:
            bound = self.bound(timeout, "read_resource_f")
        except RaiderError as exc:
            return failed(exc)

        def read() -> Future:
            return then(self.request_f("resources/read", {"uri": uri}, bound, cache=cache),
                        lambda result: list(result.get("contents") or []))
        if cache == "bypass":  # a read that must not be answered by one begun before it
            return read()
        return self.shared_read_f(("resources/read", uri), bound, read)

    def shared_read_f(self, key: tuple, bound: float, send: Callable[[], Future]) -> Future:
        """``send()``'s future, shared with the identical reads in flight (``key``), each
        caller within its own ``bound`` s."""
        return self.reads.request_f(
            key, Deadline(bound), send, copy.deepcopy,
            lambda: RequestTimeout(f"{key[0]} to {self.owner.name} timed out after "
                                   f"{bound:g} s"))

    def list_skills_f(self, timeout: Any) -> Future:
        try:
            bound = self.bound(timeout, "list_skills_f")
        except RaiderError as exc:
            return failed(exc)
        return run_in_thread(lambda: skills.list_skills(self.owner, bound),
                             f"raider-{self.owner.key}-skills")

    def get_skill_f(self, uri: str, timeout: Any) -> Future:
        try:
            bound = self.bound(timeout, "get_skill_f")
        except RaiderError as exc:
            return failed(exc)
        return run_in_thread(lambda: skills.get_skill(self.owner, uri, bound),
                             f"raider-{self.owner.key}-skills")

    def ping(self, timeout: float) -> None:
        """``ping``, or ``server/discover`` in the stateless era; blocks at most ``timeout``
        s. Unanswered, the connection reads ``degraded`` and RequestTimeout is raised."""
        bound = seconds(timeout, 10.0, method="McpServer.ping")
        modern = self.owner.era == "modern"
        try:
            if modern:  # a read: the threads that ask at once share one
                self.wait(self.shared_read_f(("server/discover",), bound, lambda: self.request_f(
                    "server/discover", None, bound, cache="bypass")), bound)
            else:
                self.wait(self.request_f("ping", None, bound, inline=True), bound)
        except RequestTimeout as exc:
            self.connection.degraded(f"ping: {exc}")
            raise

    # -- server log messages, completion, subscriptions, any method ----------------------

    def set_log_level_f(self, level: str, timeout: Any) -> Future:
        if level not in LOG_LEVELS:
            raise ConfigError(f"level: {level!r} is not an MCP log level "
                              f"(use {', '.join(LOG_LEVELS)})")
        try:
            bound = self.bound(timeout, "set_log_level_f")
        except RaiderError as exc:
            return failed(exc)
        era = self.connection.era
        if isinstance(era, StatelessEra):  # no setLevel: each request says what it wants
            self.connection.host.log_level = level
            era.set_log_level(level)
            return resolved(None)
        return self._offered("logging", "logging") or then(
            self.request_f("logging/setLevel", {"level": level}, bound), _none)

    def complete_f(self, ref: dict | str, argument: dict | tuple, context: dict | None,
                   timeout: Any) -> Future:
        params: dict[str, Any] = {"ref": completion_ref(ref),
                                  "argument": completion_argument(argument)}
        if context:
            if not isinstance(context, dict):
                raise ConfigError("context: expected a dict of argument names to values")
            arguments = context.get("arguments", context)
            params["context"] = {"arguments": {str(k): str(v) for k, v in arguments.items()}}
        try:
            bound = self.bound(timeout, "complete_f")
        except RaiderError as exc:
            return failed(exc)
        return self._offered("completions", "completion") or then(
            self.request_f("completion/complete", params, bound),
            lambda result: dict((result or {}).get("completion") or {"values": []}))

    @property
    def subscriptions(self) -> list[str]:
        with self._lock:
            return sorted(self._subscriptions)

    def subscribe_f(self, uri: str, timeout: Any) -> Future:
        if not isinstance(uri, str) or not uri:
            raise ConfigError("uri: expected a non-empty string")
        try:
            bound = self.bound(timeout, "subscribe_f")
        except RaiderError as exc:
            return failed(exc)
        return self._offered("resources", "resource subscriptions", "subscribe") or then(
            self.request_f("resources/subscribe", {"uri": uri}, bound),
            lambda _: self._subscribed(uri, True))

    def unsubscribe_f(self, uri: str, timeout: Any) -> Future:
        if not isinstance(uri, str) or not uri:
            raise ConfigError("uri: expected a non-empty string")
        try:
            bound = self.bound(timeout, "unsubscribe_f")
        except RaiderError as exc:
            return failed(exc)
        self._subscribed(uri, False)
        return self._offered("resources", "resource subscriptions", "subscribe") or then(
            self.request_f("resources/unsubscribe", {"uri": uri}, bound), _none)

    def _subscribed(self, uri: str, subscribed: bool) -> None:
        with self._lock:
            if subscribed:
                self._subscriptions.add(uri)
            else:
                self._subscriptions.discard(uri)

    def resubscribe(self) -> None:
        """Subscribe again to every URI, in a new session that knows none of them (after a
        Streamable HTTP server forgot the old one). Failures are logged."""
        def logged(uri: str) -> Callable[[Future], None]:
            def done(future: Future) -> None:
                if not future.cancelled() and future.exception() is not None:
                    self.log.warning("subscribing again to %s failed: %s", uri,
                                     future.exception())
            return done
        for uri in self.subscriptions:
            self.subscribe_f(uri, None).add_done_callback(logged(uri))

    def listen(self, *, tools: bool, prompts: bool, resources: bool, uris: Any,
               timeout: Any) -> Any:
        """The era's listen (see :meth:`raider_sync.McpServer.listen`); blocks until it is
        open. Raises NotConnected, McpError, SubscriptionEnded, RequestTimeout."""
        bound = self.bound(timeout, "listen")
        connection = self.connection
        era = connection.era
        if connection.status not in (*UP, "starting") or era is None:
            raise connection.not_connected()
        return era.listen(tools=tools, prompts=prompts, resources=resources,
                          uris=[str(uri) for uri in uris], timeout=bound)

    def request_any_f(self, method: str, params: dict | None, timeout: Any,
                      on_progress: ProgressCallback | None) -> Future:
        """A method raider_sync does not wrap, its result as sent (a stateless era's
        answer fetched anew)."""
        check_request(method, params)
        try:
            bound = self.bound(timeout, "request_f")
        except RaiderError as exc:
            return failed(exc)
        return self.request_f(method, params, bound, cache="refresh", on_progress=on_progress)

    def request_any(self, method: str, params: dict | None, timeout: Any,
                    on_progress: ProgressCallback | None) -> Any:
        """Blocking :meth:`request_any_f`, the request sent on this thread."""
        check_request(method, params)
        bound = self.bound(timeout, "request")
        return self.wait(self.request_f(method, params, bound, inline=True, cache="refresh",
                                        on_progress=on_progress), bound)


def _none(_: Any) -> None:
    return None
