"""The receiving end of webhook deliveries: their signature checked, and a WSGI app.

    verify_webhook(headers, body, secret)          # the parsed body, or WebhookRejected
    app = webhook_app(secret, on_event)            # serve it with any WSGI server

:func:`webhook_app` answers a POST whose signature verifies (else 401, and nothing is
called): a ``verification`` challenge is echoed (``{"challenge": ...}``, 200); a delivery
whose ``webhook-id`` it saw lately is answered 200 again and not handed on (deliveries come
at least once); any other body, an event or a control body (``gap``, ``terminated``), is
handed to ``on_event(body, headers)`` and answered 200 once it returned, 500 when it raised
(the server then tries again). ``on_event`` runs on the WSGI server's thread and should be
quick: keep the event (a queue, a file) and return. ``secret`` may be a callable of the
``X-MCP-Subscription-Id`` header (one secret per subscription), returning None for one it
does not know (503: the server tries again, as the draft asks of a receiver not yet told of
a subscription). The HMAC is the standard library's; comparisons are constant-time.
"""
from __future__ import annotations

import collections
import json
import logging
import threading
import time
from typing import Any, Callable, Iterable, Mapping, Union

from ...errors import WebhookRejected
from ...protocol.webhooks import ID, SUBSCRIPTION, TOLERANCE, secret_key, signature_problem

log = logging.getLogger("raider_sync.events.webhooks")

#: the most a delivery's body may be (bytes)
MAX_BODY = 1024 * 1024
#: webhook-ids remembered against repeats, by default
REMEMBER = 4096

Secret = Union[str, Callable[[Union[str, None]], Union[str, None]]]
OnEvent = Callable[[dict, dict], Any]


def verify_webhook(headers: Mapping[str, str], body: bytes, secret: str,
                   tolerance: float = TOLERANCE) -> dict:
    """The JSON body of a delivery whose signature ``secret`` verifies and whose
    ``webhook-timestamp`` is within ``tolerance`` s of now. ``headers`` are looked up
    case-insensitively; ``body`` is the raw bytes as received. Raises WebhookRejected saying
    why (a missing header, an old timestamp, no matching signature, a body that is not a
    JSON object); ValueError for a malformed ``secret``."""
    key = secret_key(secret)
    problem = signature_problem(headers, body, key, now=time.time(), tolerance=tolerance)
    if problem is not None:
        raise WebhookRejected(problem)
    try:
        parsed = json.loads(body)
    except ValueError:
        raise WebhookRejected("the body is not JSON") from None
    if not isinstance(parsed, dict):
        raise WebhookRejected("the body is not a JSON object")
    return parsed


class _Seen:
    """The webhook-ids seen lately (at most ``size``). Thread-safe."""

    def __init__(self, size: int):
        self.size = size
        self._ids: collections.OrderedDict[str, None] = collections.OrderedDict()
        self._lock = threading.Lock()

    def __contains__(self, message_id: str) -> bool:
        with self._lock:
            return message_id in self._ids

    def add(self, message_id: str) -> None:
        with self._lock:
            self._ids[message_id] = None
            self._ids.move_to_end(message_id)
            while len(self._ids) > self.size:
                self._ids.popitem(last=False)


class WebhookApp:
    """The WSGI app of :func:`webhook_app`. Thread-safe."""

    def __init__(self, secret: Secret, on_event: OnEvent, *, tolerance: float = TOLERANCE,
                 remember: int = REMEMBER):
        if not callable(secret):
            secret_key(secret)  # a malformed secret is refused now, not at the first POST
        if not callable(on_event):
            raise TypeError("on_event must be callable")
        self.secret = secret
        self.on_event = on_event
        self.tolerance = tolerance
        self.seen = _Seen(remember)
        #: deliveries handed on, and refused (for a look at what came)
        self.received = 0
        self.rejected = 0

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        if environ.get("REQUEST_METHOD") != "POST":
            return _reply(start_response, "405 Method Not Allowed", {"error": "POST only"},
                          [("Allow", "POST")])
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > MAX_BODY:
            return _reply(start_response, "413 Payload Too Large", {"error": "too large"})
        body = environ["wsgi.input"].read(length) if length else b""
        headers = {key[5:].replace("_", "-").lower(): value for key, value in environ.items()
                   if key.startswith("HTTP_")}
        secret = self.secret(headers.get(SUBSCRIPTION.lower())) if callable(self.secret) \
            else self.secret
        if secret is None:
            return _reply(start_response, "503 Service Unavailable",
                          {"error": "unknown subscription"}, [("Retry-After", "1")])
        try:
            message = verify_webhook(headers, body, secret, self.tolerance)
        except WebhookRejected as exc:
            self.rejected += 1
            return _reply(start_response, "401 Unauthorized", {"error": str(exc)})
        if message.get("type") == "verification":
            return _reply(start_response, "200 OK", {"challenge": message.get("challenge")})
        message_id = headers[ID]
        if message_id in self.seen:
            return _reply(start_response, "200 OK", {"duplicate": True})
        try:
            self.on_event(message, headers)
        except Exception:  # noqa: BLE001 - the server delivers it again
            log.exception("on_event failed for webhook %s", message_id)
            return _reply(start_response, "500 Internal Server Error", {"error": "not kept"})
        self.seen.add(message_id)
        self.received += 1
        return _reply(start_response, "200 OK", {"ok": True})


def webhook_app(secret: Secret, on_event: OnEvent, *, tolerance: float = TOLERANCE,
                remember: int = REMEMBER) -> WebhookApp:
    """A WSGI app receiving webhook deliveries for ``secret`` (see the module's doc):
    ``on_event(body, headers)`` gets each event or control body once. ``tolerance``: the
    seconds a delivery's timestamp may be off; ``remember``: how many webhook-ids are kept
    against repeats. Raises ValueError for a malformed ``secret``, TypeError for an
    ``on_event`` that is not callable."""
    return WebhookApp(secret, on_event, tolerance=tolerance, remember=remember)


def _reply(start_response: Callable, status: str, body: dict,
           headers: list | None = None) -> list[bytes]:
    data = json.dumps(body).encode()
    start_response(status, [("Content-Type", "application/json"),
                            ("Content-Length", str(len(data))), *(headers or [])])
    return [data]
