"""The ways to a token: the authorization-code flow with PKCE (a person approves), the device
authorization grant (RFC 8628), refresh, and grants without a person: client credentials
(``client_secret_basic``, ``client_secret_post``, ``private_key_jwt``), JWT bearer assertions
(RFC 7523, workload identity), token exchange for enterprise-managed authorization
(ID-JAG) and token exchange on behalf of a subject (RFC 8693). Each blocks on bounded HTTP
exchanges and raises AuthError naming the step.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Callable
from urllib.parse import parse_qs, urlencode, urlsplit

from ..errors import AuthError
from .consent import Consent
from .tokens import DEVICE_GRANT, Client, TokenEndpoint, tokens_from

JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
JWT_TOKEN = "urn:ietf:params:oauth:token-type:jwt"
ACCESS_TOKEN = "urn:ietf:params:oauth:token-type:access_token"

Secret = str | Callable[[], str]


def _value(secret: Secret) -> str:
    return secret() if callable(secret) else secret


def pkce_pair() -> tuple[str, str]:
    """A PKCE verifier (86 characters, 512 random bits) and its S256 challenge."""
    verifier = secrets.token_urlsafe(64)
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def authorization_code(endpoint: TokenEndpoint, client: Client, consent: Consent,
                       redirect_uri: str, scope: str | None, *,
                       deadline: float | None = None) -> dict:
    """Authorize in the person's browser (through ``consent``), check the redirect (error,
    state in constant time, RFC 9207 ``iss``, code), then redeem the code."""
    disc = endpoint.disc
    authorize = disc.endpoint("authorization_endpoint")
    if authorize is None:
        raise AuthError(f"consent: the authorization server {disc.issuer} has no "
                        f"authorization_endpoint", step="consent")
    verifier, challenge = pkce_pair()
    state = secrets.token_urlsafe(32)
    params = {"response_type": "code", "client_id": client.client_id,
              "redirect_uri": redirect_uri, "state": state, "code_challenge": challenge,
              "code_challenge_method": "S256", "resource": disc.resource}
    if scope:
        params["scope"] = scope
    joiner = "&" if urlsplit(authorize).query else "?"
    left = None if deadline is None else max(1.0, deadline - time.monotonic())
    landed = consent(f"{authorize}{joiner}{urlencode(params)}", left)
    code = check_redirect(landed, state, disc.announced, disc.metadata)
    answer = endpoint.post({"grant_type": "authorization_code", "code": code,
                            "redirect_uri": redirect_uri, "code_verifier": verifier,
                            "resource": disc.resource}, client, deadline=deadline)
    return tokens_from(answer, requested_scope=scope, step="token")


def check_redirect(landed: str, state: str, issuer: str, metadata: dict) -> str:
    """The ``code`` of the redirected URL, after its error, state and iss are checked
    (``iss`` equal to ``issuer``, the metadata's own, byte for byte)."""
    step = "consent"
    query = parse_qs(urlsplit(landed).query)

    def one(name: str) -> str | None:
        values = query.get(name)
        return values[0] if values else None

    if one("error"):
        description = one("error_description")
        raise AuthError(f"{step}: the authorization server refused: {one('error')}"
                        + (f" ({description[:200]})" if description else ""), step=step,
                        error=one("error"), error_description=description)
    got = one("state")
    if got is None or not hmac.compare_digest(got.encode(), state.encode()):
        raise AuthError(f"{step}: the redirect's state does not match the request's; "
                        f"refusing the code", step=step, error="invalid_state")
    iss = one("iss")
    if iss is not None and iss != issuer:
        raise AuthError(f"{step}: the redirect's iss {iss!r} is not the issuer {issuer!r}; "
                        f"refusing the code", step=step, error="invalid_issuer")
    if iss is None and metadata.get("authorization_response_iss_parameter_supported") is True:
        raise AuthError(f"{step}: the redirect carries no iss although the authorization "
                        f"server promises it; refusing the code", step=step,
                        error="invalid_issuer")
    code = one("code")
    if not code:
        raise AuthError(f"{step}: the redirect carries no code", step=step)
    return code


def device_code(endpoint: TokenEndpoint, client: Client,
                show: Callable[[str, str, str | None], object], scope: str | None, *,
                timeout: float, stop: threading.Event | None = None) -> dict:
    """The device authorization grant: show the code, poll the token endpoint at the
    server's interval until approved, denied, expired or ``timeout`` s passed."""
    disc = endpoint.disc
    url = disc.endpoint("device_authorization_endpoint")
    if url is None:
        raise AuthError("consent: no device_authorization_endpoint", step="consent")
    form = {"resource": disc.resource}
    if scope:
        form["scope"] = scope
    started = endpoint.post(form, client, step="consent", url=url,
                            what="the device authorization endpoint")
    device, user_code = started.get("device_code"), started.get("user_code")
    uri = started.get("verification_uri") or started.get("verification_url")
    if not (isinstance(device, str) and isinstance(user_code, str) and isinstance(uri, str)
            and device and user_code and uri):
        raise AuthError("consent: the device authorization answer lacks device_code, "
                        "user_code or verification_uri", step="consent")
    show(uri, user_code, started.get("verification_uri_complete"))
    interval = float(started.get("interval") or 5)
    expires = float(started.get("expires_in") or timeout)
    end = time.monotonic() + min(timeout, expires)
    stop = stop or threading.Event()
    while True:
        if time.monotonic() + interval > end or stop.wait(interval):
            raise AuthError("consent: the device code was not approved in time",
                            step="consent", error="expired_token")
        try:
            answer = endpoint.post({"grant_type": DEVICE_GRANT, "device_code": device,
                                    "resource": disc.resource}, client)
        except AuthError as exc:
            if exc.error == "authorization_pending":
                continue
            if exc.error == "slow_down":
                interval += 5
                continue
            exc.step = "consent" if exc.error in ("access_denied", "expired_token") else exc.step
            raise
        return tokens_from(answer, requested_scope=scope, step="token")


def refresh(endpoint: TokenEndpoint, client: Client | None, tokens: dict, *,
            deadline: float | None = None) -> dict:
    """Redeem the refresh token; the old refresh token and scope are kept when the answer
    omits them. Raises AuthError(step="refresh") (``invalid_grant``: it was revoked)."""
    form = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"],
            "resource": endpoint.disc.resource}
    try:
        answer = endpoint.post(form, client, step="refresh", deadline=deadline)
    except AuthError as exc:
        exc.step = "refresh"
        raise
    return tokens_from(answer, requested_scope=None, step="refresh", previous=tokens)


# -- grants without a person ---------------------------------------------------------------

class Grant:
    """A way to a token without a person. ``client(metadata)`` is the identity it
    authenticates with; ``fetch(endpoint, scope)`` runs it."""

    def client(self, metadata: dict) -> Client | None:
        return None

    def fetch(self, endpoint: TokenEndpoint, scope: str | None, *,
              deadline: float | None = None) -> dict:
        raise NotImplementedError


@dataclass
class ClientCredentials(Grant):
    """The client credentials grant. ``method``: client_secret_basic (default with a secret),
    client_secret_post, or private_key_jwt (with ``private_key_pem``, signed ``algorithm``)."""
    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    method: str | None = None
    private_key_pem: str | None = field(default=None, repr=False)
    algorithm: str = "ES256"

    def __post_init__(self) -> None:
        if self.method is None:
            self.method = ("private_key_jwt" if self.private_key_pem else "client_secret_basic")
        if self.method not in ("client_secret_basic", "client_secret_post", "private_key_jwt"):
            raise ValueError(f"method: {self.method!r} is not client_secret_basic, "
                             f"client_secret_post or private_key_jwt")
        if self.method == "private_key_jwt" and not self.private_key_pem:
            raise ValueError("private_key_pem: private_key_jwt needs a private key")
        if self.method != "private_key_jwt" and not self.client_secret:
            raise ValueError(f"client_secret: {self.method} needs a client secret")

    def client(self, metadata: dict) -> Client:
        return Client(self.client_id, self.client_secret, self.method or "",
                      private_key_pem=self.private_key_pem, algorithm=self.algorithm)

    def fetch(self, endpoint, scope, *, deadline=None):
        form = {"grant_type": "client_credentials", "resource": endpoint.disc.resource}
        if scope:
            form["scope"] = scope
        answer = endpoint.post(form, self.client(endpoint.disc.metadata), deadline=deadline)
        return tokens_from(answer, requested_scope=scope, step="token")


def PrivateKeyJWT(client_id: str, private_key_pem: str,  # noqa: N802 - reads as a class
                  algorithm: str = "ES256") -> ClientCredentials:
    """Client credentials authenticated with a signed assertion (``private_key_jwt``)."""
    return ClientCredentials(client_id, method="private_key_jwt",
                             private_key_pem=private_key_pem, algorithm=algorithm)


@dataclass
class JwtBearer(Grant):
    """The JWT bearer grant (RFC 7523): ``assertion`` (a string, or a callable returning a
    fresh one, e.g. a workload identity token). Its failure is final: no retry, no other
    grant."""
    assertion: Secret = field(repr=False)
    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)

    def client(self, metadata: dict) -> Client | None:
        if self.client_id is None:
            return None
        return Client(self.client_id, self.client_secret,
                      "client_secret_basic" if self.client_secret else "none")

    def fetch(self, endpoint, scope, *, deadline=None):
        form = {"grant_type": JWT_BEARER_GRANT, "assertion": _value(self.assertion),
                "resource": endpoint.disc.resource}
        if scope:
            form["scope"] = scope
        answer = endpoint.post(form, self.client(endpoint.disc.metadata), deadline=deadline)
        return tokens_from(answer, requested_scope=scope, step="token")


@dataclass
class IdJag(Grant):
    """Enterprise-managed authorization: exchange the person's ID token at the identity
    provider (``idp_token_endpoint``) for an ID-JAG, then present it to the MCP server's
    authorization server as a JWT bearer assertion (client ``client_id``/``client_secret``)."""
    idp_token_endpoint: str
    id_token: Secret = field(repr=False)
    idp_client_id: str
    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    idp_client_secret: str | None = field(default=None, repr=False)

    def client(self, metadata: dict) -> Client:
        return Client(self.client_id, self.client_secret,
                      "client_secret_basic" if self.client_secret else "none")

    def fetch(self, endpoint, scope, *, deadline=None):
        disc = endpoint.disc
        form = {"grant_type": TOKEN_EXCHANGE, "requested_token_type": ID_JAG,
                "subject_token": _value(self.id_token), "subject_token_type": ID_TOKEN,
                "audience": disc.issuer, "resource": disc.resource}
        if scope:
            form["scope"] = scope
        idp = Client(self.idp_client_id, self.idp_client_secret,
                     "client_secret_post" if self.idp_client_secret else "none")
        idp_endpoint = TokenEndpoint(endpoint.http, disc, None, {})
        exchanged = idp_endpoint.post(form, idp, deadline=deadline, url=self.idp_token_endpoint)
        jag = exchanged.get("access_token")
        if not isinstance(jag, str) or not jag:
            raise AuthError("token: the identity provider's exchange answer has no "
                            "access_token (the ID-JAG)", step="token")
        grant = JwtBearer(jag, self.client_id, self.client_secret)
        return grant.fetch(endpoint, scope, deadline=deadline)


@dataclass
class TokenExchange(Grant):
    """RFC 8693 token exchange: ``subject_token`` (a string, or ``fn(as_issuer)`` returning a
    fresh one for that authorization server) of type ``subject_token_type`` is exchanged, by
    the client ``client_id`` (``client_secret`` sent as ``method``), for an access token to the
    server's resource (and ``audience``, when given). Raises AuthError(step="token") with the
    server's error when it refuses."""
    subject_token: str | Callable[[str], str] = field(repr=False)
    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    method: str = "client_secret_basic"
    subject_token_type: str = JWT_TOKEN
    audience: str | None = None

    def client(self, metadata: dict) -> Client:
        return Client(self.client_id, self.client_secret,
                      self.method if self.client_secret else "none")

    def fetch(self, endpoint, scope, *, deadline=None):
        disc = endpoint.disc
        subject = self.subject_token(disc.issuer) if callable(self.subject_token) \
            else self.subject_token
        form = {"grant_type": TOKEN_EXCHANGE, "subject_token": subject,
                "subject_token_type": self.subject_token_type,
                "requested_token_type": ACCESS_TOKEN, "resource": disc.resource}
        if self.audience:
            form["audience"] = self.audience
        if scope:
            form["scope"] = scope
        answer = endpoint.post(form, self.client(disc.metadata), deadline=deadline)
        return tokens_from(answer, requested_scope=scope, step="token")
