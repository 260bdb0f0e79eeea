"""The ``requestState`` of an ``input_required`` round (the stateless era): what the client
answered in earlier rounds of one request, carried by the client and signed by the server.

    state = seal(secret, "tools/call", "book", {"when": {...}})
    answers = unseal(secret, "tools/call", "book", state)   # McpError -32602 if tampered

The state is ``base64url(JSON).base64url(HMAC-SHA256)``. It is bound to the method and the
tool (or prompt, resource) name, so it cannot be replayed on another request, and it expires
(``max_age`` s). The answers are the client's own, so they are signed, not encrypted. Servers
behind a load balancer share one ``secret`` so that any of them can verify a round another
one began.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
import time
from typing import Any

from ..errors import McpError
from ..protocol.codes import INVALID_PARAMS

#: seconds a requestState stays valid
MAX_AGE = 3600.0


def new_secret() -> bytes:
    """A random secret for one server process."""
    return secrets.token_bytes(32)


def seal(secret: bytes, method: str, name: str, answers: dict[str, Any]) -> str:
    """The requestState carrying ``answers`` for ``method`` on ``name``."""
    body = json.dumps({"m": method, "n": name, "a": answers, "t": time.time(),
                       "r": secrets.token_hex(4)},  # each round's state differs
                      separators=(",", ":"), sort_keys=True).encode()
    payload = _b64(body)
    return f"{payload}.{_b64(_mac(secret, payload))}"


def unseal(secret: bytes, method: str, name: str, state: Any, *,
           max_age: float = MAX_AGE) -> dict[str, Any]:
    """The answers a requestState carries. Raises McpError -32602 when it is not a string
    this server signed, was made for another method or name, or is older than ``max_age``."""
    if not isinstance(state, str) or state.count(".") != 1:
        raise _refused("is not one this server issued")
    payload, mac = state.split(".")
    try:
        good = hmac.compare_digest(_unb64(mac), _mac(secret, payload))
        body = json.loads(_unb64(payload)) if good else None
    except (binascii.Error, ValueError):
        raise _refused("is not one this server issued") from None
    if not isinstance(body, dict):
        raise _refused("failed its integrity check")
    if body.get("m") != method or body.get("n") != name:
        raise _refused(f"was issued for another request, not {method} {name!r}")
    issued = body.get("t")
    if not isinstance(issued, (int, float)) or time.time() - issued > max_age:
        raise _refused("has expired; send the request again without it")
    answers = body.get("a")
    return answers if isinstance(answers, dict) else {}


def _refused(why: str) -> McpError:
    return McpError(INVALID_PARAMS, f"requestState {why}")


def _mac(secret: bytes, payload: str) -> bytes:
    return hmac.new(secret, payload.encode("ascii"), hashlib.sha256).digest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
