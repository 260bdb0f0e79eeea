"""Listeners: the callbacks told of one kind of change (a ToolServer's tools, a resource, a
task's status), in the order they were added.

Adding and removing never block and may happen while the callbacks are told (a copy of the
list is told). Telling blocks for as long as the callbacks run, on the caller's thread; a
callback's exception is logged, never raised, so that one listener's failure spares the
others.
"""
from __future__ import annotations

import logging
from typing import Any, Callable


class Listeners:
    """The callbacks told of one kind of change; ``what`` names them in the log, under
    ``log`` (the owner's logger)."""

    def __init__(self, what: str, log: logging.Logger):
        self.what = what
        self._log = log
        self._callbacks: list[Callable[..., Any]] = []

    def add(self, callback: Callable[..., Any]) -> None:
        self._callbacks.append(callback)

    def remove(self, callback: Callable[..., Any]) -> None:
        """Forget ``callback``; one never added is no error."""
        if callback in self._callbacks:
            self._callbacks.remove(callback)

    def tell(self, *args: Any, first: Callable[..., Any] | None = None) -> None:
        """Call ``first`` (when given), then every callback, with ``args``."""
        for callback in [first, *self._callbacks]:
            if callback is None:
                continue
            try:
                callback(*args)
            except Exception:  # noqa: BLE001 - one listener's failure spares the others
                self._log.exception("%s failed", self.what)
