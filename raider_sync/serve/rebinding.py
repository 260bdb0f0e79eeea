"""Which ``Host`` and ``Origin`` a served app answers: its defence against DNS rebinding.

    hosts = HostCheck()                                         # loopback names only
    hosts = HostCheck(["mcp.example.com"], ["https://app.example.com"])
    hosts.problem(environ)          # why the request is refused (403), or None

A web page can have a browser send requests to a server on the user's machine: after DNS
rebinding, to a name the page's author owns that now resolves to 127.0.0.1. Such a request
carries that name in ``Host`` (and the page's origin in ``Origin``), which is what is checked:

- ``Host`` must be an allowed host. By default these are the loopback names ``localhost``,
  ``127.0.0.1`` and ``[::1]``, with any port. ``allowed_hosts`` adds names: ``"example.com"``
  with any port, ``"example.com:8443"`` with that port only, an IPv6 address in brackets;
  ``"*"`` allows every host (behind a proxy that checks it, say).
- ``Origin``, when there is one, must be allowed. By default any origin whose host is an
  allowed host is (with ``allowed_hosts=["*"]``, every origin); ``allowed_origins`` lists the
  origins instead, as ``scheme://host[:port]`` (``"*"``: every origin).

A request without ``Host`` (HTTP/1.0) or without ``Origin`` (a client that is not a browser) is
not refused for it: a browser always sends ``Host``, and ``Origin`` with every POST. The loopback
names are always allowed, as no page can make a browser send them for a name of its own.
Nothing here blocks.
"""
from __future__ import annotations

import ipaddress
from typing import Iterable
from urllib.parse import urlsplit

#: the names a server bound to a loopback address is reached at
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")
ANY = "*"
_DEFAULT_PORTS = {"http": "80", "https": "443"}


def split_host(value: str) -> tuple[str, str | None]:
    """``host[:port]`` as (host lowercased, port or None); an IPv6 host keeps its brackets."""
    value = value.strip().lower()
    if value.startswith("["):
        host, _, rest = value.partition("]")
        return host + "]", rest[1:] if rest.startswith(":") and rest[1:] else None
    host, sep, port = value.rpartition(":")
    if not sep or ":" in host:  # no port, or a bare IPv6 address (not a valid Host)
        return value, None
    return host, port or None


def is_loopback(host: str) -> bool:
    """Whether a bind address or host name is a loopback one (``localhost``, 127.0.0.0/8,
    ``::1``; brackets allowed)."""
    host = host.strip().strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _entries(values: Iterable[str] | None, field: str) -> list[str]:
    """The entries of an allow-list, each a non-empty string without whitespace."""
    if values is None:
        return []
    if isinstance(values, str):
        raise ValueError(f"{field} must be a list of strings, not the string {values!r}")
    entries = list(values)
    for i, value in enumerate(entries):
        if not isinstance(value, str) or not value or any(c.isspace() for c in value):
            raise ValueError(f"{field}[{i}]: {value!r} is not a non-empty string without "
                             f"spaces")
    return entries


def _host_problem(host: str) -> str | None:
    if host == ANY:
        return None
    name, port = split_host(host)
    if "/" in host or not name.strip("[]") or (port is not None and not port.isdigit()):
        return "a host is host[:port], an IPv6 address in brackets"
    return None


def _origin_problem(origin: str) -> str | None:
    if origin == ANY:
        return None
    parts = urlsplit(origin)
    if parts.scheme not in _DEFAULT_PORTS or not parts.hostname \
            or parts.path.strip("/") or parts.query or parts.fragment:
        return "an origin is http(s)://host[:port], without a path"
    return None


class HostCheck:
    """The hosts and origins one served app answers (see the module's docstring). Raises
    ValueError naming the entry for an ``allowed_hosts`` entry that is not ``host[:port]`` or
    an ``allowed_origins`` entry that is not ``http(s)://host[:port]``."""

    def __init__(self, allowed_hosts: Iterable[str] | None = None,
                 allowed_origins: Iterable[str] | None = None):
        hosts = _entries(allowed_hosts, "allowed_hosts")
        origins = _entries(allowed_origins, "allowed_origins")
        for field, entries, check in (("allowed_hosts", hosts, _host_problem),
                                      ("allowed_origins", origins, _origin_problem)):
            for i, entry in enumerate(entries):
                problem = check(entry)
                if problem:
                    raise ValueError(f"{field}[{i}]: {entry!r}: {problem}")
        self.any_host = ANY in hosts
        self._hosts = [split_host(h) for h in (*LOOPBACK_HOSTS, *hosts) if h != ANY]
        self.any_origin = ANY in origins or (allowed_origins is None and self.any_host)
        self._origins = None if allowed_origins is None else {
            o.rstrip("/").lower() for o in origins if o != ANY}

    def host_allowed(self, value: str) -> bool:
        """Whether ``host[:port]`` is an allowed host."""
        if self.any_host:
            return True
        host, port = split_host(value)
        return any(host == name and (want is None or port == want)
                   for name, want in self._hosts)

    def origin_allowed(self, origin: str) -> bool:
        """Whether an ``Origin`` header value is allowed (``null`` is not, unless every origin
        is)."""
        if self.any_origin:
            return True
        origin = origin.strip().rstrip("/").lower()
        if self._origins is not None:
            return origin in self._origins
        parts = urlsplit(origin)
        if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
            return False
        try:
            port = str(parts.port or _DEFAULT_PORTS[parts.scheme])
        except ValueError:  # a port that is not a number
            return False
        host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
        return self.host_allowed(f"{host}:{port}")

    def problem(self, environ: dict) -> str | None:
        """Why a WSGI request must be refused for its ``Host`` or ``Origin``, else None."""
        host = environ.get("HTTP_HOST")
        if host is not None and not self.host_allowed(host):
            return (f"Host {host!r} is not allowed: this server answers only the hosts it "
                    f"is configured with (allowed_hosts)")
        origin = environ.get("HTTP_ORIGIN")
        if origin is not None and not self.origin_allowed(origin):
            return (f"Origin {origin!r} is not allowed: this server answers only the origins "
                    f"it is configured with (allowed_origins)")
        return None
