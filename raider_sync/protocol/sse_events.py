"""Server-sent events, parsed incrementally as the WHATWG event-stream rules say.

    parser = SseParser()
    for chunk in chunks:                      # bytes, cut anywhere
        for event in parser.feed(chunk):      # complete events only
            handle(event.event, event.data)
    parser.last_event_id, parser.retry        # what a reconnect needs
    encode_event(data, event="message")       # the bytes of one event, for a server
    KEEP_ALIVE                                # a comment line: keeps an idle stream open

Why not sseclient-py's parser: it drops an event without data together with its ``id`` and
``retry`` fields, and MCP's priming event (2025-11-25) is exactly that, an ``id`` with empty data
sent so that a client can resume a stream cut before the first message; losing it makes such
a stream unresumable. It also grows one ``bytes`` object per event, which is quadratic for a
large tool result arriving in many chunks. This parser keeps the last event id and the retry
delay across data-less events, joins long lines once, and never blocks: it only parses what it
is fed.
"""
from __future__ import annotations

from typing import NamedTuple, Optional

from .messages import DEFAULT_MAX_MESSAGE_SIZE, MessageTooLong


class SseEvent(NamedTuple):
    """One dispatched event: its type (``message`` unless named), data, and the last event id."""

    event: str
    data: str
    id: Optional[str]


class SseParser:
    """An incremental event-stream parser; :meth:`feed` returns the events each chunk completes.

    ``last_event_id`` is the id of the last complete event (data-less ones included, such as
    priming events); ``retry`` the reconnection delay in ms the server last asked for, or None.
    Comment lines, unknown fields and an unfinished event at the end of a stream are ignored.
    A line, or the data of one event, longer than ``max_size`` bytes raises MessageTooLong
    from :meth:`feed`; no more than about that much is ever held.
    """

    __slots__ = ("last_event_id", "retry", "max_size", "_partial", "_partial_size",
                 "_after_cr", "_data", "_data_size", "_event", "_id")

    def __init__(self, last_event_id: str | None = None,
                 max_size: int = DEFAULT_MAX_MESSAGE_SIZE):
        self.last_event_id = last_event_id
        self.retry: int | None = None
        self.max_size = max_size
        self._partial: list[bytes] = []   # pieces of a line not yet ended
        self._partial_size = 0
        self._data_size = 0
        self._after_cr = False            # the last chunk ended in \r: a leading \n belongs to it
        self._data: list[str] = []
        self._event = ""
        self._id = last_event_id          # the spec's "last event ID buffer"

    def reconnected(self) -> None:
        """A new connection continues the stream: drop the unfinished line and event of the
        old one, keep ``last_event_id`` and ``retry``."""
        self._partial, self._partial_size = [], 0
        self._after_cr = False
        self._data, self._data_size, self._event = [], 0, ""
        self._id = self.last_event_id

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """Parse ``chunk``; return the events it completed (possibly none). Raises
        MessageTooLong for a line or an event's data over ``max_size`` bytes."""
        if self._after_cr:
            self._after_cr = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        events: list[SseEvent] = []
        for piece in chunk.splitlines(keepends=True):
            last = piece[-1:]
            if last != b"\n" and last != b"\r":
                self._partial.append(piece)  # the chunk ended mid-line
                self._partial_size += len(piece)
                if self._partial_size > self.max_size:
                    self._partial, self._partial_size = [], 0
                    raise MessageTooLong(self.max_size)
                continue
            if piece.endswith(b"\r\n"):
                line = piece[:-2]
            else:
                line = piece[:-1]
                if last == b"\r":
                    self._after_cr = True  # reset below unless this is the chunk's last piece
            if self._partial:
                self._partial.append(line)
                line = b"".join(self._partial)
                self._partial, self._partial_size = [], 0
            if len(line) > self.max_size:
                raise MessageTooLong(self.max_size)
            event = self._line(line)
            if event is not None:
                events.append(event)
        if self._after_cr and not chunk.endswith(b"\r"):
            self._after_cr = False
        return events

    def _line(self, line: bytes) -> SseEvent | None:
        if not line:
            return self._dispatch()
        if line[:1] == b":":
            return None  # a comment (keep-alive)
        field, colon, value = line.partition(b":")
        if colon and value[:1] == b" ":
            value = value[1:]
        if field == b"data":
            self._data_size += len(value) + 1
            if self._data_size > self.max_size:
                self._data, self._data_size = [], 0
                raise MessageTooLong(self.max_size)
            self._data.append(value.decode("utf-8", "replace"))
        elif field == b"event":
            self._event = value.decode("utf-8", "replace")
        elif field == b"id":
            if b"\0" not in value:
                self._id = value.decode("utf-8", "replace")
        elif field == b"retry":
            if value.isdigit():
                self.retry = int(value)
        return None

    def _dispatch(self) -> SseEvent | None:
        self.last_event_id = self._id
        data, event = "\n".join(self._data), self._event
        self._data, self._data_size, self._event = [], 0, ""
        if not data:
            return None  # no data: nothing to dispatch, but the id above counts (priming)
        return SseEvent(event or "message", data, self.last_event_id)


#: a comment event: a reader skips it, but it keeps an idle stream (and its proxies) open
KEEP_ALIVE = b": keep-alive\n\n"


def encode_event(data: str, event: str | None = None, event_id: str | None = None) -> bytes:
    """One event as the bytes a server sends: a ``data:`` line per line of ``data`` (CR, LF
    and CRLF all end a line, as the parser reads them), then a blank line."""
    lines = []
    if event:
        lines.append(f"event: {_one_line(event, 'event')}")
    if event_id is not None:
        lines.append(f"id: {_one_line(event_id, 'event_id')}")
    lines.extend(f"data: {line}" for line in data.replace("\r\n", "\n").replace("\r", "\n")
                 .split("\n"))
    return ("\n".join(lines) + "\n\n").encode("utf-8")


def _one_line(value: str, what: str) -> str:
    if "\n" in value or "\r" in value or "\0" in value:
        raise ValueError(f"{what}: a line break or NUL cannot be sent in an SSE field")
    return value
