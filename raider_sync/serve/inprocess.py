"""An MCP connection inside one process: a client :class:`McpServer` and a served
:class:`ToolServer` joined by two queues, with no subprocess and no socket.

    with McpServer.in_process(tool_server) as server:
        server.call_tool("mcp__local__add", {"a": 1, "b": 2})

Everything above the transport is the real thing: the client's JSON-RPC session, the
handshake, the served session that ``raider-sync serve`` runs, deadlines, cancellation and
progress. Each message crosses as JSON text, so what JSON cannot carry fails as it would on a
pipe and neither side shares objects with the other.
"""
from __future__ import annotations

import logging
import queue
import threading
from typing import Any

from ..client.server import McpServer
from ..config import ServerSpec
from ..errors import ConnectionClosed
from ..protocol.messages import encode_message
from ..threads.futures import Deadline
from ..transports.base import Closed, Deliver, Transport, deliver_json
from .serving import ServedSession

log = logging.getLogger("raider_sync.inprocess")

_EOF = object()


class QueueEnd(Transport):
    """One end of an in-process pipe: sends onto ``outbox``; a reader thread
    (``raider-<name>-reader``) delivers what arrives in ``inbox``. Closing it ends the peer's
    input, as closing a pipe would."""

    def __init__(self, inbox: queue.SimpleQueue, outbox: queue.SimpleQueue, *, name: str):
        self.inbox, self.outbox, self.name = inbox, outbox, name
        self._lock = threading.Lock()
        self._closed = False
        self._thread: threading.Thread | None = None

    def start(self, deliver: Deliver, closed: Closed, *, timeout: float | None = None) -> None:
        self._thread = threading.Thread(target=self._read, args=(deliver, closed),
                                        name=f"raider-{self.name}-reader", daemon=True)
        self._thread.start()

    def send(self, message: dict, *, deadline: Deadline | None = None) -> None:
        """Queue one message. Raises ValueError/TypeError for what JSON cannot carry,
        ConnectionClosed once this end is closed."""
        data = encode_message(message)
        with self._lock:
            if self._closed:
                raise ConnectionClosed(f"{self.name} is closed")
            self.outbox.put(data)

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self.outbox.put(_EOF)  # the peer's input ends
                self.inbox.put(_EOF)   # and so does this end's own reader
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(5)

    def _read(self, deliver: Deliver, closed: Closed) -> None:
        while True:
            data = self.inbox.get()
            if data is _EOF:
                break
            deliver_json(data, deliver, log, self.name, "a message")
        closed(ConnectionClosed(f"{self.name}: the other end closed"))


class InProcessTransport(Transport):
    """The client's transport to an in-process :class:`ToolServer`: starting it starts a
    :class:`ServedSession` on thread ``raider-<name>-inprocess``; closing it ends that
    session and joins the thread for up to ``grace`` s. A handler still running then (a
    thread cannot be killed) ends the thread when it returns, within the tool server's own
    call timeout."""

    def __init__(self, tool_server: Any, *, name: str, grace: float = 2.0):
        self.grace = grace
        to_server: queue.SimpleQueue[Any] = queue.SimpleQueue()  # encoded messages, then an end
        to_client: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.name = name
        self.client_end = QueueEnd(to_client, to_server, name=f"{name}-client")
        self.server_end = QueueEnd(to_server, to_client, name=f"{name}-server")
        self.tool_server = tool_server
        self._thread: threading.Thread | None = None

    def start(self, deliver: Deliver, closed: Closed, *, timeout: float | None = None) -> None:
        served = ServedSession(self.tool_server, self.server_end)
        self._thread = threading.Thread(target=served.run, name=f"raider-{self.name}-inprocess",
                                        daemon=True)
        self._thread.start()
        self.client_end.start(deliver, closed, timeout=timeout)

    def send(self, message: dict, *, deadline: Deadline | None = None) -> None:
        self.client_end.send(message, deadline=deadline)

    def close(self) -> None:
        self.client_end.close()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(self.grace)


class InProcessServer(McpServer):
    """An :class:`McpServer` whose server is a :class:`ToolServer` of this process; made by
    :meth:`McpServer.in_process`. Its transport is ``in-process``; stopping it leaves the
    tool server running (stop that yourself, or use it as a context manager). ``kill_grace``
    is how long a stop waits for handlers still running; ``protocol`` picks the era as a
    configured server's ``protocol`` does (default: the newest both ends speak)."""

    def __init__(self, tool_server: Any, *, protocol: str | None = None, **options: Any):
        self.tool_server = tool_server
        spec = ServerSpec(name=tool_server.name, command="in-process", protocol=protocol)
        super().__init__(spec, **options)

    @property
    def transport(self) -> str:
        return "in-process"

    @property
    def fingerprint(self) -> str:
        return f"in-process:{self.key}:{id(self.tool_server):x}"

    @property
    def child_env(self) -> dict[str, str]:
        return {}

    def _open_transport(self) -> Transport:
        return InProcessTransport(self.tool_server, name=self.key, grace=self.kill_grace)
