"""The events extension (``io.modelcontextprotocol/events``, a draft) served by a ToolServer:
see :mod:`.served` and docs/events.md."""
from __future__ import annotations

from ...protocol.events import EXTENSION
from .served import ServedEvents

EVENTS_EXTENSION = EXTENSION

__all__ = ["EVENTS_EXTENSION", "ServedEvents"]
