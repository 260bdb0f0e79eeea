"""Identity to upstreams: a token for the calling key, by RFC 8693 token exchange.

    {"identity": {"issuer": "https://gateway.example.com", "signing_key_env": "GATEWAY_KEY"},
     "servers": [{"name": "tracker", "url": "https://tracker.example.com/mcp",
                  "token_exchange": {"client_id": "gateway", "client_secret_env": "TRACKER_SECRET"}}]}

For a server with ``token_exchange``, the gateway stands for the caller: it mints a short JWT
for the key (``iss`` the config's ``identity.issuer``, ``sub`` the key's id, ``aud`` the
authorization server's issuer, signed with the private key in ``$signing_key_env``), and
exchanges it at the upstream's authorization server (found as any client finds it, from the
upstream's protected resource metadata, or ``auth_server_metadata_url``) for an access token
to that upstream (``resource`` its URL, plus ``audience`` when set). The authorization server
trusts the gateway's public key as an issuer of subject tokens, so no per-key secret has to be
handed to it, and it sees which customer each token is for.

One :class:`Exchanger` per server keeps one token per key, in memory, and exchanges again
shortly before it runs out (the :class:`~raider_sync.auth.OAuth` of that key and server).
Tokens are kept per server, so a token for one upstream is never sent to another. Getting a
token blocks on bounded HTTP (the server's ``connect`` timeout per request) and raises
AuthError; minting needs PyJWT and cryptography (the ``oauth`` extra).
"""
from __future__ import annotations

import re
import secrets
import threading
import time
from typing import Any, Mapping, Optional

from pydantic import BaseModel, ConfigDict, Field

from ..errors import AuthError

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_METHODS = ("client_secret_basic", "client_secret_post")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class IdentitySettings(_Model):
    """The config's ``identity``: the gateway as the issuer of subject tokens for its keys."""

    issuer: str = Field(min_length=1)
    signing_key_env: str
    algorithm: str = "ES256"
    lifetime: int = Field(default=300, gt=0, le=3600)


class TokenExchangeSettings(_Model):
    """A server's ``token_exchange``: the gateway's client at the upstream's authorization
    server, and what it asks for."""

    client_id: str = Field(min_length=1)
    client_secret_env: str
    method: str = "client_secret_basic"
    audience: Optional[str] = None
    scopes: Optional[list[str]] = None
    auth_server_metadata_url: Optional[str] = None


class SubjectTokens:
    """Mints the subject token of a key: a JWT signed with the gateway's private key."""

    def __init__(self, settings: IdentitySettings, private_key_pem: str):
        self.issuer, self.algorithm, self.lifetime = (settings.issuer, settings.algorithm,
                                                      settings.lifetime)
        self._key = private_key_pem

    def __repr__(self) -> str:
        return f"<SubjectTokens {self.issuer} {self.algorithm}>"

    def mint(self, key_id: str, audience: str) -> str:
        """A fresh subject token for ``key_id``, for the authorization server ``audience``.
        Raises AuthError when the key cannot sign (or PyJWT is missing)."""
        try:
            import jwt
        except ImportError as exc:
            raise AuthError("token exchange: minting subject tokens needs PyJWT and "
                            "cryptography: pip install 'raider_sync[oauth]'", step="token") from exc
        now = int(time.time())
        claims = {"iss": self.issuer, "sub": key_id, "aud": audience, "iat": now,
                  "exp": now + self.lifetime, "jti": secrets.token_urlsafe(16)}
        try:
            return jwt.encode(claims, self._key, algorithm=self.algorithm)
        except (ValueError, TypeError, NotImplementedError, jwt.PyJWTError) as exc:
            raise AuthError(f"token exchange: cannot sign the subject token with the "
                            f"identity's key ({type(exc).__name__})", step="token") from exc


class Exchanger:
    """The tokens of one upstream server, one per key (see the module doc). Thread-safe."""

    def __init__(self, server: str, url: str, settings: TokenExchangeSettings, secret: str,
                 subjects: SubjectTokens, timeout: float):
        self.server, self.url, self.settings = server, url, settings
        self._secret, self._subjects, self._timeout = secret, subjects, timeout
        self._auths: dict[str, Any] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<Exchanger {self.server} {len(self._auths)} keys>"

    def _auth(self, key_id: str):
        from ..auth import MemoryTokenStore, OAuth
        from ..auth.grants import TokenExchange

        with self._lock:
            auth = self._auths.get(key_id)
            if auth is None:
                settings = self.settings
                grant = TokenExchange(lambda issuer: self._subjects.mint(key_id, issuer),
                                      settings.client_id, self._secret, method=settings.method,
                                      audience=settings.audience)
                auth = OAuth(grant=grant, store=MemoryTokenStore(), scopes=settings.scopes,
                             auth_server_metadata_url=settings.auth_server_metadata_url,
                             timeout=self._timeout).bind(self.url, f"{self.server} ({key_id})")
                self._auths[key_id] = auth
        return auth

    def headers(self, key_id: str) -> dict[str, str]:
        """The ``Authorization`` header with ``key_id``'s token for this server: the one in
        memory, or a new one exchanged now (when there is none or it runs out within a
        minute). Blocks on the exchange; raises AuthError (the server's ``error`` on it)."""
        return self._auth(key_id).token_headers("POST", self.url)

    def close(self) -> None:
        """Close the connections to the authorization server (tokens are kept)."""
        with self._lock:
            auths = list(self._auths.values())
        for auth in auths:
            auth.close()


def exchangers(servers: list, identity: Optional[IdentitySettings], timeouts: Any,
               env: Mapping[str, str], problems: list[str]) -> dict[str, Exchanger]:
    """An :class:`Exchanger` per relayed server of ``servers`` (``(where, server)`` pairs)
    with ``token_exchange``; what is wrong goes to ``problems``, naming the field."""
    wanted = [(where, s) for where, s in servers if s.token_exchange is not None and s.relayed]
    if not wanted:
        return {}
    subjects = _subjects(identity, env, problems)
    out = {}
    for where, server in wanted:
        settings = server.token_exchange
        found = []
        if server.credential is not None or server.oauth is not None:
            found.append("a server takes its credential from one of credential, oauth or "
                         "token_exchange")
        if settings.method not in _METHODS:
            found.append(f"method: {settings.method!r} is not {' or '.join(_METHODS)}")
        secret = env.get(settings.client_secret_env, "") \
            if _ENV_NAME.match(settings.client_secret_env) else ""
        if not secret:
            found.append(f"client_secret_env: environment variable {settings.client_secret_env} "
                         f"is not set")
        if identity is None:
            found.append("the config has no identity (the issuer of the keys' subject tokens)")
        problems.extend(f"{where}.token_exchange" + (": " if p.startswith(("a ", "the "))
                                                     else ".") + p for p in found)
        if not found and subjects is not None:
            timeout = (server.timeouts or timeouts).connect
            out[server.name] = Exchanger(server.name, server.url or "", settings, secret,
                                         subjects, timeout)
    return out


def _subjects(identity: Optional[IdentitySettings], env: Mapping[str, str],
              problems: list[str]) -> Optional[SubjectTokens]:
    if identity is None:
        return None
    pem = env.get(identity.signing_key_env, "") if _ENV_NAME.match(identity.signing_key_env) \
        else ""
    if not pem:
        problems.append(f"identity.signing_key_env: environment variable "
                        f"{identity.signing_key_env} is not set")
        return None
    subjects = SubjectTokens(identity, pem)
    try:
        subjects.mint("check", "check")  # a key that cannot sign is a config problem
    except AuthError as exc:
        problems.append(f"identity.signing_key_env: {exc}")
        return None
    return subjects


def failure_message(exchanged: bool, exc: AuthError) -> str:
    """What a client is told when the gateway got no upstream token: for a token exchange
    (``exchanged``), that the exchange for its key failed, with the authorization server's
    error code."""
    if not exchanged:
        return "the gateway could not get a token for the MCP server"
    code = f" ({exc.error})" if exc.error else ""
    return f"the token exchange for this key at the MCP server's authorization server failed{code}"
