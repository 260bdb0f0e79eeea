"""An in-memory transport under a jsonrpc.Session: the test plays the peer.

    session, transport = make(handle_request=...)   # an opened Session over a MemoryTransport
    transport.next_sent("tools/call")               # what the session sent
    transport.deliver({...})                        # what the peer sends
"""
from __future__ import annotations

import queue
import threading
import time

from raider_sync.jsonrpc import Session

WAIT = 5.0


class MemoryTransport:
    """Records what the session sends; the test plays the peer with ``deliver``/``close_from_peer``."""

    def __init__(self, fail_send: BaseException | None = None):
        self.sent: "queue.Queue[dict]" = queue.Queue()
        self.fail_send = fail_send
        self.deliver = None
        self.closed = None
        self.send_threads: list[str] = []

    def start(self, deliver, closed, *, timeout=None):
        self.deliver, self.closed = deliver, closed

    def send(self, message, *, deadline=None):
        if self.fail_send is not None:
            raise self.fail_send
        self.send_threads.append(threading.current_thread().name)
        self.sent.put(message)

    def next_sent(self, method: str | None = None, timeout: float = WAIT) -> dict:
        """The next message sent (with ``method``, skipping others), waiting up to ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            message = self.sent.get(timeout=max(0.0, deadline - time.monotonic()))
            if method is None or message.get("method") == method:
                return message

    def close_from_peer(self, error: BaseException) -> None:
        self.closed(error)

    def close(self):
        pass


def make(transport=None, **handlers):
    transport = transport or MemoryTransport()
    session = Session(transport, name="mem", **handlers)
    session.open()
    return session, transport
