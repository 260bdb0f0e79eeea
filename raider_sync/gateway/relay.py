"""The relay: a WSGI application that puts configured MCP servers behind one URL.

    POST|GET|DELETE /mcp/<name>[/<sub-path>]   relayed to the server's configured URL
    GET /v1/mcp/servers                        the servers the caller's key may use
    GET /metrics                               Prometheus metrics, for the operator's token
                                               (:mod:`raider_sync.gateway.metrics`)

A client presents its key as ``Authorization: Bearer KEY`` or ``X-Api-Key: KEY``; no key or an
unknown key is 401, a server the key was not assigned looks exactly like an unknown one (404).
The request goes upstream with the headers :func:`protocol.request_headers` lets through plus
the operator's static headers and credential -- never the client's own credentials -- over
pooled keep-alive connections (:mod:`raider_sync.gateway.upstream`). Status, the allowed
response headers and the body come back; an SSE answer streams through as it arrives (each read
is written and flushed at once), and when the client goes away the upstream response is closed.
An upstream that cannot be reached, or does not answer within the configured seconds, is a 502
with a short JSON error that names neither the upstream nor the cause. Every request yields one
usage event (see :class:`Relay`).

The order of the checks on a request, the same under every server: the framing
(``Transfer-Encoding`` with ``Content-Length``, or in HTTP/1.0, is 400; closing the connection
is the server's job, as PEP 3333 forbids the app a ``Connection`` header), the path, the
``Origin``, the key, the method and server, the sub-path and query, the body (over
``max_request_bytes`` is 413, one that cannot be read is 400), the stateless headers, the session
id (sealed for this key, see :mod:`raider_sync.gateway.sessions`), the rate limits (429, see
:mod:`raider_sync.gateway.rate_limits`), the per-key limits (429, see
:mod:`raider_sync.gateway.limits`); only then does anything go upstream. Compressed answers are
passed on unopened; a streamed answer the upstream breaks off raises :class:`UpstreamBroken`
out of the WSGI iterable, so the server aborts the client's connection too.

The relay keeps no session state: MCP sessions live in the upstream servers and the sealed
``Mcp-Session-Id`` travels with every request, so any process with the same keys can serve any
request. Run it with ``raider-sync gateway --config FILE --listen HOST:PORT`` (waitress,
:mod:`raider_sync.gateway.serving`), ``--workers N`` (gunicorn,
:mod:`raider_sync.gateway.workers`), or under gunicorn by hand behind a load balancer::

    RAIDER_GATEWAY_CONFIG=/etc/raider/gateway.json \\
        gunicorn --workers 4 --worker-class gthread --threads 32 --bind 0.0.0.0:8080 \\
        'raider_sync.gateway.relay:app_from_env(threads=32)'

Client disconnects are noticed while the upstream is silent only under waitress (which reports
them); elsewhere the next write to the gone client ends the relay.

:class:`Relay` checks and routes a request and sends it upstream; a streamed answer and the
watch for gone clients are :mod:`raider_sync.gateway.streaming`, the usage events a
:class:`~raider_sync.gateway.usage.Usage` part it owns.
"""
from __future__ import annotations

import functools
import http.client
import json
import logging
import os
import re
import sys
import threading
import time
from http import HTTPStatus
from typing import Any, Callable, Iterable, Optional, cast

from ..errors import AuthError, ConfigError
from . import identity, protocol, stateless, tool_rules
from . import tracing as tracing_part
from .audit import AuditLog, arguments_of
from .config import GatewayConfig, GatewayServer
from .keys import authenticate
from .metrics import PATH as METRICS_PATH
from .metrics import Metrics
from .plan import Plan
from .rate_limits import RateLimiter, key_rates, refusal
from .request_body import read_body
from .sessions import SessionBinding
from .streaming import CHUNK, WATCH_INTERVAL, Stream, UpstreamBroken, Watcher  # noqa: F401 - importable from here as before
from .upstream import Answer, Upstream
from .usage import Usage, UsageCallback

log = logging.getLogger("raider_sync.gateway")
usage_log = logging.getLogger("raider_sync.gateway.usage")  # the one of .usage, named here as before

CONFIG_ENV = "RAIDER_GATEWAY_CONFIG"
BUFFER_LIMIT = 1024 * 1024     # a plain answer up to this size is relayed in one write
METHODS = ("DELETE", "GET", "POST")
_ENCODED = re.compile(r"%(2e|2f|5c)", re.IGNORECASE)  # an encoded dot, slash or backslash
# the relay's own upstream headers: a name, and no compression it would have to undo
_FIXED_HEADERS = {"User-Agent": "raider-sync-gateway", "Accept-Encoding": "identity"}


class Relay:
    """The gateway as a WSGI application (``relay(environ, start_response)``).

    ``config`` is a :class:`GatewayConfig` from ``load``/``from_dict``. Usage events go to
    ``on_usage(event)`` and/or the JSON-lines file ``usage_log`` (default: the config's
    ``usage_log``), one per request, when the response is finished::

        {"time": "2026-01-01T12:00:00.000+00:00", "key": "alice", "server": "everything",
         "endpoint": "/mcp/everything", "method": "POST", "rpc": "tools/call", "tool": "echo",
         "status": 200, "request_bytes": 123, "response_bytes": 456, "duration_ms": 3.2}

    Each event is also logged, as one JSON line at INFO, on ``raider_sync.gateway.usage``.
    ``key`` and ``server`` are ``None`` where the request did not get that far (401, unknown
    route); ``rpc`` and ``tool`` where the body is not one JSON-RPC request. ``threads`` is
    the number of threads the WSGI server runs the relay in: the per-key limits default to
    shares of it, and the upstream pool holds as many connections. A callback that raises is
    logged, never fails the request; the file is appended one line per ``write`` (O_APPEND),
    so several processes may share it. Thread-safe: a WSGI server calls it from many threads.
    :meth:`close` (or ``with``) closes the pooled upstream connections, the usage file and the
    watcher thread. The config's ``metrics`` entry adds ``GET /metrics``
    (:mod:`~raider_sync.gateway.metrics`); ``tracing`` is None (OpenTelemetry's global provider
    when installed), False (none) or a :class:`~raider_sync.gateway.tracing.Tracing`.
    """

    def __init__(self, config: GatewayConfig, *, on_usage: Optional[UsageCallback] = None,
                 usage_log: Optional[str] = None, pool_size: int = 64, threads: int = 16,
                 tracing: Any = None):
        if not isinstance(config, GatewayConfig) or not config.resolved:
            raise ConfigError("the relay needs a GatewayConfig from GatewayConfig.load or from_dict")
        self.on_usage = on_usage
        self._threads = threads
        # everything derived from the config, swapped whole by reload()
        self._plan = Plan(config, threads, fixed_headers=_FIXED_HEADERS)
        self._upstream = Upstream(max(pool_size, threads))  # a stream each
        self._rates = RateLimiter.of(config)
        self._metrics = Metrics.of(config)
        self._tracing = tracing_part.resolve(tracing)
        self._usage = Usage(usage_log if usage_log is not None else config.usage_log,
                            lambda: self.on_usage)
        if self._metrics is not None:
            self._usage.subscribe(self._metrics.record)
        if self._tracing is not None:
            self._usage.subscribe(self._tracing.finish, self._tracing.active)
        self._audit = AuditLog.from_settings(config.audit)  # the decisions, hash-chained
        if self._audit is not None:
            self._usage.subscribe(self._audit.record, arguments=self._audit.arguments)
        self._watcher = Watcher()  # of the streams whose clients may go away
        self._lock = threading.Lock()
        self._closed = False

    # -- lifecycle -------------------------------------------------------------------------

    def close(self) -> None:
        """Close pooled upstream connections and the usage file; end and join the watcher
        (bounded by a few watch intervals). May be called twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._watcher.close()
        self._upstream.close()
        self._rates.close()
        self.config.close()
        self._usage.close()
        if self._audit is not None:
            self._audit.close()

    def __enter__(self) -> "Relay":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # the parts of the plan, under the names they always had: each reads the current plan
    config = property(lambda self: self._plan.config)
    _digests = property(lambda self: self._plan.digests)
    _servers = property(lambda self: self._plan.servers)
    _fixed = property(lambda self: self._plan.fixed)
    _origins = property(lambda self: self._plan.origins)
    _limits = property(lambda self: self._plan.limits)

    def reload(self) -> bool:
        """Read the whole config again (the file, ``keys_dir``, ``keys_env``): keys, servers,
        tool rules, limits and every other setting but ``usage_log``, for the requests that
        follow; requests and streams in flight go on under the config they started with. A
        config that no longer loads is logged and the one in use is kept: returns False then.
        Safe from a signal handler or any thread."""
        try:
            fresh = self.config.reloaded()
        except ConfigError as exc:
            log.error("gateway: config not reloaded, it has problems: %s", exc)
            return False
        old = self._plan
        with self._lock:
            if self._closed:
                fresh.close()
                return False
            # one assignment: a request sees the old plan or the new one
            self._plan = Plan(fresh, self._threads, fixed_headers=_FIXED_HEADERS, previous=old)
            self._rates.update(fresh.rate_limits, key_rates(fresh))
        old.config.close()  # its OAuth clients' connections; one still in use opens anew
        log.info("gateway: config reloaded (%d servers, %d keys)", len(fresh.servers),
                 len(self._plan.digests))
        return True

    def reload_keys(self) -> bool:
        """:meth:`reload`, under the name it had when only keys were reloaded."""
        return self.reload()

    # -- WSGI ------------------------------------------------------------------------------

    def __call__(self, environ: dict, start_response) -> Iterable[bytes]:
        event = {"key": None, "server": None, "endpoint": None,
                 "method": environ.get("REQUEST_METHOD", "GET"), "rpc": None, "tool": None,
                 "status": None, "error": None, "request_bytes": 0, "response_bytes": 0}
        started = time.perf_counter()
        try:
            return self._handle(environ, start_response, event, started)
        except Exception:  # a bug must not leak a traceback to the client
            log.exception("gateway: request failed")
            body = json.dumps({"error": {"type": "internal_error",
                                         "message": "the gateway failed to handle the request"}})
            start_response(_status_line(500), [("Content-Type", "application/json"),
                                               ("Content-Length", str(len(body)))], sys.exc_info())
            event["status"], event["response_bytes"] = 500, len(body)
            event["error"] = "internal_error"
            self._usage.emit(event, started)
            return [body.encode()]

    def _handle(self, environ, start_response, event, started):
        if self._closed:
            return self._answer(start_response, event, started, 503, "unavailable",
                                "the gateway is shutting down")
        if environ.get("HTTP_TRANSFER_ENCODING"):
            # RFC 9112 6.3 and 6.1: the framing is ambiguous or faulty, so whatever follows on
            # this connection cannot be trusted either; gunicorn refuses it before the app, and
            # the gateway's waitress hands it over without its body and closes the connection.
            # No Connection: close here: PEP 3333 forbids it (waitress raises on it).
            problem = "Content-Length and Transfer-Encoding together" \
                if environ.get("CONTENT_LENGTH") else "Transfer-Encoding in an HTTP/1.0 request" \
                if environ.get("SERVER_PROTOCOL") == "HTTP/1.0" else None
            if problem is not None:
                return self._answer(start_response, event, started, 400, "bad_request", problem)
        try:
            path = environ.get("PATH_INFO", "").encode("latin-1").decode("utf-8")
        except UnicodeError:
            return self._answer(start_response, event, started, 400, "bad_request",
                                "the path is not UTF-8")
        if path == protocol.listing_path():
            event["endpoint"] = path
            route = None
        elif path.startswith("/mcp/") and len(path) > 5:
            route = path[5:]
        elif path == METRICS_PATH and self._metrics is not None:
            return self._scrape(environ, start_response, event, started, self._metrics)
        else:
            return self._answer(start_response, event, started, 404, "not_found", "no such route")

        plan = self._plan  # one config for the whole request, whatever a reload does meanwhile
        origin = environ.get("HTTP_ORIGIN")
        if plan.origins is not None and origin is not None \
                and origin.rstrip("/").lower() not in plan.origins:
            return self._answer(start_response, event, started, 403, "forbidden",
                                "this origin may not use the gateway")
        key = self._authenticate(environ, plan.digests)
        if key is None:
            return self._answer(start_response, event, started, 401, "unauthorized",
                                "a valid key is required (Authorization: Bearer KEY or X-Api-Key)",
                                [("WWW-Authenticate", 'Bearer realm="raider-sync-gateway"')])
        event["key"], allowed, token = key
        method = event["method"]

        if route is None:
            if method != "GET":
                return self._answer(start_response, event, started, 405, "method_not_allowed",
                                    "the listing answers GET", [("Allow", "GET")])
            return self._listing(environ, start_response, event, started, allowed)

        name, slash, rest = route.partition("/")
        if method not in METHODS:
            return self._answer(start_response, event, started, 405, "method_not_allowed",
                                "an MCP endpoint answers POST, GET and DELETE",
                                [("Allow", ", ".join(METHODS))])
        server = plan.servers.get(name) if name in allowed else None
        if server is None:
            return self._answer(start_response, event, started, 404, "not_found",
                                "no such MCP server")
        event["server"], event["endpoint"] = name, protocol.endpoint(name)
        if not server.relayed:
            return self._answer(start_response, event, started, 404, "not_found",
                                "this MCP server runs on the client (stdio); it is not relayed")
        raw = environ.get("RAW_URI") or environ.get("REQUEST_URI") or ""
        # "/mcp/<name>/" is an empty trailing segment, refused as "/mcp/<name>/a/" is
        refused = _ENCODED.search(raw.partition("?")[0]) or (slash and not rest)
        url = None if refused else protocol.upstream_url(
            server.url, rest if slash else None, environ.get("QUERY_STRING") or None)
        if url is None:
            return self._answer(start_response, event, started, 400, "bad_path",
                                "the sub-path or query is refused ('.', '..', empty segments, "
                                "backslashes, encoded dots or slashes, and query parameters the "
                                "gateway sets are not relayed)")
        body = read_body(environ, self.config.max_request_bytes)
        if isinstance(body, tuple):
            return self._answer(start_response, event, started, *body)
        event["request_bytes"] = len(body)
        # parsed once, for the usage event, the stateless check and the tool rules
        message = protocol.parse_message(body)
        if self._usage.observed():
            event["rpc"], event["tool"] = protocol.rpc_of(message, body)
            if self._usage.wants_arguments and event["tool"] is not None:
                event["arguments"] = arguments_of(body)  # for the audit, when opted in
        if method == "POST":  # stateless requests: Mcp-Method/Mcp-Name must say what the body says
            problem = stateless.problem(environ, body, message)
            if problem is not None:
                event["error"] = "header_mismatch"
                return self._answer_body(start_response, event, started, 400,
                                         stateless.refusal(body, problem))
        bind = SessionBinding(token, event["key"], name)
        if not bind.accept(environ.get("HTTP_MCP_SESSION_ID")):
            return self._answer(start_response, event, started, 404, "session_not_found",
                                "no such session for this key (start a new one)")
        refused = self._rates.admit(event["key"], body)
        if refused is not None:
            event["limit"] = refused.limit
            return self._answer_body(start_response, event, started, 429,
                                     refusal(body, refused),
                                     [("Retry-After", str(refused.retry_after))])
        lease = self._limits.acquire(event["key"], stream=method == "GET")
        if lease is None:
            return self._answer(start_response, event, started, 429, "too_many_requests",
                                "this key holds as many requests or streams as it may",
                                [("Retry-After", "1")])
        screen = tool_rules.screen(plan.tool_rules.get((event["key"], name)), message, method,
                                   "HTTP_MCP_METHOD" in environ)
        if screen is not None and screen.refusal is not None:  # nothing goes upstream
            lease.release()
            event["refused"] = "tool_rules"
            return self._answer_body(start_response, event, started, 200, screen.refusal)
        try:
            answer = self._relay(environ, start_response, event, started, server, url, body,
                                 bind, screen)
        except BaseException:
            lease.release()
            raise
        if isinstance(answer, Stream):
            answer.lease = lease
        else:
            lease.release()
        return answer

    # -- pieces ----------------------------------------------------------------------------

    def _authenticate(self, environ, digests=None) -> Optional[tuple[str, frozenset, str]]:
        """:func:`~raider_sync.gateway.keys.authenticate` against ``digests``, the keys of the
        request's plan (None: the current one)."""
        return authenticate(environ, self._digests if digests is None else digests)

    def _listing(self, environ, start_response, event, started, allowed):
        base = self.config.public_url or protocol.request_base(environ)
        data = [protocol.listing_entry(s, base) for s in self.config.servers if s.name in allowed]
        body = json.dumps({"object": "list", "data": data}).encode()
        return self._answer_body(start_response, event, started, 200, body)

    def _relay(self, environ, start_response, event, started, server: GatewayServer, url, body,
               bind: SessionBinding, screen: Optional[tool_rules.Screen] = None):
        headers = bind.upstream(protocol.request_headers(protocol.client_headers(environ)))
        fixed = self._fixed.get(server.name)
        if fixed is None:
            try:
                fixed = {**self.config.upstream_headers(server, event["key"]), **_FIXED_HEADERS}
            except AuthError as exc:
                log.warning("%s: no upstream token: %s", server.name, exc)
                return self._answer(start_response, event, started, 502, "upstream_auth",
                                    identity.failure_message(server.token_exchange is not None, exc))
        headers.update(fixed)
        if self._tracing is not None:
            self._tracing.start(environ, event, server.name, url, headers)
        timeouts = self.config.timeouts_for(server)
        try:
            response = self._upstream.send(event["method"], url, headers, body or None,
                                           connect=timeouts.connect, read=timeouts.read)
        except TimeoutError:
            return self._answer(start_response, event, started, 502, "upstream_timeout",
                                "the MCP server did not answer in time")
        except (OSError, http.client.HTTPException, ValueError):
            # refused, reset, a TLS failure, a malformed answer, a header http.client refuses
            return self._answer(start_response, event, started, 502, "upstream_unreachable",
                                "the MCP server could not be reached")
        relayed = bind.client([(k, v) for k, v in response.headers
                               if protocol.response_header_allowed(k)])
        status = _status_line(response.status)
        event["status"] = response.status
        event_stream = protocol.is_event_stream(response.content_type)
        length = response.length
        if screen is not None:
            screen = screen.applies(response.status, response.headers, event_stream)
            if screen is tool_rules.ENCODED:  # never opened, so it cannot be filtered
                response.close()
                return self._answer(start_response, event, started, 502, "upstream_encoded",
                                    "the MCP server compressed an answer the gateway must filter")
        if screen is not None and not event_stream:  # a list to filter is read whole
            length = 0  # over max_request_bytes: refused as a broken answer
        metrics = self._metrics
        lister = metrics if metrics is not None and event["rpc"] == "tools/list" \
            and metrics.readable(response.headers) else None  # learns the tools for its labels
        if not event_stream and length is not None and length <= BUFFER_LIMIT:
            try:
                # never decoded: a compressed body goes on as it came, with its
                # Content-Encoding, so the relay holds no more than it received
                data = response.read() if screen is None else screen.json(
                    response.read(self.config.max_request_bytes))
            except Exception:  # the upstream broke off mid-answer: nothing was sent yet
                response.close()
                return self._answer(start_response, event, started, 502, "upstream_broken",
                                    "the MCP server broke off its answer")
            response.close()
            if lister is not None:
                lister.learn_tools(server.name, data)
            start_response(status, relayed + [("Content-Length", str(len(data)))])
            event["response_bytes"] = len(data)
            self._usage.emit(event, started)
            return [data]
        if event_stream:
            relayed.append(("X-Accel-Buffering", "no"))  # tells a fronting nginx not to buffer
        try:
            write = start_response(status, relayed)
            # Servers hold the headers back until the first non-empty chunk (PEP 3333), and a
            # GET stream may stay silent for minutes: an empty write() sends them now
            # (waitress, gunicorn and wsgiref all do). It raises when the client has gone.
            write(b"")
        except BaseException:
            response.close()
            raise
        if screen is not None:  # chunks, shutdown and close as the answer's own
            response = cast(Answer, tool_rules.Screened(response, screen))
        emit: Callable[[dict, float], None] = self._usage.emit
        if metrics is not None and event_stream:
            emit = metrics.streaming(event, emit)
        stream = Stream(response, event, started, watcher=self._watcher, emit=emit)
        if lister is not None:
            stream.tap = lister.tool_list_reader(server.name)
        disconnected = environ.get("waitress.client_disconnected")
        if callable(disconnected):
            self._watcher.watch(stream, disconnected)
        return stream

    def _scrape(self, environ, start_response, event, started, metrics: Metrics):
        """``GET /metrics`` for the operator's metrics token; a customer key is refused."""
        event["endpoint"] = METRICS_PATH
        if not metrics.allowed(environ):
            return self._answer(start_response, event, started, 401, "unauthorized",
                                "the metrics token is required (Authorization: Bearer TOKEN)",
                                [("WWW-Authenticate", 'Bearer realm="raider-sync-gateway-metrics"')])
        if event["method"] != "GET":
            return self._answer(start_response, event, started, 405, "method_not_allowed",
                                "the metrics answer GET", [("Allow", "GET")])
        body, content_type = metrics.exposition()
        start_response(_status_line(200), [("Content-Type", content_type),
                                           ("Content-Length", str(len(body)))])
        event["status"], event["response_bytes"] = 200, len(body)
        self._usage.emit(event, started)
        return [body]

    def _answer(self, start_response, event, started, status: int, kind: str, message: str,
                extra: list | None = None):
        body = json.dumps({"error": {"type": kind, "message": message}}).encode()
        event["error"] = kind  # why the gateway answered itself: the audit's reason
        return self._answer_body(start_response, event, started, status, body, extra)

    def _answer_body(self, start_response, event, started, status, body, extra=None):
        start_response(_status_line(status), [("Content-Type", "application/json"),
                                              ("Content-Length", str(len(body)))] + (extra or []))
        event["status"] = status
        event["response_bytes"] = len(body)
        self._usage.emit(event, started)
        return [body]

@functools.cache  # the codes are three digits
def _status_line(code: int) -> str:
    try:
        return f"{code} {HTTPStatus(code).phrase}"
    except ValueError:
        return f"{code} Unknown"


def make_app(config: GatewayConfig | str | os.PathLike, **kw: Any) -> Relay:
    """A :class:`Relay` for ``config`` (a GatewayConfig or the path of a config file).
    Raises ConfigError listing every problem of a bad config."""
    if not isinstance(config, GatewayConfig):
        config = GatewayConfig.load(config)
    return Relay(config, **kw)


def app_from_env(threads: int = 16) -> Relay:
    """The relay for the config file named by ``$RAIDER_GATEWAY_CONFIG`` (for gunicorn:
    ``'raider_sync.gateway.relay:app_from_env(threads=32)'``, with the ``--threads`` given to
    gunicorn, from which the per-key limits are derived). In the main thread, SIGHUP then
    reloads the keys (under gunicorn: sent to a worker). Raises ConfigError when unset or bad."""
    from .serving import reload_keys_on_sighup

    path = os.environ.get(CONFIG_ENV)
    if not path:
        raise ConfigError(f"set {CONFIG_ENV} to the gateway's config file")
    relay = make_app(path, threads=threads)
    reload_keys_on_sighup(relay)
    return relay
