"""What a task's client keeps to follow the task later: :class:`TaskHandle`.

    text = future.handle.to_json()              # save it (a file, a database)
    handle = TaskHandle.from_json(text)         # later, maybe in another process
    future = server.resume_task(handle)

A handle names the server (its key, and a fingerprint of where it is: the URL of an HTTP
server, the command and arguments of a stdio one), the wire, the task's id and times, and the
input keys already answered. It never holds headers, environment, tokens or arguments.
A stdio server's tasks live in its process: the handle records that process (``instance``,
the child's pid) and only a client of that same process may follow it. A handshake-era (v1)
task over HTTP lives in its HTTP session: the handle records a digest of the session's
``Mcp-Session-Id`` (``session``; the id itself is never kept), and only the client holding
that session may follow it.
"""
from __future__ import annotations

import json
from dataclasses import MISSING, asdict, dataclass, fields, replace
from typing import Any

#: the version of the saved form; another one is refused
FORMAT = 1
FORMAT_KEY = "raider_sync_task"


@dataclass(frozen=True)
class TaskHandle:
    """Enough to look at a task again. ``server``: the server's key (a hub routes by it);
    ``fingerprint``: its URL (HTTP) or command line (stdio); ``transport``; ``instance``:
    the stdio server's process id when the task began (None over HTTP); ``session``: a
    digest of the HTTP session a v1 task belongs to (None without one); ``era``: the wire,
    "v1" or "v2"; ``answered_keys``: input keys answered already (never answered twice)."""

    server: str
    fingerprint: str
    transport: str
    era: str
    protocol_version: str | None
    task_id: str
    tool: str | None = None
    created_at: str | None = None
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None
    answered_keys: tuple[str, ...] = ()
    instance: int | None = None
    session: str | None = None

    def answered(self, keys: Any) -> "TaskHandle":
        """This handle with ``keys`` added to the answered ones."""
        known = list(self.answered_keys)
        known.extend(k for k in keys if k not in known)
        return replace(self, answered_keys=tuple(known))

    def to_dict(self) -> dict:
        data = asdict(self)
        data["answered_keys"] = list(self.answered_keys)
        return {FORMAT_KEY: FORMAT, **data}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: Any) -> "TaskHandle":
        """The handle :meth:`to_dict` gave. Raises ValueError naming the field that is
        missing or wrong (an unknown format version among them)."""
        if not isinstance(data, dict):
            raise ValueError(f"a task handle is an object, not {type(data).__name__}")
        if data.get(FORMAT_KEY) != FORMAT:
            raise ValueError(f"{FORMAT_KEY}: version {data.get(FORMAT_KEY)!r} of a task handle "
                             f"is not one this raider_sync reads ({FORMAT})")
        values: dict[str, Any] = {}
        for f in fields(cls):
            if f.name not in data:
                if f.default is not MISSING:  # a field with a default
                    continue
                raise ValueError(f"task handle: {f.name} is missing")
            values[f.name] = data[f.name]
        for name in ("server", "fingerprint", "transport", "era", "task_id"):
            if not isinstance(values.get(name), str) or not values[name]:
                raise ValueError(f"task handle: {name} must be a non-empty string, not "
                                 f"{values.get(name)!r}")
        for name in ("ttl_ms", "poll_interval_ms", "instance"):
            value = values.get(name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise ValueError(f"task handle: {name} must be a whole number or null, not "
                                 f"{value!r}")
        session = values.get("session")
        if session is not None and (not isinstance(session, str) or not session):
            raise ValueError(f"task handle: session must be a non-empty string or null, not "
                             f"{session!r}")
        keys = values.get("answered_keys", [])
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            raise ValueError("task handle: answered_keys must be a list of strings")
        values["answered_keys"] = tuple(keys)
        return cls(**values)

    @classmethod
    def from_json(cls, text: str | bytes) -> "TaskHandle":
        """The handle :meth:`to_json` gave. Raises ValueError (a field named) for anything
        else."""
        try:
            data = json.loads(text)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"a task handle must be JSON: {exc}") from None
        return cls.from_dict(data)
