"""TaskWire: what every tasks wire does, one strategy object per wire.

A wire shapes a ``tools/call`` that may become a task (:meth:`TaskWire.declare`), recognises
the answer that created one (:meth:`TaskWire.created`) and sends the ``tasks/*`` requests
through its era's ``request_f``, so they carry the era's ``_meta``, headers and deadlines
like any request. Each ``*_f`` method returns at once a ``concurrent.futures.Future`` that
fails with McpError for the server's error answer, RequestTimeout once ``deadline`` (a
:class:`~raider_sync.threads.futures.Deadline`) passes, ConnectionClosed when the
connection ends.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from concurrent.futures import Future

from ...threads.futures import Deadline
from .records import TaskStatus


class TaskWire(ABC):
    """The protocol every tasks wire implements."""

    name: str  # "v1" | "v2"

    @abstractmethod
    def declare(self, params: dict, tool: dict | None) -> dict:
        """The ``tools/call`` params as sent (a copy when changed): v1 adds ``task``
        for a tool whose ``execution.taskSupport`` asks for it, v2 changes nothing."""

    @abstractmethod
    def created(self, result: dict) -> TaskStatus | None:
        """The TaskStatus of a ``tools/call`` answer that created a task, else None."""

    @abstractmethod
    def get_f(self, task_id: str, deadline: Deadline) -> Future:
        """A future of the task's TaskStatus (``tasks/get``)."""

    @abstractmethod
    def update_f(self, task_id: str, responses: dict, deadline: Deadline) -> Future:
        """A future of the acknowledgement of ``responses`` (v2 ``tasks/update``)."""

    @abstractmethod
    def cancel_f(self, task_id: str, deadline: Deadline) -> Future:
        """A future of the task's TaskStatus after ``tasks/cancel`` (None when the wire's
        answer carries none)."""

    @abstractmethod
    def result_f(self, task_id: str, deadline: Deadline) -> Future:
        """A future of the underlying request's result (v1 ``tasks/result``)."""
