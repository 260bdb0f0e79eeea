"""The legacy HTTP+SSE transport (MCP 2024-11-05; ``"type": "sse"`` in .mcp.json).

:meth:`LegacySseTransport.start` GETs the URL (an event stream), waits for the ``endpoint``
event, and POSTs every message to that endpoint (resolved against the SSE URL; an endpoint on
another origin is refused). Answers, server requests and notifications all arrive as
``message`` events on the GET stream, read by the thread ``raider-<name>-sse``. The stream is
the connection: when it ends, ``closed`` is called.

POSTs run on the caller's thread and return as soon as the server accepted the message (202):
an HTTP error raises :class:`TransportError` from :meth:`send`, and the session fails that
request with it.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Mapping
from urllib.parse import urljoin, urlsplit

import requests

from ..errors import ConnectionClosed, TransportError
from ..protocol.messages import DEFAULT_MAX_MESSAGE_SIZE, encode_message, is_request
from ..threads.futures import Deadline
from .base import Closed, Deliver, Transport, deliver_json
from .http_common import JSON_TYPE, SSE_TYPE, HttpChannel, media_type
from .statuses import DeadlinePassed

log = logging.getLogger("raider_sync.transports.sse")

#: said when an ``sse`` entry seems to point at a Streamable HTTP endpoint
HTTP_HINT = ('it looks like a Streamable HTTP endpoint, not a legacy SSE one: use "type": "http" '
             'for this server')
#: seconds of silence after which the stream counts as dropped (servers send keep-alives)
READ_TIMEOUT = 300.0
DEFAULT_START_TIMEOUT = 30.0


class LegacySseTransport(Transport):
    """An MCP server speaking the 2024-11-05 HTTP+SSE transport at ``url``.

    ``headers`` (and those of ``headers_helper``, run with ``env``) go with the GET and every
    POST. An event over ``max_message_size`` bytes ends the connection (the error names the
    limit).
    """

    def __init__(self, url: str, *, name: str, headers: Mapping[str, str] | None = None,
                 headers_helper: str | None = None, env: Mapping[str, str] | None = None,
                 max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
                 auth=None):
        self.url = url
        self.name = name
        self.channel = HttpChannel(url, name=name, headers=headers,
                                   headers_helper=headers_helper, env=env,
                                   max_message_size=max_message_size, auth=auth)
        self.endpoint: str | None = None
        self._endpoint_known = threading.Event()
        self._refusal: TransportError | None = None
        self._closing = False
        self._closed = False
        self._close_lock = threading.Lock()
        self._reader: threading.Thread | None = None

    def start(self, deliver: Deliver, closed: Closed, *, timeout: float | None = None) -> None:
        """Open the event stream and wait for its endpoint (blocks up to ``timeout`` s).
        Raises TransportError when the server refuses, sends no endpoint in time or names
        an endpoint on another origin."""
        deadline = time.monotonic() + (timeout if timeout is not None else DEFAULT_START_TIMEOUT)
        try:
            self.channel.open(timeout)
            response = self.channel.request("GET", self.url, extra_headers={"Accept": SSE_TYPE},
                                            deadline=deadline)
            if response.status_code >= 400:
                failure = self.channel.failure(response, f"MCP server {self.name!r} (GET)")
                if _streamable_refusal(failure):
                    raise TransportError(f"{failure}; {HTTP_HINT}", failure.status_code,
                                         failure.body)
                raise failure
            if media_type(response) != SSE_TYPE:
                response.close()
                hint = f"; {HTTP_HINT}" if media_type(response) == JSON_TYPE else ""
                raise TransportError(f"MCP server {self.name!r} answered the GET with "
                                     f"{media_type(response) or 'no content type'}, not an event "
                                     f"stream{hint}", response.status_code)
            self._reader = threading.Thread(target=self._read, args=(response, deliver, closed),
                                            name=f"raider-{self.name}-sse", daemon=True)
            self._reader.start()
            if not self._endpoint_known.wait(max(0.0, deadline - time.monotonic())):
                waited = timeout if timeout is not None else DEFAULT_START_TIMEOUT
                raise TransportError(f"MCP server {self.name!r} sent no endpoint event within "
                                     f"{waited:g} s (if the URL is a Streamable HTTP endpoint, "
                                     f"use \"type\": \"http\")")
            if self._refusal is not None:
                raise self._refusal
            if self.endpoint is None:
                raise TransportError(f"MCP server {self.name!r} closed the event stream before "
                                     f"naming its endpoint")
        except BaseException:
            self.close()
            raise

    def send(self, message: dict, *, deadline: Deadline | None = None) -> None:
        """POST one message to the endpoint (blocks until the server accepted it, never past
        ``deadline``). Raises ConnectionClosed once closed, TransportError when refused."""
        endpoint = self.endpoint
        if self._closing or endpoint is None:
            raise ConnectionClosed(f"the connection to MCP server {self.name!r} is closed")
        body = encode_message(message)
        try:
            response = self.channel.request("POST", endpoint, extra_headers={
                "Content-Type": JSON_TYPE, "Accept": JSON_TYPE}, deadline=deadline, data=body)
        except DeadlinePassed:
            if is_request(message):
                return  # the session's deadline (on the process timer) fails and cancels the request
            raise
        if response.status_code >= 400:
            raise self.channel.failure(response, f"MCP server {self.name!r} (POST)")
        self.channel.read_excerpt(response)  # "Accepted": read, so the connection is reused

    def close(self) -> None:
        """Close the stream and join the reader. Safe to call twice."""
        with self._close_lock:
            if self._closed:
                return
            self._closing = True
            self.channel.abort()
            reader = self._reader
            if reader is not None and reader is not threading.current_thread():
                reader.join(10)
            self.channel.close()
            self._closed = True

    # -- the stream ----------------------------------------------------------------------

    def _read(self, response: requests.Response, deliver: Deliver, closed: Closed) -> None:
        parser = self.channel.parser()
        error: TransportError | None = None
        try:
            for event in self.channel.events(response, parser, None, idle_timeout=READ_TIMEOUT):
                if event.event == "endpoint":
                    self._take_endpoint(event.data.strip())
                    if self._refusal is not None:
                        return
                elif event.event == "message" and self.endpoint is None:
                    self._refusal = TransportError(
                        f"MCP server {self.name!r} sent a message before naming its endpoint; "
                        f"{HTTP_HINT}")
                    return
                elif event.event == "message":
                    deliver_json(event.data, deliver, log, self.name, "an event")
        except TransportError as exc:  # an event over the size limit
            error = exc
        except Exception as exc:  # noqa: BLE001 - never end the reader without saying so
            log.exception("%s: reading the event stream failed", self.name)
            error = TransportError(f"MCP server {self.name!r}: reading the event stream "
                                   f"failed: {type(exc).__name__}: {exc}")
        finally:
            if error is not None and self.endpoint is None and self._refusal is None:
                self._refusal = error  # start() raises it
            self._endpoint_known.set()
        if not self._closing and self.endpoint is not None:  # before that, start() raises
            closed(ConnectionClosed(str(error) if error is not None else
                                    f"MCP server {self.name!r} ended its event stream"))

    def _take_endpoint(self, value: str) -> None:
        endpoint = urljoin(self.url, value)
        if _origin(endpoint) != _origin(self.url):
            self._refusal = TransportError(
                f"MCP server {self.name!r} named an endpoint on another origin ({endpoint}); "
                f"refused")
        elif self.endpoint is None:
            self.endpoint = endpoint
        self._endpoint_known.set()


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    port = parts.port or {"http": 80, "https": 443}.get(scheme)
    return scheme, (parts.hostname or "").lower(), port


def _streamable_refusal(failure: TransportError) -> bool:
    """Whether the GET was refused as a Streamable HTTP endpoint refuses a GET without a
    session: 405 (no GET stream), 406 (it wants both media types in Accept), or 400 about
    the session or with a JSON-RPC error."""
    if failure.status_code in (405, 406):
        return True
    body = failure.body.lower()
    return failure.status_code == 400 and ("session" in body or '"jsonrpc"' in body)
