"""Helpers of the shell tests (polling with a bound, process checks)."""
from __future__ import annotations

import time

import psutil


def gone(pid: int) -> bool:
    """True when ``pid`` is no longer running (a zombie waiting for init counts as gone)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def wait_until(predicate, timeout: float = 5.0, interval: float = 0.02) -> bool:
    """Poll ``predicate`` until it is true or ``timeout`` s passed (bounded)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())


def wait_for_file(path, timeout: float = 5.0) -> str:
    """The content of ``path`` once it exists and is not empty (bounded)."""
    assert wait_until(lambda: path.exists() and path.read_text().strip(), timeout), path
    return path.read_text()
