"""The interface every transport implements."""
from __future__ import annotations

import logging
from concurrent.futures import Future
from typing import Any, Callable, NamedTuple, Optional

from .. import _moved
from ..protocol.messages import MessageTooLong, decode_message, size_text
from ..threads.futures import Deadline

Deliver = Callable[[Any], None]
Closed = Callable[[BaseException], None]


class RequestFailed(NamedTuple):
    """Delivered (instead of a message) when a transport cannot complete one request it sent,
    after ``send`` returned: say an HTTP event stream that broke off before the answer. The
    session fails that request with ``error``; the transport never forges an answer."""

    request_id: Any
    error: BaseException


class StreamHealth(NamedTuple):
    """Delivered (instead of a message) when a transport's stream for the server's own
    messages (the HTTP GET stream) could not be opened again (``error``), or opened again
    after that (None). No request waits on that stream: this is how the owner hears at once
    that the server is out of reach, or back. The session hands it on as it does a request's
    outcome."""

    error: BaseException | None


def too_large(name: str, what: str, limit: int) -> str:
    """The message of an error for a received message over ``limit`` bytes."""
    return (f"MCP server {name!r} sent {what} larger than the maximum message size of "
            f"{size_text(limit)} (max_message_size, .mcp.json maxMessageSize)")


def read_lines(stream, limit: int):
    """The lines of a binary ``stream`` (ending at EOF), each read with at most ``limit``
    bytes (plus its newline) held in memory. Raises MessageTooLong for a longer line."""
    while True:
        line = stream.readline(limit + 1)
        if not line:
            return
        if len(line) > limit and not line.endswith(b"\n"):
            raise MessageTooLong(limit)
        yield line


class LineSplitter:
    """Cuts what a pipe gives, chunk by chunk, into lines (without their ``\n``).

    ``feed(chunk)`` returns the lines the chunk ended: each as ``str`` decoded from UTF-8 (its
    bytes when it is not UTF-8, for the caller to report). At most ``limit`` bytes of a line
    are held; a longer one raises MessageTooLong, or with ``pieces`` comes out in pieces of
    ``limit`` bytes (a log line with no end). A line is decoded once, from the buffer it was
    gathered in, which is let go before the line is returned: a large message is held twice
    (bytes and text) only while it is decoded, never while it is parsed.
    """

    def __init__(self, limit: int, *, pieces: bool = False):
        self.limit = limit
        self.pieces = pieces
        self._held = bytearray()  # the start of a line whose end has not come yet

    def feed(self, chunk: bytes) -> list[str | bytes]:
        lines: list[str | bytes] = []
        start = 0
        end = chunk.find(b"\n")
        with memoryview(chunk) as view:
            while end >= 0:
                if self._held:
                    self._hold(view[start:end])
                    lines.extend(self._release())
                else:
                    if end - start > self.limit and not self.pieces:
                        raise MessageTooLong(self.limit)
                    lines.extend(self._cut(view[start:end]))
                start = end + 1
                end = chunk.find(b"\n", start)
            if start < len(chunk):
                self._hold(view[start:])
                while self.pieces and len(self._held) > self.limit:
                    with memoryview(self._held) as held:
                        lines.append(_decoded(held[:self.limit]))
                    del self._held[:self.limit]
        return lines

    @property
    def holding(self) -> bool:
        """Whether the start of a line is held, waiting for its end."""
        return bool(self._held)

    def rest(self) -> list[str | bytes]:
        """What is held of a line that never ended (at EOF), as its last line, if anything."""
        return self._release() if self._held else []

    def _hold(self, data) -> None:
        if len(self._held) + len(data) > self.limit and not self.pieces:
            self._held = bytearray()
            raise MessageTooLong(self.limit)
        self._held += data

    def _release(self) -> list[str | bytes]:
        with memoryview(self._held) as held:
            lines = self._cut(held) if self.pieces else [_decoded(held)]
        self._held = bytearray()
        return lines

    def _cut(self, view) -> list[str | bytes]:
        if len(view) <= self.limit:
            return [_decoded(view)]
        return [_decoded(view[i:i + self.limit]) for i in range(0, len(view), self.limit)]


def _decoded(data) -> str | bytes:
    try:
        return str(data, "utf-8")
    except UnicodeDecodeError:
        return bytes(data)


def deliver_json(data: str | bytes, deliver: "Deliver", log: logging.Logger, name: str,
                 where: str) -> Any:
    """Parse one received message and hand it to ``deliver``; the message, or None when
    ``data`` is not JSON. What is not JSON (nested too deeply included), and what ``deliver``
    fails on, is logged and skipped: a reader outlives a bad message."""
    try:
        message = decode_message(data)
    except ValueError:
        log.warning("%s: skipped %s that is not JSON: %.200r", name, where, data[:200])
        return None
    deliver_parsed(message, deliver, log, name)
    return message


def deliver_parsed(message: Any, deliver: "Deliver", log: logging.Logger, name: str) -> None:
    """Hand a parsed message to ``deliver``; what it fails on is logged: a reader outlives
    a bad message."""
    try:
        deliver(message)
    except Exception:  # noqa: BLE001 - the reader must outlive a bad message
        log.exception("%s: a message could not be handled", name)


def poll_ms(seconds: float) -> int:
    """A ``poll()`` timeout in whole milliseconds, rounded up: never 0 for a wait that is
    not over, so a wait is never cut short into a busy loop."""
    return max(1, int(seconds * 1000) + 1)


class Transport:
    """Moves JSON-RPC messages between this process and one MCP peer.

    Subclasses implement the four methods; none of them knows MCP methods, and none calls
    up into its owner: what goes wrong is raised from :meth:`send` (a
    :class:`~raider_sync.errors.SessionExpired` when the server forgot the session) or
    delivered as a :class:`RequestFailed` or :class:`StreamHealth`.
    """

    #: the process id of a local server process, or None
    pid: Optional[int] = None

    def start(self, deliver: Deliver, closed: Closed, *, timeout: float | None = None) -> None:
        """Connect (blocks up to ``timeout`` s); then call ``deliver`` for every message received
        and ``closed(error)`` once if the connection ends on its own. Raises RaiderError."""
        raise NotImplementedError

    def send(self, message: dict, *, deadline: Deadline | None = None) -> None:
        """Send one message; ``deadline`` (the request's :class:`~raider_sync.threads.futures.
        Deadline`, an instant on the monotonic clock) bounds a blocking send, to the socket.
        Raises ConnectionClosed when the connection is gone."""
        raise NotImplementedError

    def send_awaited(self, message: dict, *, deadline: Deadline | None = None,
                     answer: Optional[Future] = None, alone: bool = False,
                     idle: float | None = None) -> None:
        """Send a request whose caller waits for its answer right after: a transport may
        read the answer on this thread before returning (never past ``deadline``), sparing
        a hand-off to a reader thread. ``answer`` is the future the answer settles;
        ``alone`` says no other request of the session awaits an answer (a transport whose
        answers all come on one stream reads it only then); ``idle``, the seconds of silence
        after which the request is failed (its reading here need not last longer). By
        default, :meth:`send`."""
        self.send(message, deadline=deadline)

    def close(self) -> None:
        """End the connection and join the transport's threads. Safe to call twice."""
        raise NotImplementedError

    def abandon(self, request_id: Any) -> None:
        """Told that the answer to the request ``request_id`` is no longer wanted (the session
        cancelled it, and sends its cancellation as an ordinary message). A transport that
        holds something for that answer lets go of it (HTTP in the stateless revision closes
        the answer's stream, which is how that revision cancels). Never blocks for long,
        never raises; nothing to do for most transports."""

    def drop_session(self, session: str) -> None:
        """Told that the server forgot ``session`` (a :class:`~raider_sync.errors.SessionExpired`
        this transport raised) and that its owner starts a new one now: send the next
        requests outside any session. Nothing to do for a transport without sessions."""

    def negotiated(self, protocol_version: str, timeout: float) -> None:
        """Told the revision the handshake settled on, before ``notifications/initialized``
        is sent (HTTP sends it as MCP-Protocol-Version and opens its GET stream then).
        Nothing to do for most transports."""

    def stateless(self, protocol_version: str | None,
                  message_headers: Optional[Callable[[dict], dict]] = None) -> None:
        """Told to speak the stateless revision ``protocol_version`` (None: the handshake era
        again). HTTP then sends ``message_headers(message)`` with every message and keeps no
        session. Nothing to do for most transports."""

    def kill_now(self) -> None:
        """End the connection at once, without grace periods."""
        self.close()

    @property
    def stderr_tail(self) -> list[str]:
        """The last lines a local server wrote to stderr (empty for remote servers)."""
        return []

    @property
    def diagnosis(self) -> str | None:
        """A hint at why a server never answered (say, a stdio server that wrote only text
        that is not JSON-RPC), or None."""
        return None


def __getattr__(name: str):
    # the message codec moved to raider_sync.protocol.messages; its old names still work
    return _moved.moved_name(__name__, name)
