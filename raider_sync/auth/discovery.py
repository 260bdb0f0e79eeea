"""Finding the authorization server of an MCP server (MCP authorization, 2025-11-25).

1. Protected-resource metadata (RFC 9728), first 200 of: the challenge's ``resource_metadata``,
   ``{origin}/.well-known/oauth-protected-resource{path}`` (path not ``/``), then the root one.
   A 4xx moves on; a 5xx or 429 stops. Its ``resource`` must be the server's origin with a path
   that is a segment prefix of the server's; it is then used verbatim.
2. Authorization-server metadata (RFC 8414 / OIDC) of ``authorization_servers[0]`` (or the
   configured issuer when listed): path insertion for an issuer with a path, never the root
   variants then. ``issuer`` must equal the AS string exactly (a trailing ``/`` tolerated only
   on an issuer without a path); ``S256`` must be listed. The metadata's own ``issuer`` is the
   one a redirect's RFC 9207 ``iss`` must equal, byte for byte (:attr:`Discovered.announced`).
3. Without protected-resource metadata (the 2025-03-26 revision): the AS is the server's origin,
   its metadata at the root well-known (issuer checked by origin only), else the default
   ``/authorize``, ``/token`` and ``/register``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

from ..errors import AuthError
from .wire import AuthHttp, json_object

STEP = "discovery"


@dataclass
class Discovered:
    """What a flow needs to know about the resource and its authorization server."""
    resource: str
    issuer: str
    metadata: dict
    scopes_supported: list[str] = field(default_factory=list)
    legacy: bool = False

    @property
    def announced(self) -> str:
        """The issuer as the authorization server's metadata spells it, which a redirect's
        ``iss`` must equal (RFC 9207 compares with the metadata's issuer). It may differ from
        :attr:`issuer`, the protected resource's spelling that records are bound to, by a
        trailing ``/`` on an issuer without a path."""
        found = self.metadata.get("issuer")
        return found if isinstance(found, str) and found else self.issuer

    def endpoint(self, name: str) -> str | None:
        value = self.metadata.get(name)
        return value if isinstance(value, str) and value else None


def origin(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "", "", ""))


def canonical_resource(url: str) -> str:
    """The server URL as a resource indicator: lower-case scheme and host, no fragment."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path, parts.query, ""))


def prm_candidates(server_url: str, header_url: str | None) -> list[str]:
    base = origin(server_url)
    path = urlsplit(server_url).path
    urls = [header_url] if header_url else []
    if path and path != "/":
        urls.append(f"{base}/.well-known/oauth-protected-resource{path}")
    urls.append(f"{base}/.well-known/oauth-protected-resource")
    return list(dict.fromkeys(urls))


def as_candidates(issuer: str) -> list[str]:
    parts = urlsplit(issuer)
    base = urlunsplit((parts.scheme, parts.netloc, "", "", ""))
    path = parts.path.rstrip("/")
    if path:
        return [f"{base}/.well-known/oauth-authorization-server{path}",
                f"{base}/.well-known/openid-configuration{path}",
                f"{base}{path}/.well-known/openid-configuration"]
    return [f"{base}/.well-known/oauth-authorization-server",
            f"{base}/.well-known/openid-configuration"]


def check_resource(resource: object, server_url: str) -> str:
    """``resource``, the protected-resource metadata's, once it covers ``server_url``; raises
    AuthError for one that does not (or is not a string)."""
    if not isinstance(resource, str) or not resource:
        raise AuthError(f"{STEP}: the protected-resource metadata has no resource", step=STEP)
    ours, theirs = urlsplit(canonical_resource(server_url)), urlsplit(canonical_resource(resource))
    prefix = theirs.path.rstrip("/")
    covered = (ours.scheme, ours.netloc) == (theirs.scheme, theirs.netloc) and (
        not prefix or ours.path == prefix or ours.path.startswith(prefix + "/"))
    if not covered:
        raise AuthError(f"{STEP}: the protected-resource metadata is for {resource!r}, not for "
                        f"{server_url!r}; refusing to authorize", step=STEP,
                        error="resource_mismatch")
    return resource


def _issuer_matches(found: object, issuer: str) -> bool:
    if found == issuer:
        return True
    return (isinstance(found, str) and not urlsplit(issuer).path.strip("/")
            and found.rstrip("/") == issuer.rstrip("/"))


def fetch_prm(http: AuthHttp, server_url: str, header_url: str | None,
              deadline: float | None) -> dict | None:
    """The protected-resource metadata, or None when every candidate answered 4xx."""
    for url in prm_candidates(server_url, header_url):
        response = http.request("GET", url, step=STEP, deadline=deadline)
        if response.status_code == 200:
            return json_object(response, STEP)
        if response.status_code == 429 or response.status_code >= 500:
            raise AuthError(f"{STEP}: {url} answered HTTP {response.status_code}", step=STEP,
                            status_code=response.status_code)
    return None


def fetch_as_metadata(http: AuthHttp, issuer: str, deadline: float | None,
                      metadata_url: str | None = None) -> dict:
    """The metadata of ``issuer``, checked (exact issuer, S256). Raises AuthError."""
    urls = [metadata_url] if metadata_url else as_candidates(issuer)
    for url in urls:
        response = http.request("GET", url, step=STEP, deadline=deadline)
        if response.status_code == 200:
            metadata = json_object(response, STEP)
            found = metadata.get("issuer")
            if not _issuer_matches(found, issuer):
                raise AuthError(f"{STEP}: the metadata at {url} names issuer {found!r}, not "
                                f"{issuer!r}; refusing to use it", step=STEP,
                                error="issuer_mismatch")
            check_s256(metadata, issuer)
            return metadata
        if response.status_code == 429 or response.status_code >= 500:
            raise AuthError(f"{STEP}: {url} answered HTTP {response.status_code}", step=STEP,
                            status_code=response.status_code)
    raise AuthError(f"{STEP}: no authorization-server metadata for {issuer} (tried "
                    f"{', '.join(urls)})", step=STEP)


def check_s256(metadata: dict, issuer: str) -> None:
    methods = metadata.get("code_challenge_methods_supported")
    if metadata.get("authorization_endpoint") and (
            not isinstance(methods, list) or "S256" not in methods):
        raise AuthError(f"{STEP}: the authorization server {issuer} does not list PKCE S256 in "
                        f"code_challenge_methods_supported; refusing to proceed", step=STEP)


def discover(http: AuthHttp, server_url: str, *, header_url: str | None = None,
             issuer: str | None = None, metadata_url: str | None = None,
             deadline: float | None = None) -> Discovered:
    """Run discovery for ``server_url`` (blocks on a few GETs, each bounded). ``issuer``
    picks a listed authorization server; ``metadata_url`` replaces AS-metadata discovery.
    Raises AuthError(step="discovery")."""
    prm = fetch_prm(http, server_url, header_url, deadline)
    if prm is None:
        return _legacy(http, server_url, metadata_url, deadline)
    resource = check_resource(prm.get("resource"), server_url)
    servers = [s for s in prm.get("authorization_servers") or [] if isinstance(s, str)]
    if not servers:
        raise AuthError(f"{STEP}: the protected-resource metadata lists no authorization_servers",
                        step=STEP)
    chosen = issuer if issuer in servers else servers[0]
    metadata = fetch_as_metadata(http, chosen, deadline, metadata_url)
    scopes = [s for s in prm.get("scopes_supported") or [] if isinstance(s, str)]
    return Discovered(resource, chosen, metadata, scopes)


def _legacy(http: AuthHttp, server_url: str, metadata_url: str | None,
            deadline: float | None) -> Discovered:
    base = origin(server_url)
    url = metadata_url or f"{base}/.well-known/oauth-authorization-server"
    response = http.request("GET", url, step=STEP, deadline=deadline)
    if response.status_code == 200:
        metadata = json_object(response, STEP)
        found = metadata.get("issuer")
        if not isinstance(found, str) or origin(found) != base and not metadata_url:
            raise AuthError(f"{STEP}: the metadata at {url} names issuer {found!r}, not one at "
                            f"{base}; refusing to use it", step=STEP, error="issuer_mismatch")
        check_s256(metadata, found)
        return Discovered(canonical_resource(server_url), found, metadata, legacy=True)
    if response.status_code == 429 or response.status_code >= 500:
        raise AuthError(f"{STEP}: {url} answered HTTP {response.status_code}", step=STEP,
                        status_code=response.status_code)
    metadata = {"issuer": base, "authorization_endpoint": f"{base}/authorize",
                "token_endpoint": f"{base}/token", "registration_endpoint": f"{base}/register",
                "code_challenge_methods_supported": ["S256"]}
    return Discovered(canonical_resource(server_url), base, metadata, legacy=True)
