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
from .base import Closed, Deliver, Transport, deliver_json, encode_message
from .http_common import JSON_TYPE, SSE_TYPE, DeadlinePassed, HttpChannel, media_type
from .sse_events import SseParser

log = logging.getLogger("raider_sync.transports.sse")

#: seconds of silence after which the stream counts as dropped (servers send keep-alives)
READ_TIMEOUT = 300.0
DEFAULT_START_TIMEOUT = 30.0


class LegacySseTransport(Transport):
    """An MCP server speaking the 2024-11-05 HTTP+SSE transport at ``url``.

    ``headers`` (and those of ``headers_helper``, run with ``env``) go with the GET and every
    POST.
    """

    def __init__(self, url: str, *, name: str, headers: Mapping[str, str] | None = None,
                 headers_helper: str | None = None, env: Mapping[str, str] | None = None):
        self.url = url
        self.name = name
        self.channel = HttpChannel(url, name=name, headers=headers,
                                   headers_helper=headers_helper, env=env)
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
                raise self.channel.failure(response, f"MCP server {self.name!r} (GET)")
            if media_type(response) != SSE_TYPE:
                response.close()
                raise TransportError(f"MCP server {self.name!r} answered the GET with "
                                     f"{media_type(response) or 'no content type'}, not an event "
                                     f"stream", response.status_code)
            self._reader = threading.Thread(target=self._read, args=(response, deliver, closed),
                                            name=f"raider-{self.name}-sse", daemon=True)
            self._reader.start()
            if not self._endpoint_known.wait(max(0.0, deadline - time.monotonic())):
                raise TransportError(f"MCP server {self.name!r} sent no endpoint event within "
                                     f"{timeout or DEFAULT_START_TIMEOUT:g} s")
            if self._refusal is not None:
                raise self._refusal
            if self.endpoint is None:
                raise TransportError(f"MCP server {self.name!r} closed the event stream before "
                                     f"naming its endpoint")
        except BaseException:
            self.close()
            raise

    def send(self, message: dict, *, deadline: float | None = None) -> None:
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
            if "method" in message and "id" in message:
                return  # the session's watchdog fails the request and cancels it
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
        parser = SseParser()
        try:
            for event in self.channel.events(response, parser, None, idle_timeout=READ_TIMEOUT):
                if event.event == "endpoint":
                    self._take_endpoint(event.data.strip())
                    if self._refusal is not None:
                        return
                elif event.event == "message":
                    deliver_json(event.data, deliver, log, self.name, "an event")
        finally:
            self._endpoint_known.set()
        if not self._closing and self.endpoint is not None:  # before that, start() raises
            closed(ConnectionClosed(f"MCP server {self.name!r} ended its event stream"))

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
