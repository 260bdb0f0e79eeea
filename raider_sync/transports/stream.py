"""A transport over two byte streams (a reader and a writer), one JSON message per line.

Used to serve MCP over this process's own stdin/stdout; the stdio client transport owns a
child process instead.
"""
from __future__ import annotations

import logging
import threading
from typing import BinaryIO

from ..errors import ConnectionClosed
from ..protocol.messages import DEFAULT_MAX_MESSAGE_SIZE, MessageTooLong, size_text
from ..threads.futures import Deadline
from .base import Closed, Deliver, Transport, deliver_json, read_lines
from .stdio import encode_line

log = logging.getLogger("raider_sync.transports.stream")


class StreamTransport(Transport):
    """Reads messages from ``reader`` on thread ``raider-<name>-reader``; writes to ``writer``
    under a lock. ``close()`` closes the writer and joins the reader (which ends at EOF). A
    line longer than ``max_message_size`` bytes ends the input."""

    def __init__(self, reader: BinaryIO, writer: BinaryIO, *, name: str = "stream",
                 max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE):
        self.reader = reader
        self.max_message_size = max_message_size
        self.writer = writer
        self.name = name
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closed = False

    def start(self, deliver: Deliver, closed: Closed, *, timeout: float | None = None) -> None:
        self._thread = threading.Thread(target=self._read, args=(deliver, closed),
                                        name=f"raider-{self.name}-reader", daemon=True)
        self._thread.start()

    def send(self, message: dict, *, deadline: Deadline | None = None) -> None:
        """Write one message line. Raises ValueError/TypeError for what JSON cannot carry
        (nothing is written), ConnectionClosed when the writer is closed or broken."""
        data = encode_line(message)
        try:
            with self._lock:
                if self._closed:
                    raise ConnectionClosed(f"{self.name} is closed")
                self.writer.write(data)
                self.writer.flush()
        except (BrokenPipeError, ValueError, OSError) as exc:
            raise ConnectionClosed(f"{self.name}: cannot write: {exc}") from exc

    def close(self) -> None:
        with self._lock:
            self._closed = True
            try:
                self.writer.flush()
            except (OSError, ValueError):
                pass
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(5)

    def _read(self, deliver: Deliver, closed: Closed) -> None:
        why = "input ended"
        try:
            for line in read_lines(self.reader, self.max_message_size):
                line = line.strip()
                if line:
                    deliver_json(line, deliver, log, self.name, "a line")
        except MessageTooLong:
            why = f"a line longer than {size_text(self.max_message_size)} ended the input"
            log.warning("%s: %s", self.name, why)
        except (OSError, ValueError):
            pass
        except Exception as exc:  # noqa: BLE001 - never end the reader without saying so
            log.exception("%s: reading failed", self.name)
            why = f"reading failed: {type(exc).__name__}: {exc}"
        closed(ConnectionClosed(f"{self.name}: {why}"))
