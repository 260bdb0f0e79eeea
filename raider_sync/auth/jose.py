"""JWTs the client signs: ``private_key_jwt`` client assertions (RFC 7523) and DPoP proofs
(RFC 9449). Signing is PyJWT's with ``cryptography`` (the ``oauth`` extra); nothing here is
hand-written cryptography.
"""
from __future__ import annotations

import base64
import hashlib
import secrets
import time
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..errors import AuthError

_EXTRA = "install the oauth extra: pip install 'raider_sync[oauth]'"


def _jwt(step: str):
    try:
        import jwt
        from cryptography.hazmat.primitives.asymmetric import ec  # noqa: F401
    except ImportError as exc:
        raise AuthError(f"{step}: signing JWTs needs PyJWT and cryptography; {_EXTRA}",
                        step=step) from exc
    return jwt


def client_assertion(client_id: str, private_key_pem: str, audience: str,
                     algorithm: str = "ES256", lifetime: int = 300) -> str:
    """A signed ``private_key_jwt`` client assertion for ``audience`` (the AS issuer)."""
    jwt = _jwt("token")
    now = int(time.time())
    claims = {"iss": client_id, "sub": client_id, "aud": audience, "iat": now,
              "exp": now + lifetime, "jti": secrets.token_urlsafe(16)}
    try:
        return jwt.encode(claims, private_key_pem, algorithm=algorithm)
    except (ValueError, TypeError, jwt.PyJWTError) as exc:
        raise AuthError(f"token: cannot sign the client assertion with the given key "
                        f"({type(exc).__name__})", step="token") from exc


def _htu(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


class DPoPKey:
    """One ES256 key for a session's DPoP proofs; the private half never leaves it."""

    def __init__(self) -> None:
        jwt = _jwt("token")
        from cryptography.hazmat.primitives.asymmetric import ec
        self._key = ec.generate_private_key(ec.SECP256R1())
        self.public_jwk: dict[str, Any] = jwt.algorithms.ECAlgorithm.to_jwk(
            self._key.public_key(), as_dict=True)
        self._jwt = jwt

    def __repr__(self) -> str:
        return "<DPoPKey ES256>"

    def proof(self, method: str, url: str, *, access_token: str | None = None,
              nonce: str | None = None) -> str:
        """A fresh proof (new ``jti``) for one request."""
        claims: dict[str, Any] = {"jti": secrets.token_urlsafe(16), "htm": method.upper(),
                                  "htu": _htu(url), "iat": int(time.time())}
        if access_token is not None:
            digest = hashlib.sha256(access_token.encode("ascii")).digest()
            claims["ath"] = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
        if nonce is not None:
            claims["nonce"] = nonce
        return self._jwt.encode(claims, self._key, algorithm="ES256",
                                headers={"typ": "dpop+jwt", "jwk": self.public_jwk})
