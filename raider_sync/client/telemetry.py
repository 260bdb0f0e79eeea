"""OpenTelemetry for MCP requests, following the MCP semantic conventions. Optional.

With ``opentelemetry-api`` installed (the ``otel`` extra), every request an :class:`McpServer`
sends gets one CLIENT span named ``{mcp.method.name} {target}`` (the tool or prompt name, when
there is one), the ``mcp.client.operation.duration`` histogram gets its duration in seconds,
and the span's context travels to the server as ``traceparent``/``tracestate`` in the
request's ``params._meta`` (initialize and the list calls included). Spans and metrics go to
the providers the application configured (the global ones by default): without an SDK they
are the API's no-ops.

Attributes: ``mcp.method.name``, ``jsonrpc.request.id``, ``mcp.session.id`` (Streamable
HTTP), ``mcp.protocol.version``, ``network.transport`` (``pipe`` for stdio, ``tcp`` for HTTP),
``network.protocol.name``, ``server.address``/``server.port``, ``gen_ai.operation.name`` and
``gen_ai.tool.name`` (tools/call), ``gen_ai.prompt.name`` (prompts/get), ``mcp.resource.uri``
(resource requests), and on failure ``error.type``: the JSON-RPC error code, ``tool_error`` for a
result with ``isError``, else the exception's class name (``ToolTimeout``, ...).
Arguments and results (``gen_ai.tool.call.arguments``/``gen_ai.tool.call.result``) are
recorded only with ``capture_content=True``.

Without OpenTelemetry installed nothing here costs anything: the import is tried once, and a
server's session gets no observer at all.
"""
from __future__ import annotations

import contextvars
import json
import logging
import time
from concurrent.futures import Future
from typing import Any, Callable, Optional
from urllib.parse import urlsplit

from .._version import __version__
from ..errors import ConfigError, McpError

try:  # once, at import: the no-op path is a None check per request
    from opentelemetry import context as _context
    from opentelemetry import metrics as _metrics
    from opentelemetry import propagate as _propagate
    from opentelemetry import trace as _trace
except ImportError:  # pragma: no cover - exercised where the extra is not installed
    # None without the extra: AVAILABLE (and a None check) guards every use
    _trace = _metrics = _propagate = _context = None  # type: ignore[assignment]

#: whether opentelemetry-api is installed
AVAILABLE = _trace is not None
#: the bucket boundaries the conventions advise for mcp.client.operation.duration (seconds)
DURATION_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)
_TARGETS = {"tools/call": "gen_ai.tool.name", "prompts/get": "gen_ai.prompt.name"}
_CONTENT_LIMIT = 8192  # characters of arguments or result kept on a span

log = logging.getLogger("raider_sync.telemetry")

Observer = Callable[[str, dict, Any], Optional[Callable[[Future], None]]]


class Telemetry:
    """Where an :class:`McpServer`'s spans and measurements go.

    ``tracer_provider``/``meter_provider`` default to the global ones; ``capture_content``
    records tool arguments and results on the spans (they may hold personal data: off by
    default). Raises ConfigError when opentelemetry-api is not installed.
    """

    def __init__(self, *, tracer_provider: Any = None, meter_provider: Any = None,
                 capture_content: bool = False):
        if not AVAILABLE:
            raise ConfigError("telemetry: opentelemetry-api is not installed "
                              "(pip install 'raider_sync[otel]')")
        self.capture_content = capture_content
        self.global_providers = tracer_provider is None and meter_provider is None
        if self.global_providers:  # providers named by OTEL_PYTHON_* variables load now
            _trace.get_tracer_provider()
            _metrics.get_meter_provider()
        self.tracer = _trace.get_tracer("raider_sync", __version__,
                                        tracer_provider=tracer_provider)
        meter = _metrics.get_meter("raider_sync", __version__, meter_provider=meter_provider)
        self.duration = meter.create_histogram(
            "mcp.client.operation.duration", unit="s",
            description="The duration of the MCP request as observed on the client, from "
                        "the time it was sent until the response was received.",
            explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS))
        self.retry_counter = meter.create_counter(
            "raider_sync.client.retries", unit="{request}",
            description="Requests sent again after the connection to the server broke.")

    def retried(self, server: Any, method: str, tool: str) -> None:
        """Count one request sent again (see :mod:`raider_sync.client.retries`)."""
        try:
            self.retry_counter.add(1, {"mcp.method.name": method, "gen_ai.tool.name": tool,
                                       "server.address": server.name})
        except Exception:  # noqa: BLE001 - telemetry must not break a request
            log.exception("telemetry for a retry failed")

    def observer(self, server: Any) -> Observer:
        """The hook a session calls for each request it sends (see :meth:`observe`). A
        failure of the telemetry is logged; it never fails the request."""
        def observe(method: str, params: dict,
                    request_id: Any) -> Optional[Callable[[Future], None]]:
            if self.global_providers and _idle():
                return None  # no SDK and no trace context: nothing to make or pass on
            try:
                finish = self.observe(server, method, params, request_id)
            except Exception:  # noqa: BLE001 - telemetry must not break a request
                log.exception("telemetry for %s failed", method)
                return None
            if finish is _ignore:
                return None  # no span was started: nothing to end when the request is done

            def guarded(future: Future) -> None:
                try:
                    finish(future)
                except Exception:  # noqa: BLE001
                    log.exception("telemetry for %s failed", method)
            return guarded
        return observe

    def observe(self, server: Any, method: str, params: dict,
                request_id: Any) -> Callable[[Future], None]:
        """Start the span of one request of ``server`` and put its context in
        ``params["_meta"]`` (changed in place); returns the callback that ends the span and
        records the duration when the request's future is done.

        While the global providers are the API's placeholders (no SDK configured), no span
        is made: only a context the application already carries is passed on."""
        if self.global_providers and _nothing_configured():
            _pass_on(params)
            return _ignore
        started = time.monotonic()
        attributes = _request_attributes(server, method, params)
        key = _TARGETS.get(method)
        target = params.get("name") if key else None
        name = f"{method} {target}" if isinstance(target, str) and target else method
        span_attributes = dict(attributes, **{"jsonrpc.request.id": str(request_id)})
        if method.startswith("resources/") and isinstance(params.get("uri"), str):
            span_attributes["mcp.resource.uri"] = params["uri"]
        if self.capture_content and method == "tools/call":
            span_attributes["gen_ai.tool.call.arguments"] = _json(params.get("arguments"))
        span = self.tracer.start_span(name, kind=_trace.SpanKind.CLIENT,
                                      attributes=span_attributes)
        meta = params.get("_meta")
        meta = dict(meta) if isinstance(meta, dict) else {}
        _propagate.inject(meta, context=_trace.set_span_in_context(span))
        if meta:
            params["_meta"] = meta

        def finish(future: Future) -> None:
            outcome = _outcome(future)
            error_type, code, result = outcome
            if method == "initialize" and isinstance(result, dict) and result.get("protocolVersion"):
                attributes["mcp.protocol.version"] = str(result["protocolVersion"])
                span.set_attribute("mcp.protocol.version", attributes["mcp.protocol.version"])
            if code is not None:
                span.set_attribute("rpc.response.status_code", code)
            if error_type is not None:
                attributes["error.type"] = error_type
                span.set_attribute("error.type", error_type)
                span.set_status(_trace.Status(_trace.StatusCode.ERROR, _description(future)))
            if self.capture_content and method == "tools/call" and isinstance(result, dict):
                span.set_attribute("gen_ai.tool.call.result", _json(result))
            span.end()
            self.duration.record(time.monotonic() - started, attributes)
        return finish


def resolve(option: Any) -> Optional[Telemetry]:
    """The Telemetry an ``McpServer(telemetry=...)`` option means: None (the default) is the
    global providers when opentelemetry-api is installed, else nothing; False is nothing; a
    :class:`Telemetry` is itself; True requires OpenTelemetry (ConfigError without it)."""
    if option is None:
        return _default() if AVAILABLE else None
    if option is False:
        return None
    if option is True:
        return _default() if AVAILABLE else Telemetry()  # raises the clear error
    if isinstance(option, Telemetry):
        return option
    raise ConfigError(f"telemetry: expected None, True, False or a Telemetry, "
                      f"not {type(option).__name__}")


_DEFAULT: Optional[Telemetry] = None


def _default() -> Telemetry:
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = Telemetry()  # the global providers, looked up lazily by the API's proxies
    return _DEFAULT


def _nothing_configured() -> bool:
    """Whether neither global provider has been set: read from where the API keeps them
    (asking get_tracer_provider() reads the environment each time); should the API keep
    them elsewhere, this says False and every request takes the full path."""
    return (getattr(_trace, "_TRACER_PROVIDER", False) is None
            and getattr(getattr(_metrics, "_internal", None), "_METER_PROVIDER", False) is None)


def _context_of_thread() -> Any:
    """The OpenTelemetry context of the calling thread (a dict of what it carries)."""
    return _context.get_current()


# the API's own context variable, read at once where it keeps the context in one (its
# default runtime context, a dict of what the thread carries); else its public getter
_variable = getattr(getattr(_context, "_RUNTIME_CONTEXT", None), "_current_context", None)
_current_context: Callable[[], Any] = (
    _variable.get if isinstance(_variable, contextvars.ContextVar) else _context_of_thread)


def _idle() -> bool:
    """Whether a request has nothing to do with telemetry: neither global provider set (see
    :func:`_nothing_configured`) and the calling thread carries no trace context to pass on
    (an empty context holds no span)."""
    return (getattr(_trace, "_TRACER_PROVIDER", False) is None
            and getattr(_metrics_internal, "_METER_PROVIDER", False) is None
            and not _current_context())


# where the metrics API keeps its global provider (see _nothing_configured)
_metrics_internal = getattr(_metrics, "_internal", None)


def _pass_on(params: dict) -> None:
    """Put the current trace context in ``params["_meta"]``, if there is one."""
    if _trace.get_current_span().get_span_context().is_valid:
        meta = params.get("_meta")
        meta = dict(meta) if isinstance(meta, dict) else {}
        _propagate.inject(meta)
        params["_meta"] = meta


def _request_attributes(server: Any, method: str, params: dict) -> dict:
    attributes: dict[str, Any] = {"mcp.method.name": method}
    key = _TARGETS.get(method)
    if key and isinstance(params.get("name"), str):
        attributes[key] = params["name"]
        if method == "tools/call":
            attributes["gen_ai.operation.name"] = "execute_tool"
    if server.protocol_version:
        attributes["mcp.protocol.version"] = server.protocol_version
    transport = server.transport
    if transport == "stdio":
        attributes["network.transport"] = "pipe"
    elif transport in ("http", "sse"):
        attributes["network.transport"] = "tcp"
        attributes["network.protocol.name"] = "http"
        url = urlsplit(server.spec.url or "")
        if url.hostname:
            attributes["server.address"] = url.hostname
            attributes["server.port"] = url.port or (443 if url.scheme == "https" else 80)
    session_id = getattr(server._transport, "session_id", None)
    if session_id:
        attributes["mcp.session.id"] = session_id
    return attributes


def _outcome(future: Future) -> tuple[Optional[str], Optional[str], Any]:
    """(error.type, rpc.response.status_code, result) of a finished request."""
    if future.cancelled():
        return "cancelled", None, None
    error = future.exception()
    if isinstance(error, McpError):
        return str(error.code), str(error.code), None
    if error is not None:
        return type(error).__qualname__, None, None
    result = future.result()
    if isinstance(result, dict) and result.get("isError") is True:
        return "tool_error", None, result
    return None, None, result


def _description(future: Future) -> str:
    if future.cancelled():
        return "cancelled by the client"
    error = future.exception()
    return str(error) if error is not None else "the tool reported an error"


def _json(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= _CONTENT_LIMIT else text[:_CONTENT_LIMIT] + "..."


def _ignore(_future: Future) -> None:
    pass
