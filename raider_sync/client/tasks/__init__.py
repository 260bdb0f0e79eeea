"""Tool calls that become tasks, on the client's side: the future, the handle, the wires.

- :class:`TaskFuture` (:mod:`.future`): what ``call_tool_f`` returns; follows the task.
- :class:`TaskHandle` (:mod:`.handle`): what ``resume_task`` needs, saved as JSON.
- :class:`TaskStatus` (:mod:`.records`): a task as the server showed it, whatever the wire.
- :class:`TaskWire` (:mod:`.wire`), :class:`WireV1` (:mod:`.wire_v1`, 2025-11-25) and
  :class:`WireV2` (:mod:`.wire_v2`): one strategy per revision, chosen in one place
  (:mod:`.choice`).
- :class:`TaskTracker` (:mod:`.poller`): the polls of one server's tasks.
"""
from .choice import HANDSHAKE_WIRE, WIRES, advertises_v1, wire_for, wire_named
from .future import Created, TaskFuture
from .handle import TaskHandle
from .poller import POLL_CAP, POLL_DEFAULT, POLL_FLOOR, FollowOptions, TaskTracker, poll_delay
from .records import TaskStatus
from .wire import TaskWire
from .wire_v1 import WireV1
from .wire_v2 import WireV2

__all__ = ["HANDSHAKE_WIRE", "POLL_CAP", "POLL_DEFAULT", "POLL_FLOOR", "WIRES", "Created",
           "FollowOptions", "TaskFuture", "TaskHandle", "TaskStatus", "TaskTracker",
           "TaskWire", "WireV1", "WireV2", "advertises_v1", "poll_delay", "wire_for", "wire_named"]
