"""Prometheus metrics of the relay, served at ``GET /metrics`` to the operator's metrics token.

Enabled by the config's ``metrics`` entry (``{"env": "VAR"}`` or ``{"sha256": "<hex>"}``: the
operator's token, never a customer key) with ``prometheus-client`` installed (the ``gateway``
extra). :class:`Metrics` subscribes to the relay's usage events, so every request is counted
once, when its answer is finished:

- ``raider_gateway_requests_total{key, server, method, code}``: ``method`` is ``DELETE``,
  ``GET``, ``POST`` or ``(other)``
- ``raider_gateway_tool_calls_total{key, server, tool}``
- ``raider_gateway_errors_total{key, server, tool, type}``: the relay's own error type
  (``upstream_timeout``, ``session_not_found``, ...), ``http_<code>`` for an upstream's answer of
  400 or more, ``upstream_broken`` for a stream the upstream broke off
- ``raider_gateway_limit_refusals_total{key, server, type}``: the relay's own 429s
- ``raider_gateway_request_duration_seconds{key, server, tool}``: every relayed request but a
  ``GET`` stream, until its answer ended
- ``raider_gateway_open_streams{key, server}``: SSE answers being relayed now

The labels are bounded: ``key`` and ``server`` are ids from the config (``""`` where the request
did not get that far); ``tool`` is a name the upstream itself listed in a ``tools/list`` answer
the gateway relayed, at most ``tools_per_server`` names per server (100 by default), and
``(unlisted)`` for any other name a client sends, so a client cannot make up labels.

Under ``--workers`` each worker writes its values to ``PROMETHEUS_MULTIPROC_DIR`` (which
:mod:`raider_sync.gateway.workers` makes and removes) and a scrape of any worker sums them all.
Nothing here blocks but on a lock held for a dict update; nothing raises into a request.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import re
import threading
from typing import Any, Callable, Iterable, Mapping, Optional

from pydantic import BaseModel, ConfigDict, Field

from ..client.telemetry import DURATION_BUCKETS
from ..errors import ConfigError

log = logging.getLogger("raider_sync.gateway")

PATH = "/metrics"
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
UNLISTED = "(unlisted)"
#: the HTTP methods the relay serves; any other (a client may send any token) is counted as
#: OTHER_METHOD, so a client cannot make up labels
METHODS = frozenset(("DELETE", "GET", "POST"))
OTHER_METHOD = "(other)"
TOOL_NAME_LIMIT = 128          # MCP's longest tool name
_LIST_LIMIT = 1024 * 1024      # bytes of a tools/list answer read for its names
_HEX64 = re.compile(r"[0-9a-fA-F]{64}\Z")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class MetricsSettings(BaseModel):
    """The config's ``metrics`` entry: the operator's token by environment variable name
    (``env``) or SHA-256 hex digest (``sha256``), and the most tool names kept per server."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    env: Optional[str] = None
    sha256: Optional[str] = None
    tools_per_server: int = Field(default=100, gt=0, le=10000)


def token_digest(settings: Optional[MetricsSettings], env: Mapping[str, str],
                 keys: Iterable[tuple[str, bytes, Any]], problems: list[str]) -> Optional[bytes]:
    """The SHA-256 of the metrics token the config names (None without ``metrics``); what is
    wrong is added to ``problems`` under ``metrics.<field>``: not exactly one of env and
    sha256, an unset variable, or a token that is also a customer key."""
    if settings is None:
        return None
    if (settings.env is None) == (settings.sha256 is None):
        problems.append("metrics.env: give the metrics token by exactly one of env or sha256")
        return None
    if settings.sha256 is not None:
        if not _HEX64.match(settings.sha256):
            problems.append("metrics.sha256: expected 64 hex digits (the SHA-256 of the token)")
            return None
        digest = bytes.fromhex(settings.sha256)
    else:
        assert settings.env is not None
        if not _ENV_NAME.match(settings.env):
            problems.append("metrics.env: not an environment variable name")
            return None
        value = env.get(settings.env, "")
        if not value:
            problems.append(f"metrics.env: environment variable {settings.env} is not set")
            return None
        digest = hashlib.sha256(value.encode("utf-8")).digest()
    for key_id, key_digest, _ in keys:
        if hmac.compare_digest(digest, key_digest):
            problems.append(f"metrics: the metrics token is also the key of {key_id!r}; "
                            "give the operator a token of its own")
            return None
    return digest


class Metrics:
    """The relay's metrics, in a registry of their own (several relays may live in one
    process), or in the files of ``$PROMETHEUS_MULTIPROC_DIR`` when it is set. Raises
    ImportError without prometheus-client. Thread-safe."""

    def __init__(self, token_digest: bytes, tools_per_server: int = 100):
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self._digest = token_digest
        self._tools_cap = tools_per_server
        self._tools: dict[str, frozenset] = {}
        self._lock = threading.Lock()
        self._multiproc = os.environ.get(MULTIPROC_ENV) or None
        self.registry = CollectorRegistry()
        # in multiprocess mode the values live in files and a scrape reads them all; a
        # registry holding this process's own values would report them twice
        registry = None if self._multiproc else self.registry
        self._requests = Counter("raider_gateway_requests", "Requests answered by the gateway.",
                                 ["key", "server", "method", "code"], registry=registry)
        self._tool_calls = Counter("raider_gateway_tool_calls", "tools/call requests.",
                                   ["key", "server", "tool"], registry=registry)
        self._errors = Counter("raider_gateway_errors",
                               "Requests that ended in an error, by its type.",
                               ["key", "server", "tool", "type"], registry=registry)
        self._refusals = Counter("raider_gateway_limit_refusals",
                                 "Requests the gateway refused with 429 by a per-key limit.",
                                 ["key", "server", "type"], registry=registry)
        self._duration = Histogram("raider_gateway_request_duration_seconds",
                                   "Time from the request until its answer ended (GET streams "
                                   "excluded).", ["key", "server", "tool"],
                                   buckets=DURATION_BUCKETS, registry=registry)
        self._streams = Gauge("raider_gateway_open_streams", "SSE answers being relayed.",
                              ["key", "server"], multiprocess_mode="livesum", registry=registry)
        # a labelled child per label values, kept: prometheus-client's labels() checks and
        # locks at each call, a sixth of what counting a request cost; its children live as
        # long as the metric, so one kept here is the one it would return
        self._children: dict[tuple, Any] = {}

    def _child(self, metric: Any, *values: str) -> Any:
        """``metric.labels(*values)``, from :attr:`_children` after the first time."""
        found = self._children.get((metric, values))
        if found is None:
            found = self._children[(metric, values)] = metric.labels(*values)
        return found

    @classmethod
    def of(cls, config: Any) -> Optional["Metrics"]:
        """The metrics of a relay for ``config`` (a GatewayConfig) when it has a metrics
        token, else None. Raises ConfigError when prometheus-client is missing."""
        digest = config.metrics_token_digest()
        if digest is None:
            return None
        try:
            return cls(digest, config.metrics.tools_per_server if config.metrics else 100)
        except ImportError as exc:
            raise ConfigError("metrics: prometheus-client is not installed "
                              "(pip install 'raider_sync[gateway]')") from exc

    # -- the endpoint ------------------------------------------------------------------------

    def allowed(self, environ: dict) -> bool:
        """Whether the request presents the metrics token (``Authorization: Bearer``),
        compared in constant time."""
        scheme, _, value = environ.get("HTTP_AUTHORIZATION", "").strip().partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            return False
        digest = hashlib.sha256(value.strip().encode("latin-1", "replace")).digest()
        return hmac.compare_digest(digest, self._digest)

    def exposition(self) -> tuple[bytes, str]:
        """``(body, content type)`` of a scrape: this process's values, or under several
        workers every worker's, summed."""
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        registry = self.registry
        if self._multiproc:
            from prometheus_client import CollectorRegistry
            from prometheus_client.multiprocess import MultiProcessCollector

            registry = CollectorRegistry()
            MultiProcessCollector(registry, path=self._multiproc)
        return generate_latest(registry), CONTENT_TYPE_LATEST

    # -- events ------------------------------------------------------------------------------

    def record(self, event: dict) -> None:
        """Count one finished request from its usage event (a :class:`Usage` subscriber)."""
        key, server = event.get("key") or "", event.get("server") or ""
        status = event.get("status") or 0
        method = event.get("method") or ""
        method = method if method in METHODS else OTHER_METHOD
        self._child(self._requests, key, server, method, str(status)).inc()
        tool = self.tool_label(server, event.get("tool")) \
            if event.get("rpc") == "tools/call" else ""
        if tool:
            self._child(self._tool_calls, key, server, tool).inc()
        error = event.get("error") or (f"http_{status}" if status >= 400 else None) \
            or ("upstream_broken" if event.get("ended") == "upstream" else None)
        if error:
            self._child(self._errors, key, server, tool, error).inc()
        if status == 429 and event.get("error"):
            self._child(self._refusals, key, server, event["error"]).inc()
        if server and event.get("method") != "GET" and "duration_ms" in event:
            self._child(self._duration, key, server, tool).observe(event["duration_ms"] / 1000)

    def streaming(self, event: dict, emit: Callable[[dict, float], None]
                  ) -> Callable[[dict, float], None]:
        """Count an SSE answer open from now until the returned ``emit`` is called (once, by
        the stream's close); that calls ``emit``."""
        gauge = self._child(self._streams, event.get("key") or "", event.get("server") or "")
        gauge.inc()

        def closed(finished: dict, started: float) -> None:
            gauge.dec()
            emit(finished, started)
        return closed

    # -- tool names --------------------------------------------------------------------------

    def tool_label(self, server: str, tool: Optional[str]) -> str:
        """``tool`` when the upstream of ``server`` listed it, else :data:`UNLISTED`."""
        return tool if tool and tool in self._tools.get(server, ()) else UNLISTED

    @staticmethod
    def readable(headers: Iterable[tuple[str, str]]) -> bool:
        """Whether an answer with these headers can be read for tool names: not compressed
        (the relay never opens a compressed body)."""
        return all(k.lower() != "content-encoding" or v.strip().lower() in ("", "identity")
                   for k, v in headers)

    def learn_tools(self, server: str, body: bytes) -> None:
        """Keep the tool names of a JSON ``tools/list`` answer (or a batch holding one)."""
        try:
            message = json.loads(body)
        except (ValueError, UnicodeDecodeError, RecursionError):
            return
        for one in message if isinstance(message, list) else [message]:
            result = one.get("result") if isinstance(one, dict) else None
            tools = result.get("tools") if isinstance(result, dict) else None
            if isinstance(tools, list):
                self._add(server, [t.get("name") for t in tools if isinstance(t, dict)])

    def tool_list_reader(self, server: str) -> Callable[[bytes], None]:
        """A tap for the chunks of a ``tools/list`` answer sent as SSE: the names in each
        complete event are kept; the first :data:`_LIST_LIMIT` bytes are read, no more."""
        pending = bytearray()
        read = [0]

        def tap(chunk: bytes) -> None:
            try:
                read_events(chunk)
            except Exception:  # noqa: BLE001 - the metrics must not break a relayed answer
                log.exception("gateway: reading tool names failed")

        def read_events(chunk: bytes) -> None:
            if read[0] > _LIST_LIMIT:
                return
            read[0] += len(chunk)
            pending.extend(chunk.replace(b"\r\n", b"\n"))
            while b"\n\n" in pending:
                event, _, rest = bytes(pending).partition(b"\n\n")
                pending[:] = rest
                data = b"\n".join(line[5:].lstrip() for line in event.split(b"\n")
                                  if line.startswith(b"data:"))
                if data:
                    self.learn_tools(server, data)
        return tap

    def _add(self, server: str, names: list) -> None:
        fresh = [n for n in names if isinstance(n, str) and 0 < len(n) <= TOOL_NAME_LIMIT]
        with self._lock:
            known = self._tools.get(server, frozenset())
            room = self._tools_cap - len(known)
            new = [n for n in dict.fromkeys(fresh) if n not in known][:max(0, room)]
            if new:  # a new set in one assignment: tool_label reads without the lock
                self._tools[server] = known | frozenset(new)


def mark_dead(pid: int) -> None:
    """Remove what a worker that exited left in ``$PROMETHEUS_MULTIPROC_DIR`` of its live
    gauges (gunicorn's ``child_exit`` hook); nothing without that directory."""
    path = os.environ.get(MULTIPROC_ENV)
    if not path:
        return
    try:
        from prometheus_client import multiprocess
    except ImportError:  # no metrics were written
        return
    multiprocess.mark_process_dead(pid, path)
