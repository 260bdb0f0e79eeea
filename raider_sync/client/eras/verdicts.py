"""The era verdicts of ``protocol: auto``, remembered across processes.

    keep(fingerprint, "legacy")     # this server speaks the handshake era alone
    recall(fingerprint)             # "legacy", "modern", or None: probe it
    keep(fingerprint, None)         # forget it (it changed era)

A verdict is kept in memory for the life of the process and in a small file of the user's
cache folder, so that the next process (each ``raider-sync call``, say) starts the server
without probing it again::

    $RAIDER_SYNC_ERA_CACHE, else $XDG_CACHE_HOME/raider_sync/eras, else ~/.cache/raider_sync/eras

``RAIDER_SYNC_ERA_CACHE=off`` (or ``0``, ``false``, ``no``) keeps verdicts in memory only.
One file per server, named by a digest of its fingerprint (which shows no secret), written to a
temporary file and renamed over the old one: processes starting servers at once never read
half a file. A file that is not JSON, not a verdict, unreadable or older than
:data:`MAX_AGE` counts as none; a folder that cannot be written leaves the verdict in memory.
Nothing here raises; reads and writes block only on the local disk.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import threading
import time

ENV = "RAIDER_SYNC_ERA_CACHE"
OFF = ("off", "0", "false", "no")
ERAS = ("modern", "legacy")
#: seconds a verdict on disk is trusted: a server may be upgraded in place (``npx pkg@latest``)
MAX_AGE = 7 * 24 * 3600.0

log = logging.getLogger("raider_sync.eras")

_memory: dict[tuple[str | None, str], str] = {}
_lock = threading.Lock()


def folder() -> str | None:
    """Where verdicts are kept (see the module doc); None when the cache is turned off."""
    configured = os.environ.get(ENV)
    if configured is not None:
        configured = configured.strip()
        if not configured or configured.lower() in OFF:
            return None
        return os.path.expanduser(configured)
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):  # the XDG rule: a relative path is ignored
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "raider_sync", "eras")


def _path(where: str, fingerprint: str) -> str:
    return os.path.join(where, hashlib.sha256(fingerprint.encode()).hexdigest()[:32] + ".json")


def recall(fingerprint: str) -> str | None:
    """The era last found for the server with ``fingerprint``, by this process or another
    ("modern", "legacy"), else None."""
    where = folder()
    if where is not None:
        era = _read(_path(where, fingerprint), fingerprint)
        if era is not None:
            return era
    with _lock:  # what this process found, where the file could not be written
        return _memory.get((where, fingerprint))


def keep(fingerprint: str, era: str | None) -> None:
    """Remember ``era`` ("modern", "legacy") for the server with ``fingerprint``; None
    forgets it."""
    where = folder()
    with _lock:
        if era is None:
            _memory.pop((where, fingerprint), None)
        else:
            _memory[(where, fingerprint)] = era
    if where is None:
        return
    path = _path(where, fingerprint)
    try:
        if era is None:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            return
        os.makedirs(where, exist_ok=True)
        _write(path, {"fingerprint": fingerprint, "era": era, "at": time.time()})
    except OSError as exc:  # a read-only home, a full disk: the verdict stays in memory
        log.debug("the era verdict could not be kept in %s: %s", where, exc)


def _read(path: str, fingerprint: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            record = json.load(fh)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:  # unreadable or corrupt: probe, and write it anew
        log.debug("ignored the era verdict in %s: %s", path, exc)
        return None
    if not isinstance(record, dict) or record.get("fingerprint") != fingerprint:
        return None
    era, at = record.get("era"), record.get("at")
    if era not in ERAS or isinstance(at, bool) or not isinstance(at, (int, float)):
        return None
    if not 0 <= time.time() - at <= MAX_AGE:  # wall clock: the age outlives the process
        return None
    return era


def _write(path: str, record: dict) -> None:
    """``record`` as the whole of ``path``, atomically (a temporary file renamed over it)."""
    fd, temp = tempfile.mkstemp(prefix=".verdict-", suffix=".tmp", dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(record, fh)
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
