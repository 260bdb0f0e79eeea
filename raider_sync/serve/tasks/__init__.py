"""Tools run as tasks: the ``io.modelcontextprotocol/tasks`` extension of the stateless era
(2026-07-28), served.

A tool registered with ``task="optional"`` or ``task="required"`` runs as a task when a
client that declares the extension (in its request's ``_meta``) calls it: the call is
answered at once with the task (``resultType: "task"``, its id, status and times), the
handler runs on a thread of its own, and the client polls ``tasks/get`` until the task is
completed, failed or cancelled, answers the task's questions with ``tasks/update`` and may
cancel it with ``tasks/cancel``. :mod:`.running` runs the tasks and answers those methods,
:mod:`.link` is how a task's handler reaches its client (its context's link), and
:mod:`.store` keeps the tasks.

The handshake era's tasks (the experimental ``tasks`` of 2025-11-25: ``params.task``,
``tasks/result``, ``tasks/list``, a tool's ``execution.taskSupport``) are not served: there
a tool declared for tasks is called as any other.
"""
from .running import TASK_METHODS, TASKS_EXTENSION, ServedTasks, declares_tasks
from .store import MemoryTaskStore, TaskRecord, TaskStore

__all__ = ["TASK_METHODS", "TASKS_EXTENSION", "MemoryTaskStore", "ServedTasks", "TaskRecord",
           "TaskStore", "declares_tasks"]
