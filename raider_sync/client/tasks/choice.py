"""The one place a server's tasks wire is chosen: :func:`wire_for` (a call) and
:func:`wire_named` (a resume, by the wire its handle names).

The stateless era (2026-07-28) speaks the ``io.modelcontextprotocol/tasks`` extension
(:class:`~.wire_v2.WireV2`). The handshake era's tasks (the experimental ``tasks`` of
2025-11-25, :class:`~.wire_v1.WireV1`) are for a server that advertises
``capabilities.tasks.requests.tools.call``; another handshake-era server's tools are called
as they always were.
"""
from __future__ import annotations

from typing import Any, Callable

from ...errors import TaskNotResumable
from ...protocol.codes import INTERNAL_ERROR
from .wire import Send, TaskWire
from .wire_v1 import WireV1
from .wire_v2 import WireV2

#: the wire of the handshake era's tasks (``"v1"``), or None for none
HANDSHAKE_WIRE: Callable[[Send], TaskWire] | None = WireV1

#: the wires a handle may name, by name
WIRES: dict[str, Callable[[Send], TaskWire]] = {"v2": WireV2}


def wire_for(era: str | None, capabilities: dict, send: Send) -> TaskWire | None:
    """The wire of a connection in ``era`` ("modern", "legacy") whose server declared
    ``capabilities``; None when its calls cannot become tasks. Does not block."""
    if era == "modern":
        return WireV2(send)
    if HANDSHAKE_WIRE is not None and advertises_v1(capabilities):
        return HANDSHAKE_WIRE(send)
    return None


def advertises_v1(capabilities: dict) -> bool:
    """Whether a handshake-era server serves tasks for ``tools/call`` (2025-11-25:
    ``capabilities.tasks.requests.tools.call``)."""
    tasks = capabilities.get("tasks")
    requests = tasks.get("requests") if isinstance(tasks, dict) else None
    tools = requests.get("tools") if isinstance(requests, dict) else None
    return isinstance(tools, dict) and isinstance(tools.get("call"), dict)


def wire_named(name: str, era: str | None, send: Send, handle: Any) -> TaskWire:
    """The wire a resumed task's handle names, for a connection in ``era``. Raises
    TaskNotResumable for a wire this client does not speak, or one the connection's era
    does not carry."""
    make = WIRES.get(name)
    if make is None and name == "v1":
        make = HANDSHAKE_WIRE
    if make is None:
        raise TaskNotResumable(INTERNAL_ERROR, f"task {handle.task_id}: this raider_sync has "
                               f"no {name!r} tasks wire", handle=handle)
    wanted = "modern" if name == "v2" else "legacy"
    if era != wanted:
        raise TaskNotResumable(INTERNAL_ERROR, f"task {handle.task_id} is a {name} task, and "
                               f"the server now speaks the {era or 'unknown'} era",
                               handle=handle)
    return make(send)
