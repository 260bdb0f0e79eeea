"""HTTP exchanges of the OAuth flow: bounded, and mapped to :class:`AuthError` in one place.

- :func:`parse_challenges`: the ``WWW-Authenticate`` header's challenges (``Bearer`` and
  ``DPoP``; quoted or bare values; parameter names case-insensitive).
- :class:`AuthHttp`: GETs of metadata and form/JSON POSTs to the authorization server, each
  bounded by ``timeout`` seconds (and a caller's deadline), each answer read as a JSON object or
  refused with an AuthError that names the step, the URL and what came instead (an HTML login
  page, a timeout, a 5xx).
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any, Mapping

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from ..errors import AuthError

#: seconds one exchange with an authorization server may take
HTTP_TIMEOUT = 30.0
#: bytes of an answer read at most (metadata and token answers are small)
MAX_BODY = 1 << 20

_PARAM = re.compile(r'([A-Za-z0-9_.-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s,]*)')
_SCHEME = re.compile(r'(?:^|,)\s*([A-Za-z][A-Za-z0-9_.+-]*)(?=\s+[A-Za-z0-9_.-]+\s*=|\s*(?:,|$))')


@dataclass
class Challenge:
    """One challenge of a ``WWW-Authenticate`` header."""
    scheme: str
    params: dict[str, str] = field(default_factory=dict)

    @property
    def error(self) -> str | None:
        return self.params.get("error")

    @property
    def scope(self) -> str | None:
        return self.params.get("scope")

    @property
    def resource_metadata(self) -> str | None:
        return self.params.get("resource_metadata")


def parse_challenges(header: str | None) -> list[Challenge]:
    """The challenges of a ``WWW-Authenticate`` value; schemes and names lower-cased."""
    if not header:
        return []
    starts = [(m.start(1), m.group(1).lower()) for m in _SCHEME.finditer(header)]
    out = []
    for i, (start, scheme) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(header)
        part = header[start + len(scheme):end]
        params = {}
        for name, value in _PARAM.findall(part):
            if value.startswith('"'):
                value = re.sub(r"\\(.)", r"\1", value[1:-1])
            params[name.lower()] = value
        out.append(Challenge(scheme, params))
    return out


def bearer_challenge(response: requests.Response) -> Challenge | None:
    """The Bearer (else DPoP) challenge of a 401/403 answer, else None."""
    challenges = parse_challenges(response.headers.get("www-authenticate"))
    for scheme in ("bearer", "dpop"):
        for challenge in challenges:
            if challenge.scheme == scheme:
                return challenge
    return None


def _metadata_session() -> requests.Session:
    """A session whose GETs (metadata documents) are tried once more when a kept-alive
    connection turns out closed by the host (a server that drops idle connections after a
    few seconds races the reuse). POSTs are never repeated: a code or a refresh token may
    be used once only."""
    session = requests.Session()
    retry = Retry(total=1, connect=1, read=1, status=0, redirect=0, other=0,
                  allowed_methods=frozenset({"GET"}), raise_on_status=False)
    for prefix in ("http://", "https://"):
        session.mount(prefix, HTTPAdapter(max_retries=retry))
    return session


class AuthHttp:
    """Exchanges with authorization servers and metadata hosts (one ``requests.Session``)."""

    def __init__(self, session: requests.Session | None = None,
                 timeout: float = HTTP_TIMEOUT, protocol_version: str | None = None):
        self.session = session or _metadata_session()
        self.timeout = timeout
        self.protocol_version = protocol_version

    def close(self) -> None:
        """Close the session and its pooled connections now: urllib3 2 leaves a cleared
        pool's sockets to the garbage collector, and the traceback of an AuthError (a
        refused request's answer refers to its pool) can keep them open long after."""
        for adapter in self.session.adapters.values():
            manager = getattr(adapter, "poolmanager", None)
            if manager is None:
                continue
            for key in list(manager.pools.keys()):
                pool = manager.pools.get(key)
                if pool is not None:
                    pool.close()
        self.session.close()

    def _bound(self, deadline: float | None) -> float:
        if deadline is None:
            return self.timeout
        left = deadline - time.monotonic()
        if left <= 0:
            raise AuthError("the deadline passed during authorization", step="authorization")
        return min(self.timeout, left)

    def request(self, method: str, url: str, *, step: str, deadline: float | None = None,
                headers: Mapping[str, str] | None = None, **kwargs: Any) -> requests.Response:
        """One exchange, its body read (at most 1 MiB). Raises AuthError naming ``step``
        when the host cannot be reached or does not answer within the bound."""
        bound = self._bound(deadline)
        merged = {"Accept": "application/json"}
        if self.protocol_version:
            merged["MCP-Protocol-Version"] = self.protocol_version
        merged.update(headers or {})
        try:
            response = self.session.request(method, url, headers=merged, timeout=(
                min(bound, 10.0), bound), allow_redirects=False, stream=True, **kwargs)
            try:
                response._content = response.raw.read(MAX_BODY, decode_content=True)
            finally:
                response.close()
        except requests.exceptions.Timeout as exc:
            raise AuthError(f"{step}: {url} did not answer within {bound:g} s",
                            step=step) from exc
        except (requests.exceptions.RequestException, OSError) as exc:
            raise AuthError(f"{step}: cannot reach {url}: {type(exc).__name__}",
                            step=step) from exc
        except Exception as exc:  # noqa: BLE001 - urllib3 read errors of a broken answer
            raise AuthError(f"{step}: the answer of {url} broke off: {type(exc).__name__}",
                            step=step) from exc
        return response


def json_object(response: requests.Response, step: str) -> dict:
    """The answer's JSON object, or AuthError saying what came instead."""
    kind = response.headers.get("content-type", "").split(";")[0].strip() or "no content type"
    try:
        value = json.loads(response.content or b"")
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise AuthError(f"{step}: {response.url} answered HTTP {response.status_code} with "
                        f"{kind}, not a JSON object", step=step, status_code=response.status_code)
    return value


def oauth_failure(response: requests.Response, step: str, what: str) -> AuthError:
    """An error answer of an authorization server as AuthError, with its ``error`` and
    ``error_description`` (no part of the request is echoed)."""
    try:
        body = json.loads(response.content or b"")
    except ValueError:
        body = None
    error = description = None
    if isinstance(body, dict):
        error = body.get("error") if isinstance(body.get("error"), str) else None
        description = (body.get("error_description")
                       if isinstance(body.get("error_description"), str) else None)
    detail = f": {error}" if error else ""
    if description:
        detail += f" ({description[:200]})"
    if not error:
        kind = response.headers.get("content-type", "").split(";")[0].strip()
        detail = f" with {kind or 'no content type'}" if kind != "application/json" else ""
    return AuthError(f"{step}: {what} answered HTTP {response.status_code}{detail}", step=step,
                     error=error, error_description=description,
                     status_code=response.status_code)
