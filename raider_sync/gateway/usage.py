"""Usage accounting: the one event of each relayed request, and where it goes.

:class:`Usage` is the part of a :class:`~raider_sync.gateway.relay.Relay` that emits the event
a request built up (key, server, method, JSON-RPC method and tool, status, bytes) once its
answer is finished: stamped with the time and the duration, to the ``on_usage(event)``
callback, appended as one JSON line to the usage file (a single ``write`` on an ``O_APPEND``
file, so several processes may share it), and logged as that line at INFO on
``raider_sync.gateway.usage``. Parts of the gateway that act on what happened (the audit log)
:meth:`~Usage.subscribe` to the same events. Nobody reading, nothing is done.

Emitting blocks only on the file's write. Nothing is raised from it: a failing callback or
write is logged. Opening the file raises OSError.
"""
from __future__ import annotations

import json
import logging
import os
import threading
import time
from datetime import datetime, timezone
from typing import Callable, Optional

log = logging.getLogger("raider_sync.gateway")
usage_log = logging.getLogger("raider_sync.gateway.usage")

UsageCallback = Callable[[dict], None]


class Usage:
    """Where the events of one relay go: the callback ``on_usage()`` returns (asked at each
    event: the relay's may be set later; None: none) and the JSON-lines file at ``path``
    (None: none), opened now. Thread-safe."""

    def __init__(self, path: Optional[str],
                 on_usage: Callable[[], Optional[UsageCallback]] = lambda: None):
        self._on_usage = on_usage
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC,
                           0o640) if path else None
        self._lock = threading.Lock()
        #: (hook, wanted, arguments): who else gets each event, whether it wants one now,
        #: and whether it gets the tool arguments
        self._subscribers: list[tuple[UsageCallback, Callable[[], bool], bool]] = []
        self.wants_arguments = False  # a subscriber records the tool arguments

    def subscribe(self, hook: UsageCallback, wanted: Callable[[], bool] = lambda: True, *,
                  arguments: bool = False) -> None:
        """Give every finished event to ``hook`` too (the gateway's metrics, tracing and
        audit), after the file and ``on_usage``; ``wanted()`` says whether it needs events now
        (asked at each request); ``arguments``: it wants the event's ``arguments`` (a
        tools/call's argument values), which never reach the usage file, the log or
        ``on_usage``. A hook that raises is logged. Subscribe before the relay serves."""
        self._subscribers.append((hook, wanted, arguments))
        self.wants_arguments = self.wants_arguments or arguments

    def observed(self) -> bool:
        """Whether anyone reads usage events: a callback, the usage file, the usage log or a
        subscriber that wants them now."""
        return self._on_usage() is not None or self._fd is not None \
            or usage_log.isEnabledFor(logging.INFO) \
            or any(wanted() for _, wanted, _ in self._subscribers)

    def emit(self, event: dict, started: float) -> None:
        """Send ``event`` of a request that began at ``started`` (``time.perf_counter()``)."""
        if not self.observed():
            return
        event["duration_ms"] = round((time.perf_counter() - started) * 1000, 3)
        event = {"time": datetime.now(timezone.utc).isoformat(timespec="milliseconds"), **event}
        full, event = event, ({k: v for k, v in event.items() if k != "arguments"}
                              if "arguments" in event else event)
        text = json.dumps(event) if self._fd is not None \
            or usage_log.isEnabledFor(logging.INFO) else None
        if text is not None:
            usage_log.info(text, extra={"usage": event})  # one JSON line, for log pipelines
        if text is not None and self._fd is not None:  # the file may be opened meanwhile
            line = (text + "\n").encode()
            with self._lock:
                try:
                    if self._fd is not None:
                        os.write(self._fd, line)
                except OSError:
                    log.exception("gateway: cannot write the usage log")
        callback = self._on_usage()
        if callback is not None:
            try:
                callback(event)
            except Exception:
                log.exception("gateway: the usage callback failed")
        for hook, _, arguments in self._subscribers:
            try:
                hook(full if arguments else event)
            except Exception:
                log.exception("gateway: a usage subscriber failed")

    def close(self) -> None:
        """Close the usage file; the events that follow go to the callback and the log only."""
        with self._lock:  # a stream finishing now must not write to a reused fd
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
