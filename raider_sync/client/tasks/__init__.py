"""Tools run as tasks: the record of a task's state and the wires that carry it.

- :mod:`.records`: :class:`~.records.TaskStatus`, the one record both wires produce;
- :mod:`.wire`: :class:`~.wire.TaskWire`, what every wire does;
- :mod:`.wire_v1`: the 2025-11-25 wire (experimental ``tasks``, handshake era).
"""
from __future__ import annotations

from .records import TaskStatus
from .wire import TaskWire
from .wire_v1 import V1Wire

__all__ = ["TaskStatus", "TaskWire", "V1Wire"]
