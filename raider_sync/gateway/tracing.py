"""OpenTelemetry spans of relayed requests, following the MCP semantic conventions. Optional.

With ``opentelemetry-api`` installed (the ``otel`` extra), each request the relay sends
upstream gets one CLIENT span named ``{mcp.method.name} {tool}`` (the HTTP method for a
request that is not one JSON-RPC call, a GET stream), child of the client's own span when the
client sent a ``traceparent`` header, and the span's ``traceparent`` (and ``tracestate``) goes
upstream as headers. The span ends when the answer is finished (a stream: when it closes).
The attributes are those of :mod:`raider_sync.client.telemetry`: ``mcp.method.name``,
``gen_ai.tool.name`` and ``gen_ai.operation.name`` (tools/call), ``mcp.protocol.version``,
``mcp.session.id`` (the upstream's), ``network.transport``, ``network.protocol.name``,
``server.address``/``server.port`` (the upstream's), ``error.type`` on failure (the relay's
error type, or the upstream's HTTP status); plus ``http.response.status_code`` and the
gateway's ``raider_sync.gateway.key`` and ``raider_sync.gateway.server``. The usage event of
a traced request carries ``trace_id`` and ``span_id``.

Spans go to the tracer provider given, or the global one. While the global provider is the
API's placeholder (no SDK configured) no span is made: a ``traceparent`` the client sent is
passed on unchanged. Without OpenTelemetry installed nothing here costs anything.
"""
from __future__ import annotations

import logging
import threading
from typing import Any, Optional
from urllib.parse import urlsplit

from .._version import __version__
from ..client.telemetry import AVAILABLE, _nothing_configured
from ..errors import ConfigError

try:  # once, at import: the no-op path is a None check per request
    from opentelemetry import propagate as _propagate
    from opentelemetry import trace as _trace
except ImportError:  # pragma: no cover - exercised where the extra is not installed
    _trace = _propagate = None  # type: ignore[assignment]

log = logging.getLogger("raider_sync.gateway")

_CARRIED = {"HTTP_TRACEPARENT": "traceparent", "HTTP_TRACESTATE": "tracestate"}


class Tracing:
    """Where the relay's spans go: ``tracer_provider`` (default: the global one). Raises
    ConfigError when opentelemetry-api is not installed. Thread-safe."""

    def __init__(self, *, tracer_provider: Any = None):
        if not AVAILABLE or _trace is None:
            raise ConfigError("gateway tracing: opentelemetry-api is not installed "
                              "(pip install 'raider_sync[otel]')")
        self.global_provider = tracer_provider is None
        self.tracer = _trace.get_tracer("raider_sync.gateway", __version__,
                                        tracer_provider=tracer_provider)
        self._spans: dict[str, Any] = {}
        self._lock = threading.Lock()

    def active(self) -> bool:
        """Whether spans are made (an SDK is configured, or a provider was given)."""
        return not (self.global_provider and _nothing_configured())

    def start(self, environ: dict, event: dict, server: str, url: str, headers: dict) -> None:
        """Start the span of a request about to go to ``url``; put its context in ``headers``
        (changed in place) and its ids in ``event``. Never raises: a failure is logged."""
        try:
            carrier = {name: environ[key] for key, name in _CARRIED.items() if key in environ}
            parent = _propagate.extract(carrier) if carrier else None
            if not self.active():
                headers.update(carrier)  # the client's context, passed on as it came
                return
            method = event.get("rpc")
            attributes: dict[str, Any] = {"network.transport": "tcp",
                                          "network.protocol.name": "http",
                                          "raider_sync.gateway.server": server}
            if event.get("key"):
                attributes["raider_sync.gateway.key"] = event["key"]
            if method:
                attributes["mcp.method.name"] = method
            if method == "tools/call" and event.get("tool"):
                attributes["gen_ai.tool.name"] = event["tool"]
                attributes["gen_ai.operation.name"] = "execute_tool"
            for name, value in headers.items():
                lowered = name.lower()
                if lowered == "mcp-protocol-version":
                    attributes["mcp.protocol.version"] = value
                elif lowered == "mcp-session-id":
                    attributes["mcp.session.id"] = value
            parts = urlsplit(url)
            if parts.hostname:
                attributes["server.address"] = parts.hostname
                attributes["server.port"] = parts.port or (443 if parts.scheme == "https" else 80)
            name = method or event.get("method") or "relay"
            if method == "tools/call" and event.get("tool"):
                name = f"{method} {event['tool']}"
            span = self.tracer.start_span(name, context=parent, kind=_trace.SpanKind.CLIENT,
                                          attributes=attributes)
            _propagate.inject(headers, context=_trace.set_span_in_context(span))
            context = span.get_span_context()
            event["trace_id"] = _trace.format_trace_id(context.trace_id)
            event["span_id"] = _trace.format_span_id(context.span_id)
            with self._lock:
                self._spans[event["span_id"]] = span
        except Exception:  # noqa: BLE001 - tracing must not break a request
            log.exception("gateway: tracing a request failed")

    def finish(self, event: dict) -> None:
        """End the span of a finished request from its usage event (a :class:`Usage`
        subscriber); nothing for a request without one."""
        with self._lock:
            span = self._spans.pop(event.get("span_id") or "", None)
        if span is None:
            return
        try:
            status = event.get("status") or 0
            span.set_attribute("http.response.status_code", status)
            error = event.get("error") or (str(status) if status >= 400 else None) \
                or ("upstream_broken" if event.get("ended") == "upstream" else None)
            if error:
                span.set_attribute("error.type", error)
                span.set_status(_trace.Status(_trace.StatusCode.ERROR, error))
        finally:
            span.end()


def resolve(option: Any) -> Optional[Tracing]:
    """The Tracing a ``Relay(tracing=...)`` option means: None (the default) is the global
    provider when opentelemetry-api is installed, else nothing; False is nothing; a
    :class:`Tracing` is itself."""
    if option is None:
        return Tracing() if AVAILABLE else None
    if option is False:
        return None
    if isinstance(option, Tracing):
        return option
    raise ConfigError(f"tracing: expected None, False or a Tracing, not {type(option).__name__}")
