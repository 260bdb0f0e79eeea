"""A stdio server's stdout: its lines made messages, and who reads them.

Two kinds of thread read a server's stdout, one at a time:

- its reader thread (``raider-<name>-reader``, :mod:`.stdio`), which also reads stderr, and
- a caller that waits for the answer to the only request in flight (:meth:`StdoutReader.lead`,
  reached through :meth:`~raider_sync.transports.base.Transport.send_awaited`). It reads its
  answer itself, sparing the hand-off from the reader thread: a lock and a thread wake-up
  that with a fast server take as long as the whole exchange.

The *turn* (a lock) says who reads: its holder reads stdout and takes what it read, in order.
After a caller's turn the reader thread leaves stdout alone for :data:`LEND_SECONDS`, so that
calls made one after another pass it on without waking the reader; it takes the turn back
after that, at once when a request was sent that no caller reads for, and gives it up when a
caller asks. What the server sends on its own between such calls is read within that time.
A caller asks before it writes its request, and the reader thread reads nothing while one
asks: the answer cannot reach the reader thread first. A caller whose write must wait (for
the lock, for room in the pipe) stops asking meanwhile, since the server may read its stdin
only once its stdout is read.

Ctrl-C. Python runs signal handlers on the main thread, between bytecodes: bytes held only
by a local variable there could be lost between the read and their use, and with them other
callers' answers. So the main thread reads into the reader's inbox in one step of C code
(:func:`~raider_sync.threads.interrupts.read_into`), takes only a chunk that
is exactly its own whole answer, and leaves anything else in the inbox for the reader thread,
which takes it in order. Other threads get no such exceptions and take whatever comes.
"""
from __future__ import annotations

import collections
import logging
import os
import select
import threading
import time
from concurrent.futures import Future
from typing import Any, Callable

from ..errors import ConnectionClosed
from ..protocol.messages import MessageTooLong, answers, decode_message, looks_like_jsonrpc
from ..threads.interrupts import read_into
from .base import Deliver, LineSplitter, deliver_json, deliver_parsed, poll_ms, too_large

#: how much one read takes (a pipe holds 64 KiB unless the server's side was made larger)
CHUNK = 256 * 1024
#: how long after a caller's turn the reader thread leaves stdout to the next caller
LEND_SECONDS = 0.02
#: how often a caller that reads for its answer looks whether it was settled elsewhere
LEAD_TICK = 0.05


class StdoutReader:
    """The stdout of one server process: lines to messages for ``deliver``, read by the
    reader thread or by a waiting caller (see the module's doc).

    ``ended`` is true once stdout has ended (EOF, or a line over ``max_message_size``, which
    ends the connection; ``error`` then says so). Not thread-safe apart from the turn: the
    methods for the reader thread are called on that thread only.
    """

    def __init__(self, fd: int, deliver: Deliver, *, name: str, log: logging.Logger,
                 max_message_size: int, stderr_tail: Callable[[], list[str]]):
        self.fd = fd
        self.name = name
        self.log = log
        self.max_message_size = max_message_size
        self._deliver = deliver
        self._stderr_tail = stderr_tail
        self._lines = LineSplitter(max_message_size)
        #: lines that were not JSON-RPC, the first of them, and the messages that were
        self.noise_lines = 0
        self.first_noise: str | None = None
        self.messages_seen = 0
        self.ended = False
        self.error: BaseException | None = None
        #: set by the transport when it stops: a caller reading for its answer gives up
        self.stopping = False
        self._inbox: collections.deque[bytes] = collections.deque()  # read, not yet taken
        self._at_eof = False  # a read found the end: what the inbox holds is the last
        self._turn = threading.Lock()
        self._reader_holds = False
        self._askers: set[int] = set()  # callers taking the turn or waiting for it
        self._leader: int | None = None  # the caller holding the turn
        self._wanted = False  # a request was sent that no caller reads for
        self._lent_at = 0.0  # when a caller's turn ended
        self._poll = select.poll()  # the holder's, when it is a caller
        self._poll.register(fd, select.POLLIN)
        self.wake_fd, wake_w = os.pipe()  # wakes the reader thread
        os.set_blocking(self.wake_fd, False)
        os.set_blocking(wake_w, False)
        self._wake_w: int | None = wake_w  # None once closed
        self._wake_lock = threading.Lock()

    # -- callers -------------------------------------------------------------------------

    def lead(self, request_id: Any, answer: Future, deadline: float,
             write: Callable[[Callable[[], None]], None]) -> None:
        """``write(on_wait)`` the request, then read stdout on this thread until ``answer``
        is done (or what came is not for this thread to take, stdout ends, the transport
        stops or ``deadline`` passes), unless another caller reads already: it then takes the
        answer, or leaves it to the reader thread. Blocks while the reader thread finishes
        what it has read. Raises what ``write`` and an interrupt raise; nothing read is lost
        by it."""
        me = threading.get_ident()
        try:
            # asking before the request is written: the reader thread, which neither takes
            # the turn nor reads while a caller asks, cannot be the one to read the answer.
            # A write that must wait (for the lock, for room) steps aside meanwhile: the
            # server may be waiting for its stdout to be read before it reads its stdin.
            self._ask(me)
            write(self._step_aside)
            self._ask(me)  # again, had the write stepped aside
            if self.ended or (self._turn.locked() and not self._reader_holds):
                self.want_reader()  # ended, or another caller reads: it takes or passes on
                return
            with self._turn:  # a `with`: an interrupt cannot leave the lock held
                self._leader = me
                try:
                    self._read_for(request_id, answer, deadline,
                                   threading.current_thread() is threading.main_thread())
                finally:
                    self._leader = None
                    self._lent_at = time.monotonic()
        finally:
            self._askers.discard(me)
            if self._wanted or self._inbox or self._at_eof or self.ended:
                self._wake()

    def _ask(self, me: int) -> None:
        """Ask for the turn (a caller that asks already: nothing); the reader thread lets go
        at its next look."""
        if me not in self._askers:
            self._askers.add(me)
            if self._reader_holds:
                self._wake()

    def _step_aside(self) -> None:
        """This caller's write waits: the reader thread reads meanwhile (a caller that
        stepped aside already: nothing)."""
        me = threading.get_ident()
        if me in self._askers:
            self._askers.discard(me)
            self.want_reader()

    def want_reader(self) -> None:
        """A request was sent that no caller reads for: the reader thread takes the turn as
        soon as no caller holds it."""
        self._wanted = True
        if not self._reader_holds:
            self._wake()

    def _read_for(self, request_id: Any, answer: Future, deadline: float, main: bool) -> None:
        while not answer.done() and not self.ended and not self.stopping:
            if self._inbox or self._at_eof:
                if self._take_own(request_id):
                    return  # its answer taken: the answer is done
                if main:
                    return  # left for the reader thread, in order
                self._take_inbox()
                continue
            left = deadline - time.monotonic()
            if left <= 0:
                return  # the process timer fails the request
            if self._poll.poll(poll_ms(min(LEAD_TICK, left))):
                self._fill()

    def _take_own(self, request_id: Any) -> bool:
        """Take the inbox when it is exactly one whole line holding the answer to
        ``request_id`` (then True); anything else stays for the reader thread. Safe from
        interrupts: the inbox is emptied in one step, once the answer is known to be ours,
        and an interrupt after that loses only the interrupted caller's own answer."""
        if len(self._inbox) != 1 or self._at_eof or self._lines.holding:
            return False
        chunk = self._inbox[0]
        if chunk.find(b"\n") != len(chunk) - 1:
            return False
        try:
            message = decode_message(chunk)
        except ValueError:
            return False
        if not (isinstance(message, dict) and looks_like_jsonrpc(message)
                and answers(message, request_id)):
            return False  # a batch too: its other answers are not this thread's to take
        self._inbox.clear()
        self.messages_seen += 1
        deliver_parsed(message, self._deliver, self.log, self.name)
        return True

    # -- the reader thread -----------------------------------------------------------------

    def reader_turn(self) -> bool:
        """Whether the reader thread reads stdout now: it keeps the turn until a caller asks
        for it, and takes it back when it is due (a request no caller reads for, what a
        caller left unread, or :data:`LEND_SECONDS` after a caller's turn)."""
        if self.ended:
            self.reader_release()
            return False
        if self._reader_holds:
            if not self._askers:
                return True
            self.reader_release()
            return False
        due = (self._wanted or self._inbox or self._at_eof
               or time.monotonic() - self._lent_at >= LEND_SECONDS)
        if self._askers or not due or not self._turn.acquire(False):
            return False
        if self._askers:  # a caller came meanwhile: it goes first
            self._turn.release()
            return False
        self._reader_holds = True
        self._wanted = False
        self._take_inbox()
        return not self.ended

    def reader_wait(self) -> float:
        """Seconds the reader thread may wait without the turn before it looks again: what
        is left of the time stdout is lent, or as long again while a caller reads."""
        if self._askers or self._turn.locked():
            return LEND_SECONDS
        return max(0.001, LEND_SECONDS - (time.monotonic() - self._lent_at))

    def reader_read(self) -> None:
        """Read what stdout has (the reader thread holds the turn) and take it; nothing while
        a caller asks for the turn: what came may be its answer, which it reads itself."""
        if not self._askers and self._fill():
            self._take_inbox()

    def reader_release(self) -> None:
        if self._reader_holds:
            self._reader_holds = False
            self._turn.release()

    def drain_wake(self) -> None:
        try:
            while os.read(self.wake_fd, 4096):
                pass
        except OSError:  # BlockingIOError: drained
            pass

    def _wake(self) -> None:
        with self._wake_lock:
            if self._wake_w is None:
                return
            try:
                os.write(self._wake_w, b"\0")
            except OSError:  # full: a wake is pending anyway
                pass

    # -- stopping --------------------------------------------------------------------------

    def wait_unheld(self, timeout: float) -> bool:
        """Wait up to ``timeout`` s until no caller reads (the transport stops; the reader
        thread has ended). True when none does, and the pipe may be closed."""
        if self._leader == threading.get_ident():
            return False
        if not self._turn.acquire(timeout=timeout):
            return False
        self._turn.release()
        return True

    def close(self) -> None:
        """Close the wake pipe (the reader thread has ended)."""
        with self._wake_lock:
            wake_w, self._wake_w = self._wake_w, None
        if wake_w is not None:
            os.close(self.wake_fd)
            os.close(wake_w)

    # -- taking what was read (the turn's holder) --------------------------------------------

    def _fill(self) -> bool:
        """Read one chunk into the inbox (:func:`~raider_sync.threads.interrupts.read_into`: an
        interrupt loses none of it); False when there was nothing after all."""
        try:
            if not read_into(self._inbox, self.fd, CHUNK):
                self._at_eof = True
        except BlockingIOError:
            return False
        except (OSError, ValueError):  # closed under us: we are stopping
            self._at_eof = True
        return True

    def _take_inbox(self) -> None:
        while self._inbox and not self.ended:
            self._take(self._inbox.popleft())
        if self.ended:
            self._inbox.clear()
        elif self._at_eof:
            self._take(b"")  # a last line without its newline
            self.ended = True

    def _take(self, chunk: bytes) -> None:
        """Deliver the messages ``chunk`` completes (at EOF, an empty chunk: a last line
        without its newline); a line over the limit, or a failure, ends stdout."""
        try:
            for line in self._lines.feed(chunk) if chunk else self._lines.rest():
                self._take_line(line)
        except MessageTooLong:
            self._end(ConnectionClosed(too_large(self.name, "a line on stdout",
                                                 self.max_message_size), self._stderr_tail()))
            self.log.warning("%s", self.error)
        except Exception as exc:  # noqa: BLE001 - never end the reader without saying so
            self.log.exception("%s: reading stdout failed", self.name)
            self._end(ConnectionClosed(f"MCP server {self.name!r}: reading its stdout failed: "
                                       f"{type(exc).__name__}: {exc}", self._stderr_tail()))

    def _end(self, error: BaseException) -> None:
        self.error = error
        self.ended = True

    def _take_line(self, line: str | bytes) -> None:
        if not line or line.isspace():
            return
        message = deliver_json(line, self._deliver, self.log, self.name, "a line on stdout")
        if looks_like_jsonrpc(message):
            self.messages_seen += 1
            return
        self.noise_lines += 1
        if self.first_noise is None:
            head = line[:200]
            self.first_noise = head.decode("utf-8", "replace") if isinstance(head, bytes) else head

