"""The audit log: every decision of the gateway as one JSON line in a hash chain.

    {"seq": 7, "time": "2026-01-01T12:00:00.000+00:00", "pid": 4242, "decision": "refused",
     "reason": "unauthorized", "status": 401, "key": null, "server": null, "endpoint": null,
     "method": "POST", "rpc": "tools/call", "tool": "echo", "prev": "<sha256 hex of line 6>"}

:class:`AuditLog` subscribes to the relay's usage events (:class:`~.usage.Usage`), so it records
whatever the relay decides, refusals added later included: ``decision`` is ``allowed`` (the
request went upstream and the upstream answered, whatever its status), ``refused`` (the gateway
said no: ``reason`` is the error type of its answer, ``unauthorized``, ``not_found``,
``too_many_requests``, ...) or ``failed`` (``upstream_*`` and ``internal_error``: the gateway
could not get an answer). Argument values are recorded only when the operator opts in
(``"audit": {"arguments": true}``).

Each line carries ``prev``, the SHA-256 of the previous line's bytes (without its newline; the
first line's is :data:`GENESIS`), and ``seq``, its place in the file from 1, so :func:`verify`
finds an edited, removed or reordered line. A writer crashed in the middle of a line leaves a
torn last line; the next writer ends it with a newline and marks its own record
``"after_torn": true``, chained to the torn bytes, so the loss stays visible and the chain goes
on.

Several processes (``--workers``) share one file: each append takes an exclusive ``flock`` on
the file, reads the last line (only when another process wrote since its own last append),
and writes its line with one ``write`` on an ``O_APPEND`` descriptor. The kernel drops the
lock of a process that dies, so a crash leaves no stale lock, at most a torn line. ``flock``
needs a local file system (not NFS). Appending blocks on the lock and the write; nothing is
raised from :meth:`AuditLog.record` (a failing write is logged). Opening raises OSError.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import threading
from dataclasses import dataclass, field
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict

log = logging.getLogger("raider_sync.gateway")

GENESIS = "0" * 64  # the prev of the first line
_FIELDS = ("time", "pid", "decision", "reason", "status", "key", "server", "endpoint", "method",
           "rpc", "tool", "ended")
_FAILED = ("upstream_", "internal_error")
_TAIL = 64 * 1024  # read back from the end this much at a time to find the last lines


class AuditSettings(BaseModel):
    """The config's ``audit``: the file ``path`` and whether tool ``arguments`` are recorded
    (off by default: argument values may hold customers' data)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    path: str
    arguments: bool = False


def decision(event: dict) -> tuple[str, Optional[str]]:
    """``(decision, reason)`` of a usage event: allowed, refused (why) or failed (why)."""
    reason = event.get("error")
    if reason is None:
        return "allowed", None
    return ("failed" if str(reason).startswith(_FAILED) else "refused"), reason


def arguments_of(body: bytes) -> Any:
    """The ``params.arguments`` of a JSON-RPC ``tools/call`` body, or None."""
    try:
        message = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    params = message.get("params") if isinstance(message, dict) else None
    return params.get("arguments") if isinstance(params, dict) else None


def line_hash(line: bytes) -> str:
    """The SHA-256 hex of one line's bytes (its newline left out): the next line's ``prev``."""
    return hashlib.sha256(line).hexdigest()


class AuditLog:
    """Appends the audit records of usage events to ``path`` (created 0640 if missing).
    ``arguments``: record tool arguments. Thread-safe and safe across processes."""

    def __init__(self, path: str, *, arguments: bool = False):
        self.path, self.arguments = path, arguments
        self._fd: Optional[int] = os.open(
            path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o640)
        self._lock = threading.Lock()  # flock is per open file, not per thread
        self._known: Optional[tuple[int, int, str]] = None  # (size, seq, hash) after our write

    @classmethod
    def from_settings(cls, settings: Optional[AuditSettings]) -> Optional["AuditLog"]:
        """The log the config's ``audit`` asks for, or None without one. Raises OSError."""
        return None if settings is None else cls(settings.path, arguments=settings.arguments)

    def record(self, event: dict) -> None:
        """Append the record of one usage event (the subscriber of :class:`~.usage.Usage`)."""
        entry: dict[str, Any] = {f: event.get(f) for f in _FIELDS if f != "ended" or f in event}
        entry["pid"] = os.getpid()
        entry["decision"], entry["reason"] = decision(event)
        if self.arguments and "arguments" in event:
            entry["arguments"] = event["arguments"]
        with self._lock:
            if self._fd is None:
                return
            try:
                self._append(self._fd, entry)
            except (OSError, ValueError):
                log.exception("gateway: cannot write the audit log")

    def _append(self, fd: int, entry: dict) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            size = os.fstat(fd).st_size
            if self._known is not None and self._known[0] == size:
                seq, prev, torn = self._known[1], self._known[2], False
            else:  # another process wrote since, or this is our first line
                seq, prev, torn = _last(fd, size)
            lead = b""
            if torn:
                entry["after_torn"] = True
                lead = b"\n"
                seq += 1  # the torn line had its place
            record = {"seq": seq + 1, **entry, "prev": prev}
            line = json.dumps(record, separators=(",", ":"), default=str).encode()
            data = lead + line + b"\n"
            written = os.write(fd, data)
            while written < len(data):  # a short write: the rest, still under the lock
                written += os.write(fd, data[written:])
            self._known = (size + len(data), seq + 1, line_hash(line))
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)

    def close(self) -> None:
        """Close the file; later events are not recorded. May be called twice."""
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


def _last(fd: int, size: int) -> tuple[int, str, bool]:
    """``(seq, hash, torn)`` of the file's end: the last complete line's seq and the hash the
    next line chains to (of the torn bytes when the file ends without a newline)."""
    if size == 0:
        return 0, GENESIS, False
    start, data = size, b""
    while start > 0:  # back until two line ends are in hand (or the file's start)
        start = max(0, start - _TAIL)
        data = os.pread(fd, size - start, start)
        if data[:-1].count(b"\n") >= 2 or start == 0:
            break
    pieces = data.split(b"\n")
    if start > 0:
        pieces = pieces[1:]  # the first piece may begin mid-line
    torn = not data.endswith(b"\n")
    tail = pieces[-1] if torn else pieces[-2]  # the bytes the next line chains to
    whole = (pieces[-2] if len(pieces) >= 2 else None) if torn else tail
    seq = 0
    if whole:
        try:
            seq = int(json.loads(whole)["seq"])
        except (ValueError, KeyError, TypeError):
            seq = 0  # a damaged line: verify will say so; the chain still goes on from it
    return seq, line_hash(tail), torn


# -- verifying -----------------------------------------------------------------------------

@dataclass
class Verdict:
    """What :func:`verify` found: ``kind`` is ``intact``, ``broken``, ``torn`` (the last line
    is incomplete: a write cut short) or ``unreadable``; ``line`` the 1-based line at fault;
    ``records`` the lines that check out; ``head`` the hash of the last good line; ``notes``
    the torn lines that a later writer sealed."""

    kind: str
    message: str
    line: Optional[int] = None
    records: int = 0
    head: str = GENESIS
    notes: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return {"intact": 0, "unreadable": 2}.get(self.kind, 1)


def verify(path: str) -> Verdict:
    """Check the chain of the audit file at ``path``. Reads it once; never raises (an
    unreadable file is a Verdict of kind ``unreadable``)."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        return Verdict("unreadable", f"cannot read {path}: {exc.strerror or exc}")
    lines = raw.split(b"\n")
    ends_clean = lines[-1] == b""
    if ends_clean:
        lines.pop()
    prev, seq, records = GENESIS, 0, 0
    notes: list[str] = []
    torn_at: Optional[int] = None
    for number, line in enumerate(lines, 1):
        if number == len(lines) and not ends_clean:
            return Verdict("torn", f"line {number}: torn: the last line is incomplete (a write "
                           f"cut short, e.g. by a crash); the {records} lines before it are "
                           f"intact", number, records, prev, notes)
        record = _record(line)
        if record is None:
            if torn_at is not None:
                return _broken(number - 1, "not an audit record (edited or damaged)", records,
                               prev, notes)
            torn_at, prev, seq = number, line_hash(line), seq + 1
            continue
        if torn_at is not None:
            if not record.get("after_torn") or record["prev"] != prev:
                return _broken(torn_at, "not an audit record (edited or damaged)", records,
                               prev, notes)
            notes.append(f"line {torn_at}: a torn write (a crash), sealed by line {number}")
            torn_at = None
        elif record.get("after_torn"):  # the write was cut just before its newline
            notes.append(f"line {number - 1}: a write cut before its line end, sealed by "
                         f"line {number}")
        if record["seq"] != seq + 1:
            return _broken(number, f"out of sequence: seq {record['seq']} where {seq + 1} was "
                           f"expected (a line was removed or moved)", records, prev, notes)
        if record["prev"] != prev:
            if number == 1:
                return _broken(1, "its prev is not the genesis value", records, prev, notes)
            return _broken(number - 1, f"edited: its sha256 is not the prev line {number} "
                           f"records (or line {number}'s prev was edited)", records, prev, notes)
        prev, seq, records = line_hash(line), record["seq"], records + 1
    if torn_at is not None:
        return _broken(torn_at, "not an audit record (edited or damaged)", records, prev, notes)
    return Verdict("intact", f"intact: {records} records, head {prev}", None, records, prev,
                   notes)


def _record(line: bytes) -> Optional[dict]:
    try:
        record = json.loads(line)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(record, dict) or not isinstance(record.get("prev"), str) \
            or not isinstance(record.get("seq"), int) or isinstance(record.get("seq"), bool):
        return None
    return record


def _broken(line: int, problem: str, records: int, head: str, notes: list[str]) -> Verdict:
    return Verdict("broken", f"line {line}: {problem}", line, records, head, notes)


# -- the command line: raider-sync gateway audit verify FILE -------------------------------

def register(gateway_parser) -> None:
    """Add ``audit verify FILE`` under the ``gateway`` command's parser."""
    sub = gateway_parser.add_subparsers(dest="gateway_command", metavar="audit")
    audit = sub.add_parser("audit", help="the audit log").add_subparsers(
        dest="audit_command", metavar="verify")
    audit.required = True
    check = audit.add_parser("verify", help="check an audit file's hash chain (exit 0 intact, "
                             "1 broken or torn, 2 unreadable)")
    check.add_argument("file", metavar="FILE")
    check.add_argument("--json", action="store_true", help="print the verdict as JSON")
    check.set_defaults(run=run_verify)


def run_verify(args) -> int:
    """Print the verdict of ``args.file``; return its exit code."""
    verdict = verify(args.file)
    if getattr(args, "json", False):
        print(json.dumps({"file": args.file, **verdict.__dict__}))
    else:
        for note in verdict.notes:
            print(f"{args.file}: {note}")
        print(f"{args.file}: {verdict.message}")
    return verdict.exit_code
