"""Containment of the shells' processes: a mark every command carries, and a keeper process.

Every command of one BashTools starts with ``RAIDER_SYNC_SHELL=<token>.<n>`` in its
environment (``token``: random, one per BashTools; ``n``: the shell; :class:`Marks` hands
them out). Children inherit it, so it stays on what leaves the command's process group:
``setsid CMD &``, ``setsid -f CMD``, a double fork. :func:`sweep` finds the processes that
carry a mark (``/proc/PID/environ``) and signals them, round after round until none is left;
stopping a shell sweeps its mark, closing the tools sweeps the token.

:class:`Keeper` covers the owner's death, however it comes (SIGKILL included): a small process
(this file run as a script, standard library only) reads a pipe the owner holds. When the pipe
ends (the owner closed the tools, exited, or was killed) it sweeps the token and exits. Nothing
of it relies on Python code running in the owner.

What it cannot see: a process that drops the variable (``env -i``, a daemon that re-executes
itself with a clean environment, ``sudo`` resetting the environment) or runs as another user
that this one cannot read; and a keeper that is itself SIGKILLed covers nothing any more.
Linux only (``/proc``): elsewhere sweeping finds nothing and the process group is the limit.
"""
from __future__ import annotations

import itertools
import logging
import os
import secrets
import signal
import subprocess
import sys
import threading

VARIABLE = "RAIDER_SYNC_SHELL"
SWEEP_ROUNDS = 20  # rounds of find-and-signal before giving up on a fork race

log = logging.getLogger("raider_sync.shell")


def new_token() -> str:
    return secrets.token_hex(8)


def mark(token: str, n: int | str) -> str:
    """The value of :data:`VARIABLE` for shell ``n`` of ``token``."""
    return f"{token}.{n}"


def marked(prefix: str) -> list[int]:
    """The processes whose environment holds ``VARIABLE=<prefix>...`` (``prefix``: a token
    and a dot for every shell of a BashTools, or a whole mark followed by nothing else)."""
    needle = f"{VARIABLE}={prefix}".encode()
    exact = not prefix.endswith(".")
    me = os.getpid()
    found: list[int] = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as environ:
                data = environ.read()
        except OSError:  # gone meanwhile, or not ours to read
            continue
        at = data.find(needle)
        while at >= 0:
            starts = at == 0 or data[at - 1] == 0
            after = at + len(needle)
            if starts and (not exact or after == len(data) or data[after] == 0):
                found.append(int(name))
                break
            at = data.find(needle, at + 1)
    return found


def sweep(prefix: str, sig: int = signal.SIGKILL, rounds: int = SWEEP_ROUNDS) -> set[int]:
    """Signal every process marked ``prefix`` (see :func:`marked`), again and again until a
    round finds none (a child forked meanwhile is found by the next round), or ``rounds``
    rounds passed (a process that forks faster than it is found). Returns the processes
    signalled. With a signal other than SIGKILL one round is made: the processes may end as
    they like."""
    sent: set[int] = set()
    for _ in range(max(1, rounds)):
        pids = marked(prefix)
        for pid in pids:
            try:
                os.kill(pid, sig)
                sent.add(pid)
            except OSError:
                pass
        if sig != signal.SIGKILL or not pids:
            break
    return sent


class Keeper:
    """The keeper process of one token (see the module doc): started by :meth:`start`,
    ended by :meth:`close` (which also sweeps). Thread-safe; both may be called twice."""

    def __init__(self, token: str):
        self.token = token
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._pipe_w = -1
        self._closed = False

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def start(self) -> None:
        """Start the keeper if it is not running (blocks for a process start; raises OSError
        when it cannot start: the commands then run without it)."""
        with self._lock:
            if self._proc is not None or self._closed:
                return
            pipe_r, pipe_w = os.pipe()
            try:
                # its own session: a Ctrl-C at the terminal is the owner's, not the keeper's
                self._proc = subprocess.Popen(
                    [sys.executable, "-I", "-S", os.path.abspath(__file__), self.token],
                    stdin=pipe_r, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                    start_new_session=True, close_fds=True)
            except OSError:
                os.close(pipe_w)
                raise
            finally:
                os.close(pipe_r)
            self._pipe_w = pipe_w

    def close(self, timeout: float) -> None:
        """End the keeper: it sweeps the token and exits; waits up to ``timeout`` s for it."""
        with self._lock:
            self._closed = True
            proc, self._proc = self._proc, None
            pipe_w, self._pipe_w = self._pipe_w, -1
        if pipe_w >= 0:
            os.close(pipe_w)
        if proc is not None:
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


class Marks:
    """The marks of one BashTools' commands: one token, a number per command, and the
    :class:`Keeper` of the token, started with the first mark (by whichever thread starts
    a command first: :meth:`Keeper.start` starts it once)."""

    def __init__(self) -> None:
        self.token = new_token()
        self.keeper = Keeper(self.token)
        self._numbers = itertools.count(1)
        self.used = False  # a command was started: there may be marked processes to sweep

    def environment(self) -> tuple[str, dict[str, str]]:
        """A new mark and the environment of a command that carries it; starts the keeper
        with the first one."""
        if not self.used:
            self.used = True
            try:
                self.keeper.start()
            except OSError:
                log.warning("the shell keeper could not start: shells will not be stopped "
                            "if this process is killed", exc_info=True)
        value = mark(self.token, next(self._numbers))
        env = dict(os.environ)
        env[VARIABLE] = value
        return value, env

    def sweep_all(self) -> None:
        """SIGKILL what carries any mark of the token, once a command was started."""
        if self.used:
            sweep(self.token + ".")


def _keep(token: str) -> None:
    """The keeper's life: wait for the owner's end (the pipe on stdin), then sweep."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda *_: _finish(token))
    try:
        while os.read(0, 4096):
            pass
    except OSError:
        pass
    _finish(token)


def _finish(token: str) -> None:
    sweep(token + ".")
    os._exit(0)


if __name__ == "__main__":
    _keep(sys.argv[1])
