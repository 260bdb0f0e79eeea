"""The stdio transport: a server process, one JSON-RPC message per line.

One thread per server, ``raider-<name>-reader``, waits on the server's stdout and stderr
together (poll): it hands each stdout line to ``deliver`` and keeps a bounded tail of the
stderr log. A caller that waits for the answer to the only request in flight reads stdout
itself while it waits (:mod:`.stdout`), which spares the hand-off from the reader thread.
Writes happen on the caller's thread under a lock. The process runs in a session (process
group) of its own, so stopping it reaches ``npx``/``uvx`` wrappers and whatever they started.
"""
from __future__ import annotations

import collections
import functools
import logging
import os
import select
import signal
import subprocess
import threading
import time
from concurrent.futures import Future
from typing import Callable

from ..errors import ConnectionClosed, RaiderError, RequestTimeout, last_stderr_line
from ..protocol.messages import DEFAULT_MAX_MESSAGE_SIZE, encode_message, is_request
from ..threads.futures import Deadline
from ..threads.interrupts import acquire_into, write_into
from .base import Closed, Deliver, LineSplitter, Transport, poll_ms
from .stdout import StdoutReader

STDERR_TAIL_LINES = 50
_STDERR_LINE_BYTES = 64 * 1024
_CHUNK = 64 * 1024  # of stderr
_STDERR_DRAIN_SECONDS = 2.0  # only reached when a leftover child keeps stderr open
_EXIT_CODE_WAIT_SECONDS = 0.2
# A process that exits closes its pipes together, and can be reaped a moment later; one still
# running this long after its stdout ended (or a write found its stdin closed) closed that
# pipe on purpose and stays up: it is not waited for.
_EXITING_SECONDS = 0.1


def wait_exit(proc: subprocess.Popen, seconds: float) -> bool:
    """Wait up to ``seconds`` for ``proc`` to exit and reap it; True when it has.

    Where Linux offers a pidfd the wait wakes at the exit itself; Popen.wait(timeout) polls
    with sleeps of up to 50 ms, which adds up over many stops.
    """
    if proc.poll() is not None:
        return True
    pidfd = None
    if hasattr(os, "pidfd_open"):
        try:
            pidfd = os.pidfd_open(proc.pid)
        except OSError:
            pidfd = None
    if pidfd is not None:
        try:
            select.select([pidfd], [], [], max(0.0, seconds))
        finally:
            os.close(pidfd)
        return proc.poll() is not None
    try:
        proc.wait(seconds)
        return True
    except subprocess.TimeoutExpired:
        return False


def encode_line(message: dict) -> bytes:
    """One message as one line of UTF-8 JSON (see :func:`encode_message`)."""
    return encode_message(message) + b"\n"


class StdioTransport(Transport):
    """A local MCP server process spoken to over its stdin and stdout.

    ``close()`` closes stdin, waits ``kill_grace`` s for the process to exit, sends SIGTERM to
    its process group, waits ``kill_grace`` s more, then SIGKILLs the group. A line on stdout
    longer than ``max_message_size`` bytes ends the connection (its error names the limit);
    at most that much of it is held in memory.
    """

    def __init__(self, command: str, args: list[str], *, env: dict[str, str] | None = None,
                 cwd: str | None = None, name: str = "stdio", kill_grace: float = 2.0,
                 max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE):
        self.command = command
        self.max_message_size = max_message_size
        self.args = list(args)
        self.env = env
        self.cwd = cwd
        self.name = name
        self.kill_grace = kill_grace
        self.log = logging.getLogger(f"raider_sync.server.{name}")
        self._proc: subprocess.Popen | None = None
        self._write_lock = threading.Lock()
        self._close_lock = threading.Lock()
        self._closing = False
        self._tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
        self._reader: threading.Thread | None = None
        self._stdout: StdoutReader | None = None
        self._stalled = False

    # -- Transport -----------------------------------------------------------------------

    def start(self, deliver: Deliver, closed: Closed, *, timeout: float | None = None) -> None:
        """Spawn the process. Raises RaiderError when it cannot be started, ConnectionClosed
        when the transport was closed first (a stop that raced the start)."""
        with self._close_lock:  # a close either comes before (nothing spawned) or reaps it
            if self._closing:
                raise ConnectionClosed(f"{self.name} was closed before it started")
            self._spawn_process(deliver, closed)

    def _spawn_process(self, deliver: Deliver, closed: Closed) -> None:
        try:
            proc = self._proc = subprocess.Popen(
                [self.command, *self.args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, env=self.env, cwd=self.cwd, start_new_session=True,
                close_fds=True, bufsize=0)
        except FileNotFoundError as exc:
            missing = self.cwd if self.cwd and not os.path.isdir(self.cwd) else self.command
            raise RaiderError(f"cannot start {self.command!r}: {missing} not found") from exc
        except OSError as exc:
            raise RaiderError(f"cannot start {self.command!r}: {exc.strerror or exc}") from exc
        self.pid = proc.pid
        assert proc.stdin is not None and proc.stdout is not None  # both are pipes
        # writes wait for room with a deadline (see send); the child's end stays blocking
        os.set_blocking(proc.stdin.fileno(), False)
        out = proc.stdout.fileno()
        os.set_blocking(out, False)
        stdout = self._stdout = StdoutReader(out, deliver, name=self.name, log=self.log,
                                             max_message_size=self.max_message_size,
                                             stderr_tail=lambda: self.stderr_tail)
        # the reader is handed what it reads: a stop() may clear the attributes before it runs
        self._reader = threading.Thread(target=self._read, args=(closed, proc, stdout),
                                        daemon=True, name=f"raider-{self.name}-reader")
        self._reader.start()

    def send(self, message: dict, *, deadline: Deadline | None = None) -> None:
        """Write one message line. Blocks while the server's stdin pipe is full, until
        ``deadline`` (time.monotonic()); then raises RequestTimeout when nothing of the message
        was written, or kills the server (a half-written line breaks the stream) and raises
        ConnectionClosed. Raises ConnectionClosed when the process is gone."""
        self._write(message, deadline)
        if is_request(message) and self._stdout is not None:
            self._stdout.want_reader()  # its answer comes to the reader thread

    def send_awaited(self, message: dict, *, deadline: Deadline | None = None,
                     answer: Future | None = None, alone: bool = False,
                     idle: float | None = None) -> None:
        """:meth:`send`; then, when the request is ``alone``, read stdout on this thread until
        ``answer`` is done (see :mod:`.stdout`), at most until ``deadline``. Raises what
        :meth:`send` raises; an interrupt while it reads propagates, and loses nothing."""
        stdout = self._stdout
        if answer is None or not alone or deadline is None or stdout is None:
            self.send(message, deadline=deadline)
            return
        stdout.lead(message.get("id"), answer, deadline,
                    functools.partial(self._write, message, deadline))

    def _write(self, message: dict, deadline: float | None,
               on_wait: Callable[[], None] | None = None) -> None:
        """Write ``message`` as one line; ``on_wait()`` is called before each wait, for the
        lock or for room in the pipe (a caller that leads steps aside)."""
        data = encode_line(message)
        proc = self._proc
        if proc is None or self._closing:
            raise ConnectionClosed(f"{self.name} is not running", self.stderr_tail)
        left = -1 if deadline is None else max(0.0, deadline - time.monotonic())
        held: list = []  # see raider_sync.threads.interrupts: a Ctrl-C cannot leave the lock held
        try:
            acquire_into(held, self._write_lock, 0)
            if not held:  # another thread writes: wait for it
                if on_wait is not None:
                    on_wait()
                acquire_into(held, self._write_lock, left)
            if not held:
                raise RequestTimeout(f"{self.name} did not read its stdin in time")
            if self._closing:
                raise ConnectionClosed(f"{self.name} is not running", self.stderr_tail)
            self._write_all(proc, data, deadline, on_wait)
            return
        except RaiderError:  # a RequestTimeout is an OSError too: it is no broken pipe
            raise
        except (BrokenPipeError, ValueError, OSError) as exc:
            broken = exc
        finally:
            if held:
                self._write_lock.release()
        exited = self._await_last_words(proc)
        raise ConnectionClosed(self._gone_message(proc, "closed its stdin", exited),
                               self.stderr_tail) from broken

    def _await_last_words(self, proc: subprocess.Popen) -> bool:
        """Whether the server has exited (waits :data:`_EXITING_SECONDS` at most); if it has,
        wait (a bounded moment) for the reader to finish its stderr, so that an error found by
        a write names the same last line as one found by the reader. A server that closed its
        stdin and runs on is not waited for: its reader does not finish."""
        if not wait_exit(proc, _EXITING_SECONDS):
            return False
        reader = self._reader
        if reader is not None and reader is not threading.current_thread() and not self._closing:
            reader.join(_STDERR_DRAIN_SECONDS + _EXITING_SECONDS + _EXIT_CODE_WAIT_SECONDS)
        return True

    def _write_all(self, proc: subprocess.Popen, data: bytes, deadline: float | None,
                   on_wait: Callable[[], None] | None = None) -> None:
        """Write ``data`` to the non-blocking stdin, waiting for room until ``deadline``. An
        interrupt that comes with part of the line written finishes the line first (within
        the deadline), so that the next message starts a line of its own."""
        fd = proc.stdin.fileno()  # type: ignore[union-attr]  # a pipe: never None
        written: list[int] = []  # what each write took (raider_sync.threads.interrupts)
        try:
            self._write_from(proc, fd, data, written, deadline, on_wait)
        except (KeyboardInterrupt, SystemExit):
            while 0 < sum(written) < len(data):
                try:
                    self._write_from(proc, fd, data, written, deadline)
                except (KeyboardInterrupt, SystemExit):
                    continue
                except Exception:  # noqa: BLE001 - the deadline (the server was killed), a gone pipe
                    break
            raise

    def _write_from(self, proc: subprocess.Popen, fd: int, data: bytes, written: list[int],
                    deadline: float | None, on_wait: Callable[[], None] | None = None) -> None:
        view = memoryview(data)
        while True:
            done = sum(written)
            if done >= len(data):
                return
            try:
                write_into(written, fd, view[done:])
                continue
            except BlockingIOError:
                pass
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                if not done:
                    raise RequestTimeout(f"{self.name} did not read its stdin in time")
                self.log.warning("%s: stopped reading its stdin in the middle of a message; "
                                 "killing it", self.name)
                self._stalled = True
                self._signal_group(proc, signal.SIGKILL)
                raise ConnectionClosed(self._gone_message(proc, "", False), self.stderr_tail)
            if on_wait is not None:
                on_wait()
            # a pipe whose reader has gone selects writable, and the write then fails
            select.select([], [fd], [], left)

    def close(self) -> None:
        self._stop(self.kill_grace)

    def kill_now(self) -> None:
        self._stop(0)

    @property
    def stderr_tail(self) -> list[str]:
        return list(self._tail)

    @property
    def returncode(self) -> int | None:
        return self._proc.poll() if self._proc else None

    # -- stopping ------------------------------------------------------------------------

    def _stop(self, grace: float) -> None:
        with self._close_lock:
            self._closing = True  # also before start(): it then spawns nothing
            if self._stdout is not None:
                self._stdout.stopping = True
                # the reader thread takes stdout back now, however long it was lent, and
                # sees its end: else it would look again only when the lending is over
                self._stdout.want_reader()
            proc = self._proc
            if proc is None:
                return
            # a writer stuck on a full pipe holds the lock: then the server gets no EOF and
            # goes straight to SIGTERM; the kill below ends the writer's wait
            stdin_closed = self._close_stdin(proc, grace)
            if grace > 0 and not (stdin_closed and self._wait(proc, grace)):
                self._signal_group(proc, signal.SIGTERM)
                self._wait(proc, grace)
            # the whole group, even when the leader has gone: its children may not have
            self._signal_group(proc, signal.SIGKILL)
            self._wait(proc, 5)
            if not stdin_closed:
                self._close_stdin(proc, 5)
            reader = self._reader
            if reader is not None and reader is not threading.current_thread():
                reader.join(5)
            stdout = self._stdout
            # a caller reading for its answer sees the end (or its next look, the stop)
            if stdout is None or stdout.wait_unheld(5):
                for pipe in (proc.stdout, proc.stderr):
                    try:
                        pipe.close()  # type: ignore[union-attr]  # pipes: never None
                    except OSError:
                        pass
                # (the reader thread is made together with stdout's reader: not None here)
                if stdout is not None and (reader is threading.current_thread()
                                           or not reader.is_alive()):  # type: ignore[union-attr]
                    stdout.close()  # the reader thread is done with it
            self._proc = None

    def _close_stdin(self, proc: subprocess.Popen, timeout: float) -> bool:
        """Close the server's stdin once no write is under way (waits up to ``timeout`` s)."""
        if not self._write_lock.acquire(timeout=timeout):
            return False
        try:
            proc.stdin.close()  # type: ignore[union-attr]  # a pipe: never None
        except OSError:
            pass
        finally:
            self._write_lock.release()
        return True

    @staticmethod
    def _wait(proc: subprocess.Popen, seconds: float) -> bool:
        """Wait up to ``seconds`` for the process to exit; True when it has."""
        return wait_exit(proc, seconds)

    @staticmethod
    def _signal_group(proc: subprocess.Popen, sig: int) -> None:
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    # -- the reader thread -----------------------------------------------------------------

    def _read(self, closed: Closed, proc: subprocess.Popen, out: StdoutReader) -> None:
        """Read stderr, and stdout whenever no caller does, until stdout ends; then stderr
        until it ends too (or for a moment, should a leftover child hold it open), so that
        the error of a server that went away carries its last words; then tell ``closed``
        (unless we are stopping). A server still running :data:`_EXITING_SECONDS` after its
        stdout ended is not waited for: it is told at once, and the owner ends the process."""
        err = proc.stderr
        assert err is not None  # a pipe (see _spawn_process)
        log_lines = LineSplitter(_STDERR_LINE_BYTES, pieces=True)
        os.set_blocking(err.fileno(), False)
        poller = select.poll()
        poller.register(err, select.POLLIN)
        poller.register(out.wake_fd, select.POLLIN)
        err_open = True
        polled = False  # stdout is among the polled
        told = False  # closed() was told already
        drain_until: float | None = None  # set when stdout has ended
        look_at: float | None = None  # then when to look whether the process still runs
        exited = True  # ... and what was seen
        try:
            while True:
                reading = False
                if drain_until is None:
                    reading = out.reader_turn()
                    if out.ended:
                        now = time.monotonic()
                        look_at, drain_until = now + _EXITING_SECONDS, now + _STDERR_DRAIN_SECONDS
                        if out.error is not None and not self._closing:
                            closed(out.error)  # at once: the limit is what it says
                            told = True
                if reading != polled:
                    (poller.register(out.fd, select.POLLIN) if reading
                     else poller.unregister(out.fd))
                    polled = reading
                if drain_until is None:
                    wait = None if reading else poll_ms(out.reader_wait())
                else:
                    now = time.monotonic()
                    if not err_open or now >= drain_until:
                        break
                    if look_at is not None and now >= look_at:
                        look_at = None
                        if proc.poll() is None:  # its stderr may never end: fail first
                            exited = False
                            break
                    wait = poll_ms((drain_until if look_at is None else look_at) - now)
                for fd, _ in poller.poll(wait):
                    if fd == out.wake_fd:
                        out.drain_wake()
                    elif fd == out.fd:
                        if polled:
                            out.reader_read()
                    elif err_open:
                        try:
                            chunk = err.read(_CHUNK)
                        except (OSError, ValueError):  # closed under us: we are stopping
                            chunk = b""
                        if chunk is None:  # nothing after all
                            continue
                        self._keep_log(log_lines.feed(chunk) if chunk else log_lines.rest())
                        if not chunk:
                            poller.unregister(fd)
                            err_open = False
        except Exception:  # noqa: BLE001 - the reader must not die silently
            self.log.exception("%s: reading the server's pipes failed", self.name)
        finally:
            out.reader_release()
        if self._closing or told:
            return
        closed(ConnectionClosed(self._gone_message(proc, "closed its stdout", exited),
                                self.stderr_tail))

    def _keep_log(self, lines: list) -> None:
        for line in lines:
            if isinstance(line, bytes):
                line = line.decode("utf-8", "replace")
            line = line.rstrip("\r")
            if line.strip():
                self._tail.append(line)
                self.log.debug("%s", line)

    @property
    def diagnosis(self) -> str | None:
        """What explains a server that never answered: the lines it wrote to stdout that are
        not JSON-RPC, when it wrote no JSON-RPC at all (else None)."""
        stdout = self._stdout
        if stdout is None or not stdout.noise_lines or stdout.messages_seen:
            return None
        count = stdout.noise_lines
        lines = "line that is" if count == 1 else f"{count} lines that are"
        return (f"the server wrote {lines} not JSON-RPC to stdout (an MCP stdio server must "
                f"write only JSON-RPC messages there, its logs to stderr), first: "
                f"{stdout.first_noise!r}")

    def _gone_message(self, proc: subprocess.Popen, what: str, exited: bool) -> str:
        """The message of the error that ends the connection, with the last stderr line: how
        the server went (its exit code, when it has ``exited``: waits a moment to reap it),
        else ``what`` it did ("closed its stdout") while still running."""
        if self._stalled:
            how = "stopped reading its stdin and was killed"
        elif exited and wait_exit(proc, _EXIT_CODE_WAIT_SECONDS):
            how = _exit_status(proc.returncode)
        else:
            how = f"{what} while still running"
        last = last_stderr_line(self._tail)
        return f"MCP server {self.name!r} {how}" + (f": {last}" if last else "")


def _exit_status(code: int) -> str:
    """How a process ended, in words: "exited with code 3", "was killed by SIGKILL"."""
    if code >= 0:
        return f"exited with code {code}"
    try:
        return f"was killed by {signal.Signals(-code).name}"
    except ValueError:
        return f"was killed by signal {-code}"
