"""Prompts, resources and ping: the requests of :class:`~raider_sync.McpServer` other than
tool calls (a part of it: the attributes are made by its ``__init__``).

Lists are fetched on first use, every page, and cached until the server announces a change;
a failing list is empty and not cached. Every blocking method waits on its ``*_f`` twin.
"""
from __future__ import annotations

import copy
from concurrent.futures import Future
from typing import Any, Callable

from .calls import seconds, tool_arguments
from .content import visible_resources
from ..errors import RaiderError, RequestTimeout
from ..threads.futures import failed, resolved, run_in_thread, then, wait_bounded
from .lifecycle import UP
from ..protocol import fetch_all_pages


class Listings:
    """The prompts, resources and ping of a server."""

    @property
    def has_prompts(self) -> bool:
        return self._status in UP and "prompts" in self.capabilities

    @property
    def has_resources(self) -> bool:
        return self._status in UP and "resources" in self.capabilities

    def list_prompts_f(self, cache: str = "use") -> Future:
        """A future of the server's prompts, listed on first use and again after
        prompts/list_changed. Empty unless connected; a failing prompts/list is empty.
        ``cache``: "use", "refresh" or "bypass" (see :mod:`raider_sync.client.eras.cache`)."""
        if not self.has_prompts:
            return resolved([])
        return self._cached_list("prompts/list", "prompts", lambda items: items, cache)

    def list_prompts(self, timeout: float | None = None, cache: str = "use") -> list[dict]:
        bound = seconds(timeout, self.call_timeout, method="McpServer.list_prompts")
        return wait_bounded(self.list_prompts_f(cache), bound)

    def get_prompt_f(self, name: str, arguments: dict | None = None, *,
                     timeout: float | None = None) -> Future:
        """A future of prompts/get's result ({description, messages}); ``timeout`` (s,
        default the call timeout) bounds it, and the request is cancelled then."""
        try:
            bound = seconds(timeout, self.call_timeout, method="McpServer.get_prompt_f")
            arguments = tool_arguments(arguments, name)
        except RaiderError as exc:
            return failed(exc)
        params: dict[str, Any] = {"name": name}
        if arguments:
            params["arguments"] = {k: str(v) for k, v in arguments.items()}
        return self._request_f("prompts/get", params, bound)

    def get_prompt(self, name: str, arguments: dict | None = None, *,
                   timeout: float | None = None) -> dict:
        """Blocking :meth:`get_prompt_f`; raises RequestTimeout after ``timeout`` s."""
        bound = seconds(timeout, self.call_timeout, method="McpServer.get_prompt")
        return self._wait(self.get_prompt_f(name, arguments, timeout=bound), bound)

    def list_resources_f(self, cache: str = "use") -> Future:
        """A future of the server's resources, cached like the prompts; ``ui://`` resources
        and those of type text/html;profile=mcp-app are left out."""
        if not self.has_resources:
            return resolved([])
        return self._cached_list("resources/list", "resources", visible_resources, cache)

    def list_resources(self, timeout: float | None = None, cache: str = "use") -> list[dict]:
        bound = seconds(timeout, self.call_timeout, method="McpServer.list_resources")
        return wait_bounded(self.list_resources_f(cache), bound)

    def list_resource_templates_f(self) -> Future:
        """A future of the server's resource templates (resources/templates/list), cached."""
        if not self.has_resources:
            return resolved([])
        return self._cached_list("resources/templates/list", "resourceTemplates", lambda i: i)

    def list_resource_templates(self, timeout: float | None = None) -> list[dict]:
        bound = seconds(timeout, self.call_timeout, method="McpServer.list_resource_templates")
        return wait_bounded(self.list_resource_templates_f(), bound)

    def read_resource_f(self, uri: str, *, timeout: float | None = None,
                        cache: str = "use") -> Future:
        """A future of resources/read's contents: ``[{uri, mimeType, text | blob}]``.
        ``cache`` applies to a stateless server's cacheable answers."""
        try:
            bound = seconds(timeout, self.call_timeout, method="McpServer.read_resource_f")
        except RaiderError as exc:
            return failed(exc)
        return then(self._request_f("resources/read", {"uri": uri}, bound, cache=cache),
                    lambda result: list(result.get("contents") or []))

    def read_resource(self, uri: str, *, timeout: float | None = None,
                      cache: str = "use") -> list[dict]:
        bound = seconds(timeout, self.call_timeout, method="McpServer.read_resource")
        return self._wait(self.read_resource_f(uri, timeout=bound, cache=cache), bound)

    def list_skills_f(self, *, timeout: float | None = None) -> Future:
        """A future of the server's skills (``skills/list``, every page): entries with their
        ``uri``, ``frontmatter`` and ``resources`` (size and digest per file). Nothing is read.
        See :mod:`raider_sync.client.skills`."""
        from . import skills
        try:
            bound = seconds(timeout, self.call_timeout, method="McpServer.list_skills_f")
        except RaiderError as exc:
            return failed(exc)
        return run_in_thread(lambda: skills.list_skills(self, bound), f"raider-{self.key}-skills")

    def list_skills(self, *, timeout: float | None = None) -> list[dict]:
        bound = seconds(timeout, self.call_timeout, method="McpServer.list_skills")
        return wait_bounded(self.list_skills_f(timeout=bound), bound)

    def get_skill_f(self, uri: str, *, timeout: float | None = None) -> Future:
        """A future of one skill, every file read and verified (size, sha256 digest, SKILL.md's
        frontmatter against its entry): ``{uri, frontmatter, body, files}``. Fails with
        SkillRejected on any mismatch, before anything more is read."""
        from . import skills
        try:
            bound = seconds(timeout, self.call_timeout, method="McpServer.get_skill_f")
        except RaiderError as exc:
            return failed(exc)
        return run_in_thread(lambda: skills.get_skill(self, uri, bound),
                             f"raider-{self.key}-skills")

    def get_skill(self, uri: str, *, timeout: float | None = None) -> dict:
        bound = seconds(timeout, self.call_timeout, method="McpServer.get_skill")
        return wait_bounded(self.get_skill_f(uri, timeout=bound), bound)

    def _cached_list(self, method: str, field: str, shape: Callable[[list], list],
                     cache: str = "use") -> Future:
        with self._lock:
            future = self._lists.get(method) if cache == "use" else None
            if future is None:
                future = self._lists[method] = self._background_f(
                    lambda: shape(self._fetch_all(method, field, self.call_timeout,
                                                  cache=cache)),
                    fallback=None, what=method)
                future.add_done_callback(lambda done: self._forget_failed(method, done))
        return then(future, lambda items: copy.deepcopy(items or []))

    def _forget_failed(self, method: str, future: Future) -> None:
        """A failed list answers [] once; it is not cached, so the next call asks again."""
        if future.result() is None:
            with self._lock:
                if self._lists.get(method) is future:
                    del self._lists[method]

    def _fetch_all(self, method: str, field: str, timeout: float,
                   timeout_message: str | None = None, cache: str = "use") -> list[dict]:
        """Every page of a paginated list, within ``timeout`` s in all."""
        def request(params: dict | None, seconds: float) -> dict:
            session = self._session
            if session is None:
                raise self._not_connected()
            return wait_bounded(self._era.request_f(session, method, params, cache,
                                                    timeout=seconds, wait=True,
                                                    timeout_message=timeout_message), seconds)
        return fetch_all_pages(request, field, timeout)

    def _background_f(self, fn: Callable[[], Any], *, fallback: Any, what: str) -> Future:
        def run() -> Any:
            try:
                return fn()
            except Exception as exc:  # noqa: BLE001 - a failing list is an empty one
                self.log.warning("%s: %s failed: %s", self.name, what, exc)
                return fallback
        try:
            return self._background.submit(run)
        except RuntimeError:
            return resolved(fallback)

    def ping(self, timeout: float = 10.0) -> None:
        """Send ``ping`` (a stateless server has none: ``server/discover`` instead); raises
        when the server does not answer within ``timeout`` s. The outcome shows in
        :attr:`status`: unanswered, a connected server reads ``degraded``; answered, a
        degraded one reads ``connected`` again."""
        bound = seconds(timeout, 10.0, method="McpServer.ping")
        method = "server/discover" if self.era == "modern" else "ping"
        try:
            self._wait(self._request_f(method, None, bound, inline=True), bound)
        except RequestTimeout as exc:
            self._degraded(f"ping: {exc}")
            raise

    def _request_f(self, method: str, params: dict | None, bound: float, *,
                   inline: bool = False, cache: str = "use", **options: Any) -> Future:
        """``method`` sent the way the era wants (``_meta``, headers, ``input_required``
        rounds), after a start under way, within ``bound`` s (a timeout the public method
        checked); ``options`` go to the session (``on_progress``)."""
        def send(left: float, inline: bool) -> Future:
            session = self._session
            if self._status not in UP or session is None:
                return failed(self._not_connected())
            return self._era.request_f(session, method, params, cache, timeout=left,
                                       inline=inline, wait=inline, **options)

        return self._when_up_f(bound, send, inline, what=method)
