"""Shell tools: bash, bash_output, kill_shell and monitor, and the task registry.

    from raider_sync.shell import BashTools, Tasks
"""
from .bash import AsyncTool, BashTools
from .monitor import Monitor
from .shells import Caller, Shell
from .tasks import TaskEntry, Tasks, task_notification

__all__ = ["AsyncTool", "BashTools", "Caller", "Monitor", "Shell", "TaskEntry", "Tasks",
           "task_notification"]
