"""The gateway's config: which MCP servers it fronts and which customer keys reach which.

    {"public_url": "https://llm.example.com",
     "servers": [
       {"name": "everything", "url": "http://127.0.0.1:3001/mcp", "description": "demo",
        "headers": {"X-Team": "blue"},
        "credential": {"header": "Authorization", "scheme": "Bearer", "env": "EVERYTHING_TOKEN"}},
       {"name": "files", "transport": "stdio", "command": "mcp-files",
        "args": ["--root", "/srv/data"], "env": {}}],
     "keys": [{"id": "alice", "env": "ALICE_KEY", "servers": ["everything", "files"]},
              {"id": "bob", "sha256": "<hex digest of the key>", "servers": ["everything"]}],
     "timeouts": {"connect": 10, "read": 300},
     "usage_log": "/var/log/raider-gateway/usage.jsonl",
     "allowed_origins": ["https://app.example.com"],
     "max_request_bytes": 16777216,
     "limits": {"requests_per_key": 8, "streams_per_key": 4}}

:meth:`GatewayConfig.load` (JSON, or TOML on Python 3.11+) and :meth:`GatewayConfig.from_dict`
check the shape with pydantic and every wire rule of :mod:`raider_sync.gateway.protocol`, read
the secrets named by environment variable, and raise one :class:`ConfigError` whose
``problems`` list every problem, each naming the server or key and the field. Secrets (key
values, upstream credentials) live only in private attributes: never in ``repr``, a dump or the
listing. Timeouts are seconds.
"""
from __future__ import annotations

import hashlib
import os
import re
from typing import Any, Mapping, Optional

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from ..config.dialects import parse_json, parse_toml, read_text
from ..config.loading import validation_problems
from ..errors import AuthError, ConfigError
from . import protocol
from .audit import AuditSettings
from .identity import IdentitySettings, TokenExchangeSettings, exchangers
from .keys import external_entries
from .metrics import MetricsSettings, token_digest
from .rate_limits import RateLimitSettings, Rates
from .tool_rules import ToolRules, key_problems

_HEX64 = re.compile(r"[0-9a-fA-F]{64}\Z")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+\Z")
_BAD_VALUE = re.compile(r"[\r\n\0]")
_CONNECTION_HEADERS = {"connection", "keep-alive", "proxy-connection", "te", "trailer", "trailers",
                       "transfer-encoding", "upgrade", "host", "content-length", "expect"}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Timeouts(_Model):
    """Seconds to wait for the upstream: ``connect`` to open a connection, ``read`` between two
    bytes of an answer (an SSE stream that stays silent longer than ``read`` is ended)."""

    connect: float = Field(default=10.0, gt=0)
    read: float = Field(default=300.0, gt=0)


class Limits(_Model):
    """What one key may hold at once in one relay process: ``requests_per_key`` relayed
    requests in flight (streams included) and ``streams_per_key`` long-lived streams (``GET``).
    Unset: half and a quarter of the threads the relay is served with. Over either: 429 with
    ``Retry-After``."""

    requests_per_key: Optional[int] = Field(default=None, gt=0)
    streams_per_key: Optional[int] = Field(default=None, gt=0)


class Credential(_Model):
    """The operator's credential for an upstream: ``header: [scheme ]<value of $env>``."""

    header: str = "Authorization"
    scheme: Optional[str] = None
    env: str


class OAuthCredential(_Model):
    """The operator's OAuth client for an upstream: the client credentials grant with
    ``client_id`` and the secret in ``$client_secret_env``, sent as ``method``
    (client_secret_basic or client_secret_post); ``scopes`` requested when given."""

    client_id: str = Field(min_length=1)
    client_secret_env: str
    method: str = "client_secret_basic"
    scopes: Optional[list[str]] = None


class GatewayServer(_Model):
    """One MCP server behind the gateway. A relayed (streamable-http) server has ``url``,
    ``headers``, ``credential`` and ``timeouts``; a stdio one ``command``, ``args`` and ``env``,
    which the listing hands to the customer."""

    name: str
    transport: str = Field(default_factory=protocol.default_transport)
    description: Optional[str] = None
    url: Optional[str] = None
    headers: dict[str, str] = Field(default_factory=dict)
    credential: Optional[Credential] = None
    oauth: Optional[OAuthCredential] = None
    token_exchange: Optional[TokenExchangeSettings] = None
    timeouts: Optional[Timeouts] = None
    command: Optional[str] = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)

    @property
    def relayed(self) -> bool:
        return protocol.is_relayed(self.transport)


class GatewayKey(_Model):
    """A customer key: its ``id`` (in usage events), the key itself by environment variable
    name (``env``) or by SHA-256 hex digest (``sha256``), the servers it may reach, and per
    server the tools it may use (``tools``, see :mod:`raider_sync.gateway.tool_rules`)."""

    id: str = Field(min_length=1)
    env: Optional[str] = None
    sha256: Optional[str] = None
    servers: list[str] = Field(default_factory=list)
    tools: dict[str, ToolRules] = Field(default_factory=dict)
    rate_limits: Optional[Rates] = None


class _Settings(_Model):
    public_url: Optional[str] = None
    timeouts: Timeouts = Field(default_factory=Timeouts)
    usage_log: Optional[str] = None
    allowed_origins: Optional[list[str]] = None
    max_request_bytes: int = Field(default=16 * 1024 * 1024, gt=0)
    limits: Limits = Field(default_factory=Limits)
    rate_limits: Optional[RateLimitSettings] = None
    keys_dir: Optional[str] = None
    keys_env: Optional[str] = None
    metrics: Optional[MetricsSettings] = None
    audit: Optional[AuditSettings] = None
    identity: Optional[IdentitySettings] = None


class GatewayConfig(_Settings):
    """A loaded, checked gateway config. Build it with :meth:`load` or :meth:`from_dict`, which
    also read the secrets; a config built otherwise cannot authenticate anyone."""

    servers: list[GatewayServer] = Field(default_factory=list)
    keys: list[GatewayKey] = Field(default_factory=list)
    _digests: list[tuple[str, bytes, frozenset]] = PrivateAttr(default_factory=list)
    _credentials: dict[str, tuple[str, str]] = PrivateAttr(default_factory=dict)
    _oauth: dict[str, Any] = PrivateAttr(default_factory=dict)
    _exchange: dict[str, Any] = PrivateAttr(default_factory=dict)
    _resolved: bool = PrivateAttr(default=False)
    _reload: Any = PrivateAttr(default=None)
    _metrics_token: Optional[bytes] = PrivateAttr(default=None)

    # -- loading ---------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | os.PathLike, *, env: Mapping[str, str] | None = None
             ) -> "GatewayConfig":
        """Read a JSON or a ``.toml`` config file (TOML on Python 3.10 needs the ``toml``
        extra). Raises ConfigError for an unreadable file, bad syntax (with where) or any bad
        entry."""
        path = os.fspath(path)
        text = read_text(path)
        data = parse_toml(text, path) if path.endswith(".toml") else parse_json(text, path)
        config = cls.from_dict(data, env=env, source=path)
        config._reload = lambda: cls.load(path, env=env)
        return config

    @classmethod
    def from_dict(cls, data: Any, *, env: Mapping[str, str] | None = None,
                  source: str = "gateway config") -> "GatewayConfig":
        """Check ``data`` (shape, wire rules, references between keys and servers) and read
        the secrets from ``env`` (default ``os.environ``). Raises ConfigError listing every
        problem; nothing is half loaded."""
        env = os.environ if env is None else env
        if not isinstance(data, dict):
            raise ConfigError(f"{source}: expected a JSON object at the top")
        problems: list[str] = []
        settings = _settings(data, problems)
        servers = _servers(data.get("servers", []), problems)
        known = {s.get("name") for s in data.get("servers", []) if isinstance(s, dict)} \
            if isinstance(data.get("servers", []), list) else set()
        external = tuple(external_entries(data, env, problems))
        keys = _keys(data.get("keys", []), known, problems, external)
        digests = _key_digests(keys, env, problems)
        credentials = _credentials(servers, env, problems)
        oauth = _oauth_clients(servers, env, problems)
        metrics_token = token_digest(settings.metrics, env, digests, problems)
        exchange = exchangers(servers, settings.identity, settings.timeouts, env, problems)
        if problems:
            raise ConfigError(f"{source}: " + "; ".join(problems), problems)
        config = cls(**settings.model_dump(), servers=[s for _, s in servers],
                     keys=[k for _, k in keys])
        config._digests = digests
        config._credentials = credentials
        config._oauth = oauth
        config._exchange = exchange
        config._resolved = True
        config._metrics_token = metrics_token
        config._reload = lambda: cls.from_dict(data, env=env, source=source)
        return config

    # -- use -------------------------------------------------------------------------------

    @property
    def resolved(self) -> bool:
        """Whether the secrets were read (the config came from :meth:`load`/:meth:`from_dict`)."""
        return self._resolved

    def server(self, name: str) -> Optional[GatewayServer]:
        """The server named exactly ``name``, or ``None``."""
        for server in self.servers:
            if server.name == name:
                return server
        return None

    def reloaded(self) -> "GatewayConfig":
        """The config read again from where it came from (the file, with ``keys_dir`` and
        ``keys_env``), for new keys. Raises ConfigError as :meth:`load` does, or for a config
        that was not loaded."""
        if self._reload is None:
            raise ConfigError("only a config from GatewayConfig.load or from_dict can be reloaded")
        return self._reload()

    def key_digests(self) -> list[tuple[str, bytes, frozenset]]:
        """``(key id, sha256 digest of the key, names of its servers)`` for every key."""
        return list(self._digests)

    def metrics_token_digest(self) -> Optional[bytes]:
        """The SHA-256 of the operator's metrics token (``metrics``), or None: no metrics."""
        return self._metrics_token

    def upstream_headers(self, server: GatewayServer, key: Optional[str] = None
                         ) -> dict[str, str]:
        """The headers the gateway adds to every request relayed to ``server``: its static
        headers and its credential (the operator's, never the client's), or for a server with
        ``token_exchange`` the token of the calling ``key`` (an id)."""
        headers = dict(server.headers)
        credential = self._credentials.get(server.name)
        if credential is not None:
            headers[credential[0]] = credential[1]
        auth = self._oauth.get(server.name)
        if auth is not None:  # blocks while a token is fetched or renewed; raises AuthError
            headers.update(auth.token_headers("POST", server.url or "", None))
        exchanger = self._exchange.get(server.name)
        if exchanger is not None:  # blocks while the key's token is exchanged; raises AuthError
            if key is None:
                raise AuthError("token exchange: the server's token is per key, and no key "
                                "was given", step="token")
            headers.update(exchanger.headers(key))
        return headers

    def close(self) -> None:
        """Close the connections the upstreams' OAuth clients opened (tokens are kept)."""
        for auth in self._oauth.values():
            auth.close()
        for exchanger in self._exchange.values():
            exchanger.close()

    def timeouts_for(self, server: GatewayServer) -> Timeouts:
        """The server's own timeouts, or the config's."""
        return server.timeouts or self.timeouts


def _settings(data: dict, problems: list[str]) -> _Settings:
    fields = {k: v for k, v in data.items() if k not in ("servers", "keys")}
    try:
        settings = _Settings(**fields)
    except ValidationError as exc:
        problems.extend(validation_problems("", exc))
        settings = None
    public_url = fields.get("public_url")
    if isinstance(public_url, str):
        problem = protocol.url_problem(public_url)
        if problem:
            problems.append(f"public_url: {problem}")
    origins = fields.get("allowed_origins")
    for i, origin in enumerate(origins if isinstance(origins, list) else []):
        if not isinstance(origin, str):
            continue
        problem = protocol.url_problem(origin)
        if problem is None and origin.rstrip("/").count("/") > 2:
            problem = "an origin is scheme://host[:port], without a path"
        if problem:
            problems.append(f"allowed_origins[{i}]: {problem}")
    return settings or _Settings()


def _where(kind: str, index: int, entry: Any, field: str) -> str:
    label = entry.get(field) if isinstance(entry, dict) else None
    return f"{kind}[{index}] ({label})" if isinstance(label, str) else f"{kind}[{index}]"


def _entries(raw: Any, kind: str, label: str, model: type, problems: list[str],
             extra: tuple = ()):
    """``(where, model(**entry))`` for each entry of the list ``raw`` that validates, then for
    each ``(where, entry)`` of ``extra``; what does not is added to ``problems`` under
    ``kind[i] (label)`` (or the extra's own ``where``)."""
    if not isinstance(raw, list):
        problems.append(f"{kind}: expected a list of {kind[:-1]} entries")
        raw = []
    labelled = [(_where(kind, i, entry, label), entry) for i, entry in enumerate(raw)]
    for where, entry in labelled + list(extra):
        if not isinstance(entry, dict):
            problems.append(f"{where}: expected an object")
            continue
        try:
            yield where, model(**entry)
        except ValidationError as exc:
            problems.extend(validation_problems(where, exc))
        except TypeError as exc:
            problems.append(f"{where}: {exc}")


def _servers(raw: Any, problems: list[str]) -> list[tuple[str, GatewayServer]]:
    servers, seen = [], set()
    for where, server in _entries(raw, "servers", "name", GatewayServer, problems):
        found = server_problems(server)
        problems.extend(f"{where}.{problem}" for problem in found)
        if server.name in seen:
            problems.append(f"{where}.name: another server has the same name")
        seen.add(server.name)
        if not found:
            servers.append((where, server))
    return servers


def server_problems(server: GatewayServer) -> list[str]:
    """Every wire rule a server entry breaks, as ``field: problem`` texts (empty when fine)."""
    out = []
    problem = protocol.name_problem(server.name)
    if problem:
        out.append(f"name: {problem}")
    if not protocol.is_transport(server.transport):
        out.append(f"transport: unknown transport (use one of {', '.join(protocol.transports())})")
        return out
    if server.relayed:
        if server.url is None:
            out.append("url: a relayed server needs a url")
        else:
            problem = protocol.url_problem(server.url)
            if problem:
                out.append(f"url: {problem}")
        for header, value in server.headers.items():
            problem = protocol.config_header_problem(header)
            if problem is None and _BAD_VALUE.search(value):
                problem = "a header value may not contain a line break or NUL"
            if problem:
                out.append(f"headers.{header}: {problem}")
        if server.credential is not None:
            out.extend(f"credential.{p}" for p in _credential_problems(server, server.credential))
        for field in ("command", "args", "env"):
            if field in server.model_fields_set:
                out.append(f"{field}: only a stdio server has a {field}")
    else:
        if not server.command:
            out.append("command: a stdio server needs a command")
        for field in ("url", "headers", "credential", "oauth", "token_exchange", "timeouts"):
            if field in server.model_fields_set:
                out.append(f"{field}: a stdio server is not relayed; it has no {field}")
    return out


def _credential_problems(server: GatewayServer, credential: Credential) -> list[str]:
    out = []
    header, lowered = credential.header, credential.header.lower()
    if not _TOKEN.match(header):
        out.append("header: a header name must be a non-empty HTTP token")
    elif (protocol.request_headers({header: "x"}) or lowered in _CONNECTION_HEADERS):
        out.append(f"header: {header} cannot carry a credential (the client or the connection sets it)")
    elif any(name.lower() == lowered for name in server.headers):
        out.append(f"header: {header} is also a static header")
    if credential.scheme is not None and not _TOKEN.match(credential.scheme):
        out.append("scheme: a scheme is one word (for example Bearer)")
    if not _ENV_NAME.match(credential.env):
        out.append("env: not an environment variable name")
    return out


def _keys(raw: Any, known: set, problems: list[str], extra: tuple = ()
          ) -> list[tuple[str, GatewayKey]]:
    keys, seen = [], set()
    for where, key in _entries(raw, "keys", "id", GatewayKey, problems, extra):
        found = []
        if (key.env is None) == (key.sha256 is None):
            found.append("env: give the key by exactly one of env or sha256")
        if key.env is not None and not _ENV_NAME.match(key.env):
            found.append("env: not an environment variable name")
        if key.sha256 is not None and not _HEX64.match(key.sha256):
            found.append("sha256: expected 64 hex digits (the SHA-256 of the key)")
        for name in key.servers:
            if name not in known:
                found.append(f"servers: no server named {name!r} is configured")
        found.extend(key_problems(key.tools, key.servers))
        if key.id in seen:
            found.append("id: another key has the same id")
        seen.add(key.id)
        problems.extend(f"{where}.{problem}" for problem in found)
        if not found:
            keys.append((where, key))
    return keys


def _key_digests(keys: list[tuple[str, GatewayKey]], env: Mapping[str, str],
                 problems: list[str]) -> list[tuple[str, bytes, frozenset]]:
    digests = []
    for where, key in keys:
        if key.sha256 is not None:
            digest = bytes.fromhex(key.sha256)
        else:
            assert key.env is not None  # _keys keeps a key only with exactly one of the two
            value = env.get(key.env, "")
            if not value:
                problems.append(f"{where}.env: environment variable {key.env} is not set")
                continue
            digest = hashlib.sha256(value.encode("utf-8")).digest()
        digests.append((key.id, digest, frozenset(key.servers)))
    return digests


def _credentials(servers: list[tuple[str, GatewayServer]], env: Mapping[str, str],
                 problems: list[str]) -> dict[str, tuple[str, str]]:
    out = {}
    for where, server in servers:
        credential = server.credential
        if credential is None or not server.relayed:
            continue
        value = env.get(credential.env, "")
        if not value or _BAD_VALUE.search(value):
            state = "is not set" if not value else "holds a line break or NUL"
            problems.append(f"{where}.credential.env: environment variable "
                            f"{credential.env} {state}")
            continue
        out[server.name] = (credential.header,
                            f"{credential.scheme} {value}" if credential.scheme else value)
    return out


def _oauth_clients(servers: list[tuple[str, GatewayServer]], env: Mapping[str, str],
                   problems: list[str]) -> dict[str, Any]:
    """An OAuth (client credentials, tokens in memory) per relayed server with ``oauth``."""
    from ..auth import ClientCredentials, MemoryTokenStore, OAuth
    out = {}
    for where, server in servers:
        oauth = server.oauth
        if oauth is None or not server.relayed:
            continue
        if server.credential is not None:
            problems.append(f"{where}.oauth: a server takes its credential from credential or "
                            f"from oauth, not both")
            continue
        if oauth.method not in ("client_secret_basic", "client_secret_post"):
            problems.append(f"{where}.oauth.method: {oauth.method!r} is not "
                            f"client_secret_basic or client_secret_post")
            continue
        secret = env.get(oauth.client_secret_env, "") if _ENV_NAME.match(
            oauth.client_secret_env) else ""
        if not secret:
            problems.append(f"{where}.oauth.client_secret_env: environment variable "
                            f"{oauth.client_secret_env} is not set")
            continue
        grant = ClientCredentials(oauth.client_id, secret, method=oauth.method)
        out[server.name] = OAuth(grant=grant, store=MemoryTokenStore(),
                                 scopes=oauth.scopes).bind(server.url or "", server.name)
    return out
