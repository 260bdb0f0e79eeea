"""Where client registrations and tokens are kept between runs.

A record is a JSON object for one resource (the canonical MCP server URL)::

    {"issuer": "https://as.example", "client": {"client_id": ..., "client_secret": ...,
     "token_endpoint_auth_method": ..., "redirect_uris": [...]},
     "tokens": {"access_token": ..., "token_type": ..., "refresh_token": ..., "scope": ...,
                "expires_at": <unix seconds>}}

:class:`FileTokenStore` keeps one file per resource (named by the SHA-256 of the key) in a
directory of mode 0700 (``$RAIDER_SYNC_OAUTH_DIR``, else ``~/.config/raider_sync/oauth``), each
file mode 0600, written to a temporary file, fsynced, then renamed over the old one. A directory
or file others can read is refused with :class:`~raider_sync.errors.ConfigError` naming the
``chmod`` that fixes it.

A store may also have ``lock(key, timeout)``, a context manager that holds the record of
``key`` against other holders (raising TimeoutError after ``timeout`` seconds): OAuth holds it
while it refreshes a token, so that threads and processes sharing the store redeem a refresh
token once. :class:`FileTokenStore` locks a file beside the record (``fcntl.flock``), so the
lock spans processes; :class:`MemoryTokenStore` locks within the process.
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
import threading
import time
from contextlib import contextmanager
from typing import Iterator, Protocol, runtime_checkable

from ..errors import ConfigError


@runtime_checkable
class TokenStore(Protocol):
    """What keeps OAuth records: ``load`` returns None for an unknown key."""

    def load(self, key: str) -> dict | None: ...

    def save(self, key: str, record: dict) -> None: ...

    def delete(self, key: str) -> None: ...


class MemoryTokenStore:
    """Records in a dict, for one process (tests, short scripts)."""

    def __init__(self) -> None:
        self._records: dict[str, str] = {}
        self._lock = threading.Lock()
        self._holds: dict[str, threading.Lock] = {}

    def __repr__(self) -> str:
        return f"<MemoryTokenStore {len(self._records)} record(s)>"

    def load(self, key: str) -> dict | None:
        with self._lock:
            text = self._records.get(key)
        return None if text is None else json.loads(text)

    def save(self, key: str, record: dict) -> None:
        with self._lock:
            self._records[key] = json.dumps(record)

    def delete(self, key: str) -> None:
        with self._lock:
            self._records.pop(key, None)

    @contextmanager
    def lock(self, key: str, timeout: float = 30.0) -> Iterator[None]:
        """Hold ``key`` against other threads (blocks at most ``timeout`` s, then raises
        TimeoutError)."""
        with self._lock:
            hold = self._holds.setdefault(key, threading.Lock())
        if not hold.acquire(timeout=max(0.0, timeout)):
            raise TimeoutError(f"the record of {key} stayed locked for {timeout:g} s")
        try:
            yield
        finally:
            hold.release()


def default_dir() -> str:
    """``$RAIDER_SYNC_OAUTH_DIR``, else ``$XDG_CONFIG_HOME/raider_sync/oauth`` (``~/.config``)."""
    configured = os.environ.get("RAIDER_SYNC_OAUTH_DIR")
    if configured:
        return configured
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "raider_sync", "oauth")


class FileTokenStore:
    """One 0600 file per resource under a 0700 directory (see the module doc). ``load`` and
    ``save`` raise ConfigError for a directory or file with wrong permissions or an unreadable
    record, naming the path and the fix."""

    def __init__(self, directory: str | os.PathLike | None = None):
        self.directory = os.fspath(directory) if directory is not None else default_dir()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<FileTokenStore {self.directory!r}>"

    def path(self, key: str) -> str:
        return os.path.join(self.directory, hashlib.sha256(key.encode()).hexdigest() + ".json")

    def _check_dir(self, create: bool) -> bool:
        try:
            info = os.stat(self.directory)
        except FileNotFoundError:
            if not create:
                return False
            os.makedirs(self.directory, mode=0o700, exist_ok=True)
            os.chmod(self.directory, 0o700)
            return True
        if not stat.S_ISDIR(info.st_mode):
            raise ConfigError(f"OAuth token store {self.directory} is not a directory")
        if info.st_mode & 0o077:
            raise ConfigError(f"OAuth token store {self.directory} is readable by others "
                              f"(mode {stat.S_IMODE(info.st_mode):o}); fix it with: "
                              f"chmod 700 {self.directory}")
        return True

    def load(self, key: str) -> dict | None:
        with self._lock:
            if not self._check_dir(create=False):
                return None
            path = self.path(key)
            try:
                fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            except FileNotFoundError:
                return None
            except OSError as exc:
                raise ConfigError(f"cannot read OAuth record {path}: {exc.strerror}") from exc
            with os.fdopen(fd, "rb") as fh:
                mode = stat.S_IMODE(os.fstat(fh.fileno()).st_mode)
                if mode & 0o077:
                    raise ConfigError(f"OAuth record {path} is readable by others (mode "
                                      f"{mode:o}); fix it with: chmod 600 {path}")
                data = fh.read()
        try:
            record = json.loads(data)
        except ValueError as exc:
            raise ConfigError(f"OAuth record {path} is not JSON; delete it (raider-sync "
                              f"logout) to start over") from exc
        if not isinstance(record, dict) or record.get("key") not in (None, key):
            raise ConfigError(f"OAuth record {path} is not a record for {key}")
        record.pop("key", None)
        return record

    def save(self, key: str, record: dict) -> None:
        with self._lock:
            self._check_dir(create=True)
            path = self.path(key)
            temp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_EXCL, 0o600)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    json.dump({**record, "key": key}, fh)
                    fh.flush()
                    os.fsync(fh.fileno())
                os.replace(temp, path)
            except BaseException:
                try:
                    os.unlink(temp)
                except OSError:
                    pass
                raise

    def delete(self, key: str) -> None:
        """Remove the record of ``key`` and its lock file (nothing is left to refresh)."""
        with self._lock:
            for path in (self.path(key), self._lock_path(key)):
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    pass

    def _lock_path(self, key: str) -> str:
        return self.path(key)[:-len(".json")] + ".lock"

    @contextmanager
    def lock(self, key: str, timeout: float = 30.0) -> Iterator[None]:
        """Hold ``key`` against other threads and processes: an exclusive ``fcntl.flock`` on
        ``<record>.lock`` beside the record (mode 0600; kept until :meth:`delete`, since
        removing a lock file another process waits on would let two hold it). Blocks at most
        ``timeout`` s, then raises TimeoutError. Where there is no ``fcntl`` (Windows) it
        holds nothing."""
        try:
            import fcntl
        except ImportError:  # no flock: OAuth still serialises the threads of one object
            yield
            return
        with self._lock:
            self._check_dir(create=True)
        path = self._lock_path(key)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
        except OSError as exc:
            raise ConfigError(f"cannot open the OAuth lock file {path}: {exc.strerror}") from exc
        try:
            end = time.monotonic() + max(0.0, timeout)
            pause = 0.005
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    left = end - time.monotonic()
                    if left <= 0:
                        raise TimeoutError(f"{path} stayed locked for {timeout:g} s") from None
                    # flock has no timeout: poll, briefly at first (a refresh takes a moment)
                    time.sleep(min(pause, left))
                    pause = min(pause * 2, 0.1)
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
