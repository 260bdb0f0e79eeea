"""The output file of a command, and results cut to a character limit without loading it.

A command writes its standard output and standard error into one :class:`OutputFile` (one
open file description, so the order of writes is kept). The file has no name (O_TMPFILE, or
unlinked as soon as it is created): it lives exactly as long as the descriptors on it, so
nothing is left on disk whatever happens to the process. Text is UTF-8 with undecodable bytes replaced.

Results over ``limit`` characters keep their first and last half around
``... [N characters truncated] ...``. :func:`clip_region` reads only the head and the tail of
a large region and streams the middle through a decoder just to count its characters, so the
memory a result costs is bounded by the limit, not by the output.
"""
from __future__ import annotations

import codecs
import os
import re
import tempfile
import threading
from collections import deque

CHUNK = 1 << 20
MAX_CHAR_BYTES = 4  # the longest UTF-8 sequence: ``n`` characters never take more bytes


def truncation_marker(removed: int) -> str:
    return f"\n\n... [{removed} characters truncated] ...\n\n"


def _decoder():
    return codecs.getincrementaldecoder("utf-8")("replace")


class OutputFile:
    """An unlinked temporary file that a command writes into; read with ``pread``.

    ``fd`` is passed to the child as its stdout and stderr; this object keeps its own
    descriptor for reading until :meth:`close`.
    """

    def __init__(self, directory: str | None = None):
        self.fd: int | None = _anonymous_file(directory or tempfile.gettempdir())
        self._lock = threading.Lock()

    @property
    def closed(self) -> bool:
        return self.fd is None

    def size(self) -> int:
        """Bytes written so far (0 once closed)."""
        with self._lock:
            return os.fstat(self.fd).st_size if self.fd is not None else 0

    def clip(self, start: int, end: int, limit: int) -> str:
        """The text of bytes ``start..end``, held to ``limit`` characters (see the module)."""
        with self._lock:
            if self.fd is None:
                return ""
            return clip_region(self.fd, start, end, limit)

    def filtered(self, start: int, end: int, pattern: re.Pattern, limit: int) -> str:
        """The lines of bytes ``start..end`` that ``pattern`` finds something in, joined by
        newlines and held to ``limit`` characters; read in chunks."""
        clip = Clip(limit)
        with self._lock:
            if self.fd is None:
                return ""
            for line in iter_lines(self.fd, start, end):
                if pattern.search(line):
                    clip.add(line + "\n")
        return clip.text()

    def last_newline(self, start: int, end: int) -> int:
        """The offset just after the last newline in ``start..end``, or ``start`` if none."""
        with self._lock:
            if self.fd is None:
                return start
            pos = end
            while pos > start:
                size = min(CHUNK, pos - start)
                chunk = os.pread(self.fd, size, pos - size)
                index = chunk.rfind(b"\n")
                if index >= 0:
                    return pos - size + index + 1
                pos -= size
            return start

    def append(self, text: str) -> None:
        """Add ``text`` at the end (once the command has stopped writing)."""
        with self._lock:
            if self.fd is not None:
                os.pwrite(self.fd, text.encode(), os.fstat(self.fd).st_size)

    def close(self) -> None:
        """Release the file (its space goes once the command's descriptors are closed too)."""
        with self._lock:
            fd, self.fd = self.fd, None
        if fd is not None:
            os.close(fd)


def _anonymous_file(directory: str) -> int:
    """A read-write descriptor on a file without a name (O_TMPFILE where the system has
    it, else a temporary file unlinked at once)."""
    if hasattr(os, "O_TMPFILE"):
        try:
            return os.open(directory, os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, 0o600)
        except OSError:
            pass  # a file system without O_TMPFILE
    fd, path = tempfile.mkstemp(prefix="raider-shell-", suffix=".output", dir=directory)
    try:
        os.unlink(path)
    except OSError:
        pass
    return fd


def read_text(fd: int, start: int, end: int) -> str:
    """All of bytes ``start..end`` decoded (for small regions)."""
    return read_bytes(fd, start, end).decode("utf-8", "replace")


def clip_region(fd: int, start: int, end: int, limit: int) -> str:
    """The text of bytes ``start..end`` of ``fd``; over ``limit`` characters, its first and
    last halves around ``... [N characters truncated] ...``.

    A region of up to ``4 * limit`` bytes is decoded whole. A larger one is certainly over
    the limit (no character takes more than four bytes); its head is decoded from the start,
    its tail from the last ``4 * half`` bytes, and the middle only counted.
    """
    limit = max(0, int(limit))
    end = max(start, end)
    if end - start <= MAX_CHAR_BYTES * max(limit, 1):
        text = read_text(fd, start, end)
        if len(text) <= limit:
            return text
        head_len = limit - limit // 2
        tail_len = limit // 2
        tail = text[len(text) - tail_len:] if tail_len else ""
        return text[:head_len] + truncation_marker(len(text) - head_len - tail_len) + tail
    head_len = limit - limit // 2
    tail_len = limit // 2
    tail_start = _char_start(fd, max(start, end - MAX_CHAR_BYTES * tail_len), end)
    decoder = _decoder()
    head_parts: list[str] = []
    have = 0
    counted = 0
    pos = start
    while pos < tail_start:
        chunk = os.pread(fd, min(CHUNK, tail_start - pos), pos)
        if not chunk:
            break
        pos += len(chunk)
        text = decoder.decode(chunk)
        counted += len(text)
        if have < head_len:
            piece = text[:head_len - have]
            head_parts.append(piece)
            have += len(piece)
    rest = decoder.decode(read_bytes(fd, tail_start, end), final=True)
    counted += len(rest)
    tail = rest[len(rest) - tail_len:] if tail_len else ""
    return "".join(head_parts) + truncation_marker(counted - have - len(tail)) + tail


def read_bytes(fd: int, start: int, end: int) -> bytes:
    """All of bytes ``start..end`` (for small regions)."""
    parts = []
    pos = start
    while pos < end:
        chunk = os.pread(fd, min(CHUNK, end - pos), pos)
        if not chunk:
            break
        parts.append(chunk)
        pos += len(chunk)
    return b"".join(parts)


def _char_start(fd: int, pos: int, end: int) -> int:
    """``pos`` moved forward past UTF-8 continuation bytes (at most three)."""
    probe = os.pread(fd, min(MAX_CHAR_BYTES, end - pos), pos)
    skip = 0
    while skip < len(probe) and skip < MAX_CHAR_BYTES - 1 and 0x80 <= probe[skip] <= 0xBF:
        skip += 1
    return pos + skip


def iter_lines(fd: int, start: int, end: int, max_line: int = CHUNK):
    """The decoded lines of bytes ``start..end`` without their newline; a line longer than
    ``max_line`` bytes is cut into pieces, so memory stays bounded."""
    pending = b""
    pos = start
    while pos < end:
        chunk = os.pread(fd, min(CHUNK, end - pos), pos)
        if not chunk:
            break
        pos += len(chunk)
        data = pending + chunk
        lines = data.split(b"\n")
        pending = lines.pop()
        for line in lines:
            yield line.decode("utf-8", "replace")
        while len(pending) > max_line:
            yield pending[:max_line].decode("utf-8", "replace")
            pending = pending[max_line:]
    if pending:
        yield pending.decode("utf-8", "replace")


class Clip:
    """Text added piece by piece, kept as its first and last halves of ``limit`` characters
    (with the count of what fell between): bounded memory for any amount of text."""

    def __init__(self, limit: int):
        self.limit = max(0, int(limit))
        self.head_limit = self.limit - self.limit // 2
        self.tail_limit = self.limit // 2
        self._head: list[str] = []
        self._head_len = 0
        self._tail: deque[str] = deque()
        self._tail_len = 0
        self.total = 0

    def add(self, text: str) -> None:
        self.total += len(text)
        if self._head_len < self.head_limit:
            piece = text[:self.head_limit - self._head_len]
            self._head.append(piece)
            self._head_len += len(piece)
            text = text[len(piece):]
        if not text or not self.tail_limit:
            return
        if len(text) > self.tail_limit:
            text = text[len(text) - self.tail_limit:]
        self._tail.append(text)
        self._tail_len += len(text)
        while self._tail and self._tail_len - len(self._tail[0]) >= self.tail_limit:
            self._tail_len -= len(self._tail.popleft())

    def text(self) -> str:
        head = "".join(self._head)
        tail = "".join(self._tail)
        if self.total <= self.limit:
            return head + tail
        tail = tail[len(tail) - self.tail_limit:]
        return head + truncation_marker(self.total - len(head) - len(tail)) + tail
