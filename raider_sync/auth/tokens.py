"""The token endpoint and client identities: registration, client authentication, DPoP on
token requests, and the answers turned into token records.

Every function blocks on HTTP exchanges bounded by the :class:`~.wire.AuthHttp` timeout and
raises :class:`AuthError` naming the step (registration, token, refresh).
"""
from __future__ import annotations

import base64
import time
from dataclasses import dataclass, field
from urllib.parse import quote

from ..errors import AuthError
from .discovery import Discovered
from .jose import DPoPKey, client_assertion
from .wire import AuthHttp, json_object, oauth_failure

JWT_BEARER = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
#: the grants a dynamically registered client asks for (plus DEVICE_GRANT for the device flow)
CODE_GRANTS = ("authorization_code", "refresh_token")
_METHODS = ("none", "client_secret_basic", "client_secret_post")


@dataclass
class Client:
    """A client identity at one authorization server. ``method`` is its token endpoint auth
    method (none, client_secret_basic, client_secret_post, private_key_jwt); ``grant_types``
    those a registration asked for (empty: not known, as for a configured client)."""
    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    method: str = "none"
    redirect_uris: list[str] = field(default_factory=list)
    private_key_pem: str | None = field(default=None, repr=False)
    algorithm: str = "ES256"
    grant_types: list[str] = field(default_factory=list)

    def record(self) -> dict:
        record = {"client_id": self.client_id, "client_secret": self.client_secret,
                  "token_endpoint_auth_method": self.method, "redirect_uris": self.redirect_uris}
        if self.grant_types:
            record["grant_types"] = self.grant_types
        return record

    @classmethod
    def from_record(cls, data: dict) -> "Client":
        # a record written before grant types were kept registered the code grants only
        return cls(data["client_id"], data.get("client_secret"),
                   data.get("token_endpoint_auth_method") or "none",
                   list(data.get("redirect_uris") or []),
                   grant_types=list(data.get("grant_types") or CODE_GRANTS))


def pre_registered(client_id: str, secret: str | None, metadata: dict) -> Client:
    """A configured client: basic when the AS lists it (or lists nothing), else post."""
    if not secret:
        return Client(client_id)
    listed = metadata.get("token_endpoint_auth_methods_supported")
    if not listed or "client_secret_basic" in listed or "client_secret_post" not in listed:
        return Client(client_id, secret, "client_secret_basic")
    return Client(client_id, secret, "client_secret_post")


def register(http: AuthHttp, disc: Discovered, redirect_uri: str, *, client_name: str,
             scope: str | None, deadline: float | None,
             grant_types: tuple[str, ...] | list[str] = CODE_GRANTS) -> Client:
    """Dynamic client registration (RFC 7591) for ``grant_types``. Raises
    AuthError(step="registration")."""
    step = "registration"
    endpoint = disc.endpoint("registration_endpoint")
    if endpoint is None:
        raise AuthError(f"{step}: the authorization server {disc.issuer} offers neither client "
                        f"ID metadata documents nor dynamic registration; this server needs a "
                        f"pre-registered client (oauth.clientId)", step=step)
    listed = disc.metadata.get("token_endpoint_auth_methods_supported") or []
    method = next((m for m in listed if m in _METHODS), "none" if not listed else None)
    if method is None:
        raise AuthError(f"{step}: the authorization server lists no token endpoint auth "
                        f"method raider_sync supports ({', '.join(map(str, listed))})", step=step)
    body = {"client_name": client_name, "redirect_uris": [redirect_uri],
            "grant_types": list(grant_types),
            "response_types": ["code"], "application_type": "native",
            "token_endpoint_auth_method": method}
    if scope:
        body["scope"] = scope
    response = http.request("POST", endpoint, step=step, deadline=deadline, json=body)
    if response.status_code not in (200, 201):
        raise oauth_failure(response, step, f"registration at {endpoint}")
    answer = json_object(response, step)
    if not isinstance(answer.get("client_id"), str) or not answer["client_id"]:
        raise AuthError(f"{step}: the registration answer has no client_id", step=step)
    used = answer.get("token_endpoint_auth_method") or method
    secret = answer.get("client_secret") if isinstance(answer.get("client_secret"), str) else None
    granted = answer.get("grant_types")
    granted = ([g for g in granted if isinstance(g, str)] if isinstance(granted, list)
               else list(grant_types))
    return Client(answer["client_id"], secret, used, [redirect_uri], grant_types=granted)


def tokens_from(answer: dict, *, requested_scope: str | None, step: str,
                previous: dict | None = None) -> dict:
    """A token record from a token endpoint answer (``expires_at`` in unix seconds)."""
    token = answer.get("access_token")
    if not isinstance(token, str) or not token:
        raise AuthError(f"{step}: the token answer has no access_token", step=step)
    record = {"access_token": token,
              "token_type": str(answer.get("token_type") or "Bearer"),
              "scope": answer.get("scope") if isinstance(answer.get("scope"), str)
              else requested_scope if requested_scope is not None
              else (previous or {}).get("scope"),
              "refresh_token": answer.get("refresh_token")
              or (previous or {}).get("refresh_token")}
    expires = answer.get("expires_in")
    if isinstance(expires, (int, float)) and not isinstance(expires, bool):
        record["expires_at"] = time.time() + float(expires)
    return record


class TokenEndpoint:
    """POSTs to one authorization server's token (and device) endpoints with a client's
    authentication and, when ``dpop`` is set, a DPoP proof (retried once with the server's
    nonce on ``use_dpop_nonce``)."""

    def __init__(self, http: AuthHttp, disc: Discovered, dpop: DPoPKey | None,
                 nonces: dict[str, str]):
        self.http = http
        self.disc = disc
        self.dpop = dpop
        self.nonces = nonces

    @property
    def url(self) -> str:
        endpoint = self.disc.endpoint("token_endpoint")
        if endpoint is None:
            raise AuthError(f"token: the authorization server {self.disc.issuer} has no "
                            f"token_endpoint", step="token")
        return endpoint

    def authenticate(self, form: dict, headers: dict, client: Client | None) -> None:
        if client is None:
            return
        if client.method == "client_secret_basic" and client.client_secret is not None:
            pair = f"{quote(client.client_id, safe='')}:{quote(client.client_secret, safe='')}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        elif client.method == "private_key_jwt" and client.private_key_pem:
            form["client_id"] = client.client_id
            form["client_assertion_type"] = JWT_BEARER
            form["client_assertion"] = client_assertion(
                client.client_id, client.private_key_pem, self.disc.issuer, client.algorithm)
        else:
            form["client_id"] = client.client_id
            if client.method == "client_secret_post" and client.client_secret is not None:
                form["client_secret"] = client.client_secret

    def post(self, form: dict, client: Client | None, *, step: str = "token",
             deadline: float | None = None, url: str | None = None,
             what: str = "the token endpoint") -> dict:
        """POST ``form`` (plus client authentication) to ``url`` (default the token endpoint;
        ``what`` names it in errors); the answer's JSON object. Raises AuthError with the
        server's error and error_description."""
        url = url or self.url
        for attempt in (1, 2):
            body = dict(form)
            headers: dict[str, str] = {}
            self.authenticate(body, headers, client)
            if self.dpop is not None:
                headers["DPoP"] = self.dpop.proof("POST", url, nonce=self.nonces.get(url))
            response = self.http.request("POST", url, step=step, deadline=deadline,
                                         data=body, headers=headers)
            nonce = response.headers.get("dpop-nonce")
            if nonce and self.dpop is not None:
                self.nonces[url] = nonce
            if response.status_code == 200:
                return json_object(response, step)
            failure = oauth_failure(response, step, f"{what} {url}")
            if attempt == 1 and failure.error == "use_dpop_nonce" and nonce:
                continue
            raise failure
        raise AssertionError("unreachable")  # pragma: no cover
