"""What a server sends unasked, and where each of it goes.

:class:`Inbox` takes a connection's notifications and requests to the client (on the
session's notification and request threads): listen notifications to the eras' subscriptions,
list changes to the catalog, log messages to the server's stdlib logger and ``on_log``,
resource updates to ``on_resource_updated``, task statuses to the tasks followed, requests
to the client's handlers. A user's callback that raises is logged, never let out: it must
not stop the dispatch.
"""
from __future__ import annotations

import logging
from typing import Any, Callable

from .capabilities import ClientCapabilities
from .catalog import Catalog
from .eras.host import EraHost
from .surface import LOG_LEVELS


class Inbox:
    """The dispatch of one server's incoming messages. ``owner`` is the
    :class:`~raider_sync.McpServer` its callbacks are called with (``on_tools_changed``,
    ``on_log`` and ``on_resource_updated`` are read from it at each message, so that they
    may be set after it was made)."""

    def __init__(self, owner: Any, *, catalog: Catalog, host: EraHost,
                 handlers: ClientCapabilities, log: logging.Logger,
                 task_status: Callable[[str, dict], None] | None = None):
        self.owner = owner
        self.task_status = task_status  # notifications/tasks/status, to the tasks followed
        self.catalog = catalog
        self.host = host
        self.handlers = handlers
        self.log = log

    def request(self, method: str, params: dict) -> Any:
        """A request of the server to the client (ping, roots, sampling, elicitation)."""
        if method == "ping":
            return {}
        return self.handlers.handle(method, params)

    def notification(self, method: str, params: dict) -> None:
        self.host.offer(method, params)
        if method == "notifications/tools/list_changed":
            self.catalog.tools_changed()
        elif method == "notifications/prompts/list_changed":
            self.catalog.forget_lists("prompts/list")
        elif method == "notifications/resources/list_changed":
            self.catalog.forget_lists("resources/list", "resources/templates/list")
        elif method == "notifications/message":
            self._server_log(params)
        elif method == "notifications/resources/updated":
            self._resource_updated(params)
        elif method == "notifications/tasks/status" and self.task_status is not None:
            self.task_status(method, params)

    def tools_changed(self) -> None:
        """Call ``on_tools_changed(server)``, if set."""
        self._call("on_tools_changed")

    def _server_log(self, params: dict) -> None:
        """notifications/message: to the server's stdlib logger, then to ``on_log``."""
        level = str(params.get("level") or "info")
        logger = params.get("logger") if isinstance(params.get("logger"), str) else None
        data = params.get("data")
        self.log.log(LOG_LEVELS.get(level, logging.INFO), "%s%s",
                     f"[{logger}] " if logger else "", data)
        self._call("on_log", level, logger, data)

    def _resource_updated(self, params: dict) -> None:
        uri = params.get("uri")
        if isinstance(uri, str):
            self._call("on_resource_updated", uri)

    def _call(self, callback: str, *args: Any) -> None:
        fn = getattr(self.owner, callback, None)
        if fn is None:
            return
        try:
            fn(self.owner, *args)
        except Exception:  # noqa: BLE001 - a user's callback must not stop dispatch
            self.log.exception("%s failed", callback)
