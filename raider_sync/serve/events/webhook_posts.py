"""One signed POST to a webhook endpoint, and what its outcome is called.

    poster = Poster(timeout=5.0)
    error = poster.post(url, key, "evt_1", body, subscription_id)   # None, or a category
    poster.close()

A delivery is signed as the events draft says (:mod:`raider_sync.protocol.webhooks`), anew
for every attempt, and never follows a redirect. Its outcome is None for a 2xx answer,
``"gone"`` for a 410 (the receiver does not want it again), else one of the draft's
``lastError`` categories: ``connection_refused``, ``timeout``, ``tls_error``, ``http_4xx``,
``http_5xx`` (never the endpoint's own words). :func:`url_problem` says which callback URLs
are accepted. :meth:`Poster.post` blocks at most ``timeout`` seconds (connect and read each).
"""
from __future__ import annotations

import threading
from urllib.parse import urlsplit

import requests

from ...protocol.webhooks import signed_headers
from ..rebinding import is_loopback

GONE = "gone"


def url_problem(url: object, loopback: bool) -> str | None:
    """Why ``url`` cannot be a callback URL, else None: it must be ``https://``; with
    ``loopback``, ``http://`` to a loopback host (localhost, 127.0.0.0/8, ::1) is accepted
    too (a receiver on the same machine)."""
    if not isinstance(url, str) or not url:
        return "delivery.url must be a non-empty string"
    parts = urlsplit(url)
    if not parts.hostname:
        return "delivery.url must be an absolute URL with a host"
    if parts.scheme == "https":
        return None
    if parts.scheme == "http" and loopback and is_loopback(parts.hostname):
        return None
    return "delivery.url must use https" + (" (or http to a loopback host)" if loopback else "")


class Poster:
    """Signed POSTs over one pool of connections. Thread-safe; :meth:`close` is safe twice."""

    def __init__(self, timeout: float = 5.0):
        self.timeout = timeout
        self._http = requests.Session()
        self._http.trust_env = False  # a delivery goes where it is addressed, not via a proxy
        self._lock = threading.Lock()

    def post(self, url: str, key: bytes, message_id: str, body: bytes,
             subscription_id: str | None = None) -> tuple[str | None, bytes]:
        """POST ``body`` to ``url``, signed with ``key``: (the outcome, the answer's body,
        at most 64 KiB; empty unless 2xx). Blocks at most ``timeout`` s per phase."""
        headers = signed_headers(key, message_id, body, subscription_id=subscription_id)
        try:
            with self._http.post(url, data=body, headers=headers, timeout=self.timeout,
                                 allow_redirects=False, stream=True) as answer:
                status = answer.status_code
                text = answer.raw.read(65536, decode_content=True) if 200 <= status < 300 else b""
        except requests.exceptions.SSLError:
            return "tls_error", b""
        except requests.exceptions.Timeout:
            return "timeout", b""
        except (requests.exceptions.RequestException, OSError):
            return "connection_refused", b""
        if 200 <= status < 300:
            return None, text
        if status == 410:
            return GONE, b""
        return ("http_5xx" if status >= 500 else "http_4xx"), b""

    def close(self) -> None:
        self._http.close()
