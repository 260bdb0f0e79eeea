"""A hub's reload and stop: which clients a new configuration keeps, replaces or removes,
why, and stopping servers in parallel.

:func:`plan` compares the clients a hub has with the servers of a new configuration (by
``fingerprint`` and status) and makes no change of its own: it neither starts nor stops.
:func:`stop_all` stops servers on one thread each and blocks until they are stopped, each
within its own ``kill_grace`` steps (and a drain, for the ones a reload retires); a stop that
takes longer is left to finish and logged. Neither raises: a failing stop is logged.
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from ..config import McpConfig, ServerSpec
from . import launch
from .server import McpServer

log = logging.getLogger("raider_sync.hub")

#: how long, beyond a server's own kill_grace steps, a stop may take before it is given up on
_STOP_MARGIN_S = 15.0


@dataclass(frozen=True)
class ReloadResult:
    """What :meth:`McpHub.reload` changed, by server name. A changed server (or a failed one
    that is retried) is in both ``stopped`` and ``started``. ``reasons`` says why each started
    or stopped server was: ``new``, ``removed``, ``changed: args, env (API_KEY)`` (names of
    variables and headers, never values), ``retried: it had failed``, ``restarted: it had
    stopped``."""
    kept: list[str] = field(default_factory=list)
    started: list[str] = field(default_factory=list)
    stopped: list[str] = field(default_factory=list)
    reasons: dict[str, str] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return bool(self.started or self.stopped)


@dataclass
class Plan:
    """What a reload does: ``clients`` are the hub's from now on (kept ones and new, not yet
    started ones, in the order of the configuration); ``retired`` are to be stopped."""
    clients: dict[str, McpServer]
    kept: list[str]
    started: list[str]
    retired: list[McpServer]
    reasons: dict[str, str]

    def stop_reasons(self) -> dict[str, str]:
        """The ``reason`` each retired client is stopped with, by name."""
        return {client.name: _retired_reason(self.reasons[client.name])
                for client in self.retired}

    def result(self) -> ReloadResult:
        return ReloadResult(self.kept, self.started, [client.name for client in self.retired],
                            self.reasons)


def plan(old: dict[str, McpServer], config: McpConfig,
         new_client: Callable[[ServerSpec], McpServer]) -> Plan:
    """The plan that takes the clients ``old`` (by name) to the servers of ``config``; a
    client is made with ``new_client(spec)`` for every server, and kept only if it is new."""
    clients: dict[str, McpServer] = {}
    kept, started, retired = [], [], []
    reasons: dict[str, str] = {}
    for spec in config.servers:
        existing = old.get(spec.name)
        candidate = new_client(spec)
        reason = _restart_reason(existing, candidate)
        if reason is None:
            assert existing is not None  # kept: only an existing client has no reason
            clients[spec.name] = existing
            kept.append(spec.name)
            continue
        clients[spec.name] = candidate
        started.append(spec.name)
        reasons[spec.name] = reason
        if existing is not None:
            retired.append(existing)
    for name, client in old.items():
        if name not in clients:
            retired.append(client)
            reasons[name] = "removed"
    return Plan(clients, kept, started, retired, reasons)


def _restart_reason(existing: McpServer | None, candidate: McpServer) -> str | None:
    """Why reload replaces ``existing`` with ``candidate`` (None: it keeps it)."""
    if existing is None:
        return "new"
    if existing.status == "failed":
        return "retried: it had failed"
    if existing.status == "stopped":
        return "restarted: it had stopped"
    if existing.status == "needs-auth":
        return "retried: it needed authorization"
    if existing.fingerprint == candidate.fingerprint:
        return None
    before = launch.fingerprint_parts(existing.spec, existing.base_env)
    after = launch.fingerprint_parts(candidate.spec, candidate.base_env)
    return f"changed: {launch.what_changed(before, after) or 'the prefix'}"


def _retired_reason(reason: str) -> str:
    """The ``reason`` a client replaced or removed by a reload is stopped with."""
    return "removed by a reload" if reason == "removed" else f"replaced by a reload; {reason}"


def stop_all(servers: list[Any], drain: float = 0.0,
             reasons: dict[str, str] | None = None) -> None:
    """Stop ``servers`` on one thread each and join them all; with ``drain`` (s), each
    after the calls already sent to it are answered (at most that long), stopped with its
    reason from ``reasons`` (by name)."""
    threads = []
    for server in servers:
        options = {}
        if reasons is not None:
            options = {"drain": drain, "reason": reasons.get(server.name)}
        thread = threading.Thread(target=_stop_one, args=(server, options),
                                  name=f"raider-{getattr(server, 'key', 'server')}-stop",
                                  daemon=True)
        thread.start()
        threads.append((server, thread))
    for server, thread in threads:
        thread.join(drain + 2 * getattr(server, "kill_grace", 0) + _STOP_MARGIN_S
                    + getattr(server, "startup_timeout_ms", 0) / 1000)
        if thread.is_alive():
            log.warning("stopping %s is taking long; left to finish", server.name)


def _stop_one(server: Any, options: dict) -> None:
    try:
        server.stop(**options)
    except Exception:  # noqa: BLE001 - one failing stop must not keep the others running
        log.exception("stopping %s failed", getattr(server, "name", server))
