"""The HTTP plumbing both HTTP transports share.

- :class:`HttpChannel`: HTTP exchanges with one server, with the spec's headers plus those of
  ``headers_helper`` (a command printing a JSON object of headers, run at the start and again
  once when the server answers 401/403) and an OAuth's; deadline-bounded; its sockets can all
  be shut down from another thread, so :meth:`HttpChannel.abort` wakes every thread blocked on
  a response and ``close()`` can join them. It owns a ``requests.Session`` of pooled
  keep-alive connections (:mod:`.http_pool`: when a connection is reused) and a reader of the
  responses' bodies and event streams (:mod:`.http_bodies`).
- :meth:`HttpChannel.failure` and :func:`unreachable`: the one place where HTTP statuses and
  ``requests``/``urllib3``/socket errors become raider_sync errors (:class:`TransportError` with
  the status code and a short excerpt of the body; :class:`LostInFlight` for a connection lost
  once the request was written). What a status means (unreachable, auth, session gone, ...)
  is :func:`~raider_sync.transports.statuses.classify`'s to say.
- Nothing that may have reached the server is sent twice: urllib3 retries nothing, and only a
  GET or a DELETE (idempotent) is sent once more when its kept-alive connection turns out
  closed. A POST never is: a connection the server closed while idle is found closed by urllib3
  before anything is written on it, and one that breaks once the request went out cannot be
  told from a server that died while doing what it asked.

Nothing here knows JSON-RPC: these move bytes and events.
"""
from __future__ import annotations

import logging
import os
import re
import socket
import subprocess
import threading
import time
from http.client import RemoteDisconnected
from typing import Generator, Mapping

import requests
import urllib3
from requests.utils import check_header_validity
from urllib3.connection import HTTPConnection

from ..errors import LostInFlight, TransportError
from ..protocol.messages import DEFAULT_MAX_MESSAGE_SIZE, decode_message
from ..protocol.sse_events import SseEvent, SseParser
from .http_bodies import EXCERPT_CHARS, BodyReader, excerpt, short  # noqa: F401 - EXCERPT_CHARS importable from here as before
from .http_pool import IDLE_REUSE, pooled_session  # noqa: F401 - IDLE_REUSE importable from here as before
from .statuses import DeadlinePassed, Status, classify

log = logging.getLogger("raider_sync.transports.http")

#: seconds a TCP connect may take (never more than what remains of a call)
CONNECT_TIMEOUT = 10.0
#: seconds a send without a deadline (a notification, an answer to the server) may take
SEND_TIMEOUT = 30.0
#: seconds headers_helper may run (Claude Code's bound)
HELPER_TIMEOUT = 10.0
_TEMPLATES = 16  # prepared requests kept per server, by method and URL
#: methods a server may be asked twice for the effect of once (RFC 9110, 9.2.2): the only
#: ones sent again after a kept-alive connection broke under them
_IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "DELETE"})

JSON_TYPE = "application/json"
SSE_TYPE = "text/event-stream"


def unreachable(exc: BaseException, url: str) -> TransportError:
    """A ``requests``/``urllib3``/socket error of an exchange with ``url``, as a TransportError
    (a LostInFlight when the connection was lost once the request was written; ``sent``
    False when no connection was made). Either has no status:
    :func:`~raider_sync.transports.statuses.classify` calls it UNREACHABLE."""
    sent = True  # as far as can be told
    if isinstance(exc, requests.exceptions.ConnectTimeout):
        what, sent = "connecting timed out", False
    elif isinstance(exc, requests.exceptions.ReadTimeout):
        what = "no answer in time"
    elif _lost_in_flight(exc):
        cause = exc.args[0]
        inner = cause.args[-1] if cause.args and isinstance(cause.args[-1], BaseException) \
            else cause
        how = ("closed" if isinstance(inner, RemoteDisconnected)  # a ConnectionResetError too
               else "reset" if isinstance(inner, ConnectionResetError) else "lost")
        return LostInFlight(f"{url}: the connection was {how} during the request; the server "
                            f"may have received it, so its outcome is unknown "
                            f"({short(str(inner) or type(inner).__name__)})")
    elif isinstance(exc, requests.exceptions.ConnectionError):
        reason = exc.args[0] if exc.args else exc
        reason = getattr(reason, "reason", reason)  # urllib3's MaxRetryError wraps the cause
        text = re.sub(r"^\w+\(host=[^)]*\): ", "", str(reason))  # urllib3 names its connection
        what = f"cannot connect: {short(text)}"
        sent = False  # no connection: the request was not written
    else:
        what = short(f"{type(exc).__name__}: {exc}")
    error = TransportError(f"{url}: {what}")
    error.sent = sent
    return error


def _lost_in_flight(exc: BaseException) -> bool:
    """Whether a request failed on a connection that was open, once the request was written
    (in part or whole): reset, or closed without a response. Either the server closed a
    kept-alive connection just as it was used, or it went away while at the request; which,
    cannot be told. A refused or timed-out connection is not."""
    if not isinstance(exc, requests.exceptions.ConnectionError) or \
            isinstance(exc, requests.exceptions.ConnectTimeout):
        return False
    cause = exc.args[0] if exc.args else None
    return isinstance(cause, urllib3.exceptions.ProtocolError)


def _names_authorization(headers: Mapping[str, str]) -> bool:
    return any(name.lower() == "authorization" for name in headers)


def media_type(response: requests.Response) -> str:
    return response.headers.get("content-type", "").split(";", 1)[0].strip().lower()


class HttpChannel:
    """HTTP exchanges with one server: pooled connections, headers, deadlines, abort; the
    bodies of the answers read through its :class:`~.http_bodies.BodyReader` (``bodies``).

    ``headers`` are sent on every request; ``headers_helper`` is run by :meth:`open` (and again
    after a 401/403) with ``env`` plus CLAUDE_CODE_MCP_SERVER_NAME/URL, its JSON object of
    headers laid over ``headers``. A body or event over ``max_message_size`` bytes is refused
    with a TransportError naming the limit, having held no more than that in memory.
    ``auth`` (an :class:`~raider_sync.auth.OAuth`) adds each request's Authorization/DPoP
    headers and decides whether a 401/403 is sent again.
    """

    def __init__(self, url: str, *, name: str, headers: Mapping[str, str] | None = None,
                 headers_helper: str | None = None, env: Mapping[str, str] | None = None,
                 max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE, auth=None):
        self.url = url
        self.name = name
        self.max_message_size = max_message_size
        self.auth = auth.bind(url, name) if auth is not None else None
        self.static_headers = dict(headers or {})
        self.headers_helper = headers_helper
        self.env = dict(os.environ if env is None else env)
        self._helper_headers: dict[str, str] = {}
        self._auth_generation = 0
        self._auth_lock = threading.Lock()
        self._sockets: set[HTTPConnection] = set()
        self._sockets_lock = threading.Condition()  # also guards aborted and _in_flight
        self._in_flight = 0
        self.aborted = False
        # whether a request is sent again is decided in _send_now alone
        self.http = pooled_session(url, self._track)
        self._templates: dict[tuple[str, str], requests.PreparedRequest] = {}
        self.bodies = BodyReader(url, name, max_message_size, lambda: self.aborted)

    # -- headers ---------------------------------------------------------------------------

    def open(self, timeout: float | None = None) -> None:
        """Run ``headers_helper`` if there is one (blocks up to ``timeout`` s, at most 10).
        Raises TransportError when it fails."""
        if self.headers_helper:
            self._helper_headers = self._run_helper(self.headers_helper, timeout)

    def headers(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The headers of one request: the spec's, the helper's, then ``extra``."""
        merged = {**self.static_headers, **self._helper_headers}
        if extra:
            merged.update(extra)
        return merged

    def _run_helper(self, command: str, timeout: float | None) -> dict[str, str]:
        bound = HELPER_TIMEOUT if timeout is None else max(0.1, min(timeout, HELPER_TIMEOUT))
        env = {**self.env, "CLAUDE_CODE_MCP_SERVER_NAME": self.name,
               "CLAUDE_CODE_MCP_SERVER_URL": self.url}
        what = f"headersHelper of {self.name!r}"
        try:
            done = subprocess.run(command, shell=True, env=env, capture_output=True,
                                  stdin=subprocess.DEVNULL, timeout=bound, check=False,
                                  cwd=env.get("CLAUDE_PROJECT_DIR") if os.path.isdir(
                                      env.get("CLAUDE_PROJECT_DIR", "")) else None)
        except subprocess.TimeoutExpired as exc:
            raise TransportError(f"{what} did not finish within {bound:g} s") from exc
        except OSError as exc:
            raise TransportError(f"{what} could not run: {exc}") from exc
        if done.returncode != 0:
            err = excerpt(done.stderr.decode("utf-8", "replace")) or "no output on stderr"
            raise TransportError(f"{what} exited with code {done.returncode}: {err}")
        try:
            value = decode_message(done.stdout)
        except ValueError as exc:
            raise TransportError(f"{what} did not print a JSON object: "
                                 f"{excerpt(done.stdout.decode('utf-8', 'replace'), 100)}") from exc
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise TransportError(f"{what} must print a JSON object of string headers")
        return value

    def reauthorize(self, generation: int, timeout: float | None) -> bool:
        """After a 401/403 answered to a request sent with headers of ``generation``: run the
        helper again (once, however many requests saw it) and say whether to retry."""
        command = self.headers_helper
        if not command:
            return False
        with self._auth_lock:
            if self._auth_generation == generation:
                try:
                    self._helper_headers = self._run_helper(command, timeout)
                except TransportError as exc:
                    log.warning("%s: %s", self.name, exc)
                    return False
                self._auth_generation += 1
        return True

    # -- exchanges -------------------------------------------------------------------------

    def request(self, method: str, url: str, *, extra_headers: Mapping[str, str] | None = None,
                deadline: float | None, data: bytes | None = None,
                read_timeout: float | None = None) -> requests.Response:
        """One HTTP exchange, streamed (the body is not read), with :meth:`headers` plus
        ``extra_headers``. A 401/403 reruns the helper and is retried once, then goes to
        ``auth``, which may authorize and have it sent again. ``deadline`` (time.monotonic())
        bounds connect and every read; without one, ``read_timeout`` (else SEND_TIMEOUT)
        does. A GET or DELETE whose kept-alive connection broke under it is sent once more;
        nothing else is. Raises TransportError (DeadlinePassed when the deadline has passed,
        LostInFlight when the connection broke once the request was written), AuthError when
        authorizing fails."""
        generation = self._auth_generation
        auth = self.auth
        if auth is not None and auth.automatic and _names_authorization(self._helper_headers):
            auth = None  # the helper sets Authorization itself: OAuth was not asked for
        attempt = auth.begin() if auth is not None else None

        def send() -> requests.Response:
            headers = self.headers(extra_headers)
            if auth is not None:
                headers.update(auth.headers(method, url, deadline, attempt))
            return self._send(method, url, headers, deadline, data, read_timeout)

        response = send()
        if classify(response.status_code) is Status.AUTH and self.reauthorize(
                generation, _left(deadline, HELPER_TIMEOUT)):
            response.close()
            response = send()
        while auth is not None and classify(response.status_code) is Status.AUTH:
            try:
                again = auth.challenge(response, attempt, deadline)
            except BaseException:
                response.close()
                raise
            if not again:
                break
            response.close()
            response = send()
        return response

    def _send(self, method, url, headers, deadline, data, read_timeout) -> requests.Response:
        with self._sockets_lock:
            if self.aborted:
                raise TransportError(f"{url}: the connection was closed")
            self._in_flight += 1
        try:
            return self._send_now(method, url, headers, deadline, data, read_timeout)
        finally:
            with self._sockets_lock:
                self._in_flight -= 1
                self._sockets_lock.notify_all()

    def _send_now(self, method, url, headers, deadline, data, read_timeout) -> requests.Response:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise DeadlinePassed(f"{url}: the deadline passed before sending")
            timeout = (min(left, CONNECT_TIMEOUT), left)
        else:
            read = read_timeout if read_timeout is not None else SEND_TIMEOUT
            timeout = (min(read, CONNECT_TIMEOUT), read)
        for attempt in (1, 2):
            try:
                prepared = self._prepare(method, url, headers, data)
                if prepared is None:
                    return self.http.request(method, url, data=data, headers=headers,
                                             timeout=timeout, stream=True,
                                             allow_redirects=False)
                # the settings requests would merge from the environment, read once
                return self.http.send(prepared, timeout=timeout, stream=True,
                                      allow_redirects=False, proxies=self.http.proxies,
                                      verify=self.http.verify, cert=self.http.cert)
            except requests.exceptions.RequestException as exc:
                if deadline is not None and time.monotonic() >= deadline:
                    raise DeadlinePassed(f"{url}: no answer before the deadline") from exc
                if attempt == 1 and method in _IDEMPOTENT and _lost_in_flight(exc):
                    continue  # harmless to ask again, on a fresh connection
                raise unreachable(exc, url) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def _prepare(self, method: str, url: str, headers: Mapping[str, str],
                 data: bytes | None) -> requests.PreparedRequest | None:
        """The request, prepared from the one prepared once for ``method`` and ``url`` (its
        URL and the session's headers): requests' full preparation costs as much as the
        exchange. None while the server keeps cookies, which that preparation sends.
        Raises requests' InvalidHeader for a header value that cannot be sent."""
        if self.http.cookies:
            return None
        template = self._templates.get((method, url))
        if template is None:
            template = self.http.prepare_request(requests.Request(method, url))
            if len(self._templates) >= _TEMPLATES:  # URLs that change (legacy SSE sessions)
                self._templates.clear()
            self._templates[method, url] = template
        prepared = requests.PreparedRequest()
        prepared.method, prepared.url, prepared.hooks = template.method, template.url, \
            template.hooks
        # requests keeps a request's cookie jar in this private attribute (prepare_cookies
        # sets it; there is no public way to copy it), which its stubs do not declare
        prepared._cookies = template._cookies  # type: ignore[attr-defined]
        merged = template.headers.copy()
        for item in headers.items():
            check_header_validity(item)
            merged[item[0]] = item[1]
        if data is not None:
            merged["Content-Length"] = str(len(data))
        elif method not in ("GET", "HEAD"):
            merged["Content-Length"] = "0"
        prepared.headers, prepared.body = merged, data
        return prepared

    def failure(self, response: requests.Response, what: str) -> TransportError:
        """An HTTP error status as a TransportError, with a short excerpt of the body (a
        JSON-RPC error's message when the body is one). Closes the response."""
        body = self.read_excerpt(response)
        message = body
        try:
            error = decode_message(body).get("error")
            if isinstance(error, dict) and error.get("message"):
                message = str(error["message"])
        except (ValueError, AttributeError):
            pass
        reason = f"HTTP {response.status_code} {response.reason or ''}".strip()
        detail = f": {excerpt(message, 200)}" if message else ""
        if classify(response.status_code) is Status.AUTH and self.own_authorization():
            return TransportError(f"{what} refused the configured Authorization header "
                                  f"({reason}){detail}", response.status_code, body)
        return TransportError(f"{what} answered {reason}{detail}", response.status_code, body)

    def own_authorization(self) -> bool:
        """Whether the Authorization header sent is the entry's own (its ``headers`` or its
        helper's), not one an OAuth object supplies."""
        return _names_authorization(self.headers()) and (
            self.auth is None or self.auth.automatic)

    # -- bodies (the BodyReader's) -------------------------------------------------------

    def read_excerpt(self, response: requests.Response, limit: int = 4096) -> str:
        """See :meth:`BodyReader.read_excerpt`."""
        return self.bodies.read_excerpt(response, limit)

    def read_body(self, response: requests.Response, deadline: float | None) -> bytes:
        """See :meth:`BodyReader.read_body`."""
        return self.bodies.read_body(response, deadline)

    def too_large(self, what: str) -> TransportError:
        """See :meth:`BodyReader.too_large`."""
        return self.bodies.too_large(what)

    def parser(self, last_event_id: str | None = None) -> SseParser:
        """See :meth:`BodyReader.parser`."""
        return self.bodies.parser(last_event_id)

    def chunks(self, response: requests.Response, deadline: float | None, strict: bool = False,
               idle_timeout: float | None = None) -> Generator[bytes, None, None]:
        """See :meth:`BodyReader.chunks`."""
        return self.bodies.chunks(response, deadline, strict, idle_timeout)

    def events(self, response: requests.Response, parser: SseParser, deadline: float | None,
               idle_timeout: float | None = None) -> Generator[SseEvent, None, None]:
        """See :meth:`BodyReader.events`."""
        return self.bodies.events(response, parser, deadline, idle_timeout)

    def drain(self, response: requests.Response, seconds: float) -> None:
        """See :meth:`BodyReader.drain`."""
        self.bodies.drain(response, seconds)

    def finish(self, response: requests.Response, wait: float) -> bool:
        """See :meth:`BodyReader.finish`."""
        return self.bodies.finish(response, wait)

    # -- stopping --------------------------------------------------------------------------

    def abort(self) -> None:
        """Shut down every connection, waking each thread blocked on one. New exchanges fail
        (a connection opened by one already under way is shut at once)."""
        with self._sockets_lock:
            self.aborted = True
            connections = list(self._sockets)
        for connection in connections:
            _shut(connection)

    def close(self) -> None:
        """:meth:`abort`, wait (at most 5 s) for the exchanges under way to fail, close the
        pool, then every connection still open: one whose body a thread of the owner's was
        still reading may be put back into the pool after the pool closed (urllib3 does not
        guard that), and must not keep its socket. Safe to call twice."""
        self.abort()
        with self._sockets_lock:
            self._sockets_lock.wait_for(lambda: self._in_flight == 0, 5.0)
        self.http.close()
        if self.auth is not None:
            self.auth.close()
        with self._sockets_lock:
            connections = list(self._sockets)
        for connection in connections:
            try:
                connection.close()
            except Exception:  # noqa: BLE001 - closing what another thread may hold
                pass

    def _track(self, connection: HTTPConnection, add: bool) -> None:
        with self._sockets_lock:
            if add:
                self._sockets.add(connection)
                if self.aborted:
                    _shut(connection)
            else:
                self._sockets.discard(connection)


def _left(deadline: float | None, cap: float) -> float:
    if deadline is None:
        return cap
    return max(0.0, min(cap, deadline - time.monotonic()))


def _shut(connection: HTTPConnection) -> None:
    sock = connection.sock
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
