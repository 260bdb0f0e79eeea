"""The signature of a webhook delivery (the Standard Webhooks profile the events draft uses),
with no I/O.

    key = secret_key("whsec_...")                      # the HMAC key; ValueError if malformed
    headers = signed_headers(key, "evt_1", body)       # webhook-id, -timestamp, -signature
    problem = signature_problem(headers, body, key, now=time.time())   # None when it verifies

The signed content is ``webhook-id + "." + webhook-timestamp + "." + body`` (the raw body
bytes); the signature is ``v1,`` and the base64 of its HMAC-SHA256 under the secret's bytes
(the base64 after ``whsec_``, 24 to 64 of them). A header may list several signatures,
space-separated (a secret being rotated): one that verifies is enough. Comparisons are
constant-time (:func:`hmac.compare_digest`).
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import time
from typing import Mapping

SECRET_PREFIX = "whsec_"
ID = "webhook-id"
TIMESTAMP = "webhook-timestamp"
SIGNATURE = "webhook-signature"
SUBSCRIPTION = "X-MCP-Subscription-Id"
#: seconds a receiver accepts a delivery's timestamp away from its clock, by default
TOLERANCE = 300


def secret_key(secret: object) -> bytes:
    """The HMAC key of a ``whsec_`` secret. Raises ValueError naming what is wrong."""
    if not isinstance(secret, str) or not secret.startswith(SECRET_PREFIX):
        raise ValueError("secret must be a string beginning with whsec_")
    try:
        key = base64.b64decode(secret[len(SECRET_PREFIX):], validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("secret: the part after whsec_ is not base64") from None
    if not 24 <= len(key) <= 64:
        raise ValueError(f"secret must hold 24 to 64 bytes, not {len(key)}")
    return key


def signature(key: bytes, message_id: str, timestamp: int | str, body: bytes) -> str:
    """The ``v1,<base64>`` signature of one delivery."""
    signed = f"{message_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


def signed_headers(key: bytes, message_id: str, body: bytes, now: float | None = None,
                   subscription_id: str | None = None) -> dict[str, str]:
    """The headers of one delivery of ``body``, signed at ``now`` (default: the clock)."""
    stamp = int(time.time() if now is None else now)
    headers = {"Content-Type": "application/json", ID: message_id, TIMESTAMP: str(stamp),
               SIGNATURE: signature(key, message_id, stamp, body)}
    if subscription_id is not None:
        headers[SUBSCRIPTION] = subscription_id
    return headers


def signature_problem(headers: Mapping[str, str], body: bytes, key: bytes, *, now: float,
                      tolerance: float = TOLERANCE) -> str | None:
    """Why a delivery does not verify (``headers`` looked up case-insensitively), or None
    when it does: a missing header, a timestamp more than ``tolerance`` s from ``now``, or
    no signature that matches."""
    lower = {str(k).lower(): v for k, v in headers.items()}
    message_id, stamp, signatures = lower.get(ID), lower.get(TIMESTAMP), lower.get(SIGNATURE)
    if not message_id or not stamp or not signatures:
        missing = [h for h, v in ((ID, message_id), (TIMESTAMP, stamp), (SIGNATURE, signatures))
                   if not v]
        return f"missing header {', '.join(missing)}"
    try:
        sent = int(stamp)
    except ValueError:
        return f"{TIMESTAMP} is not a whole number of seconds"
    if abs(now - sent) > tolerance:
        return f"{TIMESTAMP} is more than {tolerance:g} s from now"
    expected = signature(key, message_id, stamp, body).encode()
    for candidate in signatures.split():
        if hmac.compare_digest(candidate.encode(), expected):
            return None
    return "no signature matches"
