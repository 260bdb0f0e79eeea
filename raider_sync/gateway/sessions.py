"""Session ids bound to keys, with no shared state: what the relay hands a client instead of the
upstream's ``Mcp-Session-Id``.

An upstream's session id is sealed as ``<upstream id>.<tag>``, where the tag is an HMAC-SHA256
(first 128 bits, base64url) keyed with the client's own key over the key's id, the server's
name and the upstream id. Any relay process that is handed the same key can check the tag and
recover the upstream id, so workers and machines need no session table and the load balancer
no affinity. A second key that reuses the id gets a different tag from its own key and is
refused, as is an id that was never sealed: the relay answers such a request 404, as MCP says a
server answers an unknown session, and nothing reaches the upstream.

Plain functions that never block and never raise for bad input (``None`` or a refusal).
"""
from __future__ import annotations

import base64
import functools
import hmac
import re
from typing import Any, Optional

_SEPARATOR = "."
_TAG_BYTES = 16
_TAG = re.compile(r"[A-Za-z0-9_-]{22}\Z")
_HEADER = "mcp-session-id"
_VISIBLE = re.compile(r"[\x21-\x7e]+\Z")  # what MCP allows in a session id


_CACHED_ID = 256  # longer upstream ids are tagged anew each time, not held in the cache


def _tag(token: str, key_id: str, server: str, upstream_id: str) -> str:
    if len(upstream_id) <= _CACHED_ID:
        return _cached_tag(token, key_id, server, upstream_id)
    return _compute_tag(token, key_id, server, upstream_id)


def _compute_tag(token: str, key_id: str, server: str, upstream_id: str) -> str:
    message = "\0".join(("raider-sync-session", key_id, server, upstream_id)).encode("utf-8")
    mac = hmac.digest(token.encode("utf-8", "surrogatepass"), message, "sha256")
    return base64.urlsafe_b64encode(mac[:_TAG_BYTES]).rstrip(b"=").decode("ascii")


# every request of a session checks its id and seals the upstream's (the same) one again
_cached_tag = functools.lru_cache(maxsize=4096)(_compute_tag)


def seal(token: Any, key_id: Any, server: Any, upstream_id: Any) -> Optional[str]:
    """The session id the client gets for the upstream's ``upstream_id``, bound to the key
    ``token`` (named ``key_id``) and to ``server``; ``None`` when an argument is not a
    non-empty string or the upstream id is not visible ASCII (the relay then drops it)."""
    if not all(isinstance(v, str) and v for v in (token, key_id, server, upstream_id)):
        return None
    if not _VISIBLE.match(upstream_id):
        return None
    return f"{upstream_id}{_SEPARATOR}{_tag(token, key_id, server, upstream_id)}"


def unseal(token: Any, key_id: Any, server: Any, session_id: Any) -> Optional[str]:
    """The upstream's session id inside ``session_id`` when its tag was made with this key for
    this server, else ``None`` (another key's id, a forged or altered one, a bare upstream id).
    The tags are compared in constant time."""
    if not all(isinstance(v, str) and v for v in (token, key_id, server, session_id)):
        return None
    upstream_id, sep, tag = session_id.rpartition(_SEPARATOR)
    if not sep or not upstream_id or not _TAG.match(tag) or not _VISIBLE.match(upstream_id):
        return None
    expected = _tag(token, key_id, server, upstream_id)
    if not hmac.compare_digest(expected.encode("ascii"), tag.encode("ascii")):
        return None
    return upstream_id


class SessionBinding:
    """One request's ``Mcp-Session-Id`` both ways:
    the client's sealed id is checked and opened for the upstream, the upstream's id is sealed
    for the client."""

    def __init__(self, token: str, key_id: str, server: str):
        self.token, self.key_id, self.server = token, key_id, server
        self.upstream_id: Optional[str] = None

    def accept(self, client_id: Optional[str]) -> bool:
        """Whether the client's session id (``None``: none sent) was sealed for this key and
        server; remembers the upstream id inside it."""
        if client_id is None:
            return True
        self.upstream_id = unseal(self.token, self.key_id, self.server, client_id)
        return self.upstream_id is not None

    def upstream(self, headers: dict) -> dict:
        out = {k: v for k, v in headers.items() if k.lower() != _HEADER}
        if self.upstream_id is not None:
            out["Mcp-Session-Id"] = self.upstream_id
        return out

    def client(self, headers: list) -> list:
        out = []
        for name, value in headers:
            if name.lower() == _HEADER:
                value = seal(self.token, self.key_id, self.server, value)
                if value is None:
                    continue
            out.append((name, value))
        return out
