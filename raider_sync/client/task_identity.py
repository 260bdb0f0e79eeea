"""Whose task a :class:`~raider_sync.client.tasks.TaskHandle` is: what a handle says of the
server a task runs on, and the check that a handle is this server's to follow.

A handle names the server by its key, its transport and a fingerprint of where it is (the URL
of an HTTP server, the command line of a stdio one); a stdio server's task by the process it
lives in; a handshake-era task over HTTP by a digest of the HTTP session that holds it (see
:mod:`raider_sync.client.tasks.handle`). It never holds headers, environment or tokens.
Nothing here blocks.
"""
from __future__ import annotations

import hashlib
import os
import shlex
from typing import Any

from ..errors import TaskNotResumable
from ..protocol.codes import INTERNAL_ERROR
from .tasks import TaskHandle


class TaskIdentity:
    """The task identity of ``owner``, an :class:`~raider_sync.McpServer`, read at each use:
    its process and its HTTP session change when it restarts."""

    def __init__(self, owner: Any):
        self.owner = owner

    def of(self) -> dict:
        """What a TaskHandle says of this server: never headers, environment or tokens."""
        owner = self.owner
        return {"server": owner.key, "fingerprint": self.fingerprint(),
                "transport": owner.transport, "instance": self.instance(),
                "session": self.session(), "protocol_version": owner.protocol_version}

    def fingerprint(self) -> str:
        """Where the server is: its URL (HTTP), its command line (stdio)."""
        owner = self.owner
        spec = owner.spec
        if owner.transport in ("http", "sse"):
            return str(spec.url)
        if spec.command:
            return shlex.join([spec.command, *spec.args])
        return f"{owner.transport}:{owner.name}"

    def instance(self) -> int | None:
        """The process a task lives in, when it lives in one: a stdio server's pid; this
        process for one served in it; None over HTTP (any client may follow the task)."""
        owner = self.owner
        if owner.transport in ("http", "sse"):
            return None
        return owner.pid if owner.transport == "stdio" else os.getpid()

    def session(self) -> str | None:
        """A digest of the HTTP session (``Mcp-Session-Id``) a handshake-era connection
        holds: such a server keeps its tasks per session. Not the id: whoever holds it may
        act in the session. None for the stateless era, stdio, or a server without one."""
        session_id = getattr(self.owner._transport, "session_id", None)
        if self.owner.era != "legacy" or not isinstance(session_id, str) or not session_id:
            return None
        return hashlib.sha256(session_id.encode()).hexdigest()[:32]

    def check(self, handle: TaskHandle, started: bool) -> None:
        """Raise TaskNotResumable when ``handle`` is not this server's to follow; with
        ``started``, the connection is up and its process and session are checked too."""
        name = self.owner.name
        transport = self.owner.transport

        def refuse(why: str) -> TaskNotResumable:
            return TaskNotResumable(INTERNAL_ERROR, f"task {handle.task_id} cannot be resumed "
                                    f"by MCP server {name!r}: {why}", handle=handle)
        if handle.transport != transport:
            raise refuse(f"it ran over {handle.transport}, this server is {transport}")
        mine = self.fingerprint()
        if handle.fingerprint != mine:
            raise refuse(f"it ran on {handle.fingerprint!r}, this server is {mine!r}")
        if started and handle.instance != self.instance():
            raise refuse(f"a {handle.transport} server's task lives in the server's process "
                         f"({handle.instance}), and this server is another one "
                         f"({self.instance()})")
        if started and handle.session is not None and handle.session != self.session():
            raise refuse("a 2025-11-25 task lives in the HTTP session (Mcp-Session-Id) that "
                         "created it, where the server keeps it, and this client holds "
                         "another session (another McpServer or process, or a reconnect); "
                         "only the client of that session can follow it")
