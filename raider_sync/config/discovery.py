"""Servers found by name: a domain's AI catalog and server cards, and the MCP Registry's
``server.json``, turned into ``.mcp.json`` entries.

- ``GET https://DOMAIN/.well-known/ai-catalog.json`` lists what a domain publishes; its
  entries of type ``application/mcp-server-card+json`` are server cards, given inline
  (``data``) or by ``url``. A server card (SEP-2127, experimental) is also served at
  ``<Streamable HTTP URL>/server-card``; a URL with a path is read that way.
- A card's ``remotes`` (``streamable-http`` first, else ``sse``) become an entry: the URL with
  its ``{variables}`` filled, the headers it asks for. A registry ``server.json`` may also
  offer ``packages`` (npm, PyPI, OCI, NuGet), which become a stdio entry run by ``npx``,
  ``uvx``, ``docker`` or ``dnx``: nothing is run here, and nothing is written.

What a user must supply (a secret header, a variable without a default) is never filled in:
the entry holds a ``${NAME}`` reference, and :attr:`Found.needs` says what ``NAME`` is.
Cards are fetched over HTTPS only (plain HTTP for loopback hosts, for tests and local
servers), with a timeout, at most :data:`MAX_CARD_BYTES` each. A card is a claim, not a
credential: what the server says in its handshake is what counts once connected.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Mapping
from urllib.parse import urljoin, urlsplit

from ..errors import ConfigError
from .variables import env_name

CARD_TYPE = "application/mcp-server-card+json"
CATALOG_TYPE = "application/ai-catalog+json"
CATALOG_PATH = "/.well-known/ai-catalog.json"
CARD_SCHEMA = "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json"
#: the most bytes of one catalog or card read
MAX_CARD_BYTES = 1 << 20
DEFAULT_TIMEOUT = 10.0
_LOOPBACK = ("localhost", "127.0.0.1", "::1")
_VARIABLE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass
class Found:
    """One server found: ``name`` (its key in ``mcpServers``), ``entry`` (the ``.mcp.json``
    entry, secrets as ``${NAME}`` references), ``needs`` (one line per value the user must
    supply), ``source`` (where it was read) and ``card`` (the card or server.json as read)."""
    name: str
    entry: dict
    needs: list[str] = field(default_factory=list)
    source: str = ""
    card: dict = field(default_factory=dict)


@dataclass
class Discovery:
    """What a discovery found (``servers``) and what it left out, with why (``notes``)."""
    servers: list[Found] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def document(self) -> dict:
        """The servers as an ``.mcp.json`` document."""
        return {"mcpServers": {found.name: found.entry for found in self.servers}}

    def config(self, env: Mapping[str, str] | None = None) -> Any:
        """The servers as an :class:`~raider_sync.config.McpConfig` (``env`` answers the
        ``${NAME}`` references). Raises ConfigError for an entry that does not validate."""
        from . import McpConfig
        return McpConfig.from_dict(self.document(), env=env, source="discovery")


def discover(target: str, *, variables: Mapping[str, str] | None = None,
             timeout: float = DEFAULT_TIMEOUT, session: Any = None) -> Discovery:
    """The servers ``target`` publishes: a domain (``example.com``, its AI catalog) or the
    URL of a Streamable HTTP endpoint (its server card). ``variables`` fill a card's URL
    variables. Blocks for the HTTP requests, each within ``timeout`` s. Raises ConfigError
    when there is nothing to read (no catalog, an unreachable host, a card that is not one)."""
    import requests
    http = session or requests.Session()
    try:
        base = _base_url(target)
        parts = urlsplit(base)
        if parts.path.strip("/"):
            card = _fetch(http, base.rstrip("/") + "/server-card", CARD_TYPE, timeout)
            discovery = Discovery()
            _add_card(discovery, card, base.rstrip("/") + "/server-card", variables or {})
            return discovery
        catalog_url = f"{parts.scheme}://{parts.netloc}{CATALOG_PATH}"
        catalog = _fetch(http, catalog_url, CATALOG_TYPE, timeout)
        return _from_catalog(http, catalog, catalog_url, variables or {}, timeout)
    finally:
        if session is None:
            http.close()


def from_server_json(document: Any, *, prefer: str = "remote",
                     variables: Mapping[str, str] | None = None) -> Discovery:
    """A registry ``server.json`` as entries: its first remote, or with ``prefer="package"``
    its first package (as a stdio command; nothing is run). Raises ConfigError for a
    document that is not a server.json, or a ``prefer`` that is neither."""
    if prefer not in ("remote", "package"):
        raise ConfigError(f"prefer must be 'remote' or 'package', not {prefer!r}")
    if not isinstance(document, dict) or not isinstance(document.get("name"), str):
        raise ConfigError("server.json: expected an object with a string \"name\"")
    discovery = Discovery()
    source = f"server.json {document['name']}"
    found = None
    order = ("remote", "package") if prefer == "remote" else ("package", "remote")
    for kind in order:
        found = (_remote_entry(document, variables or {}, source) if kind == "remote"
                 else _package_entry(document, source))
        if found is not None:
            break
    if found is None:
        raise ConfigError(f"{source}: neither a remote nor a package this client can run")
    discovery.servers.append(found)
    return discovery


# -- reading -----------------------------------------------------------------------------------

def _base_url(target: str) -> str:
    if not isinstance(target, str) or not target.strip():
        raise ConfigError("discover: give a domain (example.com) or an https:// URL")
    target = target.strip()
    if "://" not in target:
        target = "https://" + target
    parts = urlsplit(target)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise ConfigError(f"discover: {target!r} is not a domain or an http(s) URL")
    if parts.scheme == "http" and parts.hostname not in _LOOPBACK:
        raise ConfigError(f"discover: {target} is plain HTTP; discovery reads https:// only "
                          f"(http:// for localhost)")
    return target


def _fetch(http: Any, url: str, accept: str, timeout: float) -> dict:
    """GET ``url`` as JSON; ConfigError naming the URL for anything else."""
    import requests
    try:
        with http.get(url, headers={"Accept": f"{accept}, application/json"},
                      timeout=timeout, stream=True, allow_redirects=True) as response:
            if response.status_code == 404:
                raise ConfigError(f"{url}: not found (404): nothing is published there")
            if response.status_code != 200:
                raise ConfigError(f"{url}: HTTP {response.status_code}")
            body = response.raw.read(MAX_CARD_BYTES + 1, decode_content=True)
    except requests.RequestException as exc:
        raise ConfigError(f"{url}: cannot be read: {exc}") from None
    if len(body) > MAX_CARD_BYTES:
        raise ConfigError(f"{url}: larger than {MAX_CARD_BYTES} bytes")
    try:
        data = json.loads(body)
    except ValueError:
        raise ConfigError(f"{url}: not JSON") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{url}: not a JSON object")
    return data


def _from_catalog(http: Any, catalog: dict, catalog_url: str, variables: Mapping[str, str],
                  timeout: float) -> Discovery:
    entries = catalog.get("entries")
    if not isinstance(entries, list):
        raise ConfigError(f"{catalog_url}: entries: expected a list")
    discovery = Discovery()
    for index, item in enumerate(entries):
        where = f"{catalog_url} entries[{index}]"
        if not isinstance(item, dict) or item.get("type") != CARD_TYPE:
            kind = item.get("type") if isinstance(item, dict) else None
            discovery.notes.append(f"{where}: {kind or 'no type'}, not an MCP server card; "
                                   f"left out")
            continue
        if isinstance(item.get("data"), dict):
            card, source = item["data"], where
        elif isinstance(item.get("url"), str):
            source = urljoin(catalog_url, item["url"])
            try:
                _base_url(source)
                card = _fetch(http, source, CARD_TYPE, timeout)
            except ConfigError as exc:
                discovery.notes.append(f"{where}: {exc}; left out")
                continue
        else:
            discovery.notes.append(f"{where}: neither data nor url; left out")
            continue
        _add_card(discovery, card, source, variables)
    return discovery


def _add_card(discovery: Discovery, card: dict, source: str,
              variables: Mapping[str, str]) -> None:
    if card.get("$schema") != CARD_SCHEMA:
        discovery.notes.append(f"{source}: $schema is not {CARD_SCHEMA}: not a server card; "
                               f"left out")
        return
    if not isinstance(card.get("name"), str) or not card["name"]:
        discovery.notes.append(f"{source}: no name; left out")
        return
    found = _remote_entry(card, variables, source)
    if found is None:
        discovery.notes.append(f"{source}: {card['name']} offers no remote this client "
                               f"reaches (streamable-http or sse); left out")
        return
    taken = {f.name for f in discovery.servers}
    name, n = found.name, 2
    while found.name in taken:
        found.name = f"{name}-{n}"
        n += 1
    discovery.servers.append(found)


def _key(name: str) -> str:
    """A config key from ``ns/name`` (reverse DNS): its last part, in safe characters."""
    last = name.rsplit("/", 1)[-1]
    return re.sub(r"[^A-Za-z0-9_-]", "-", last).strip("-") or "server"


def _env_name(text: str) -> str:
    return env_name(text).strip("_") or "VALUE"


def _remote_entry(card: dict, variables: Mapping[str, str], source: str) -> Found | None:
    remotes = [r for r in card.get("remotes") or [] if isinstance(r, dict)
               and r.get("type") in ("streamable-http", "sse") and isinstance(r.get("url"), str)]
    remotes.sort(key=lambda r: r["type"] != "streamable-http")
    if not remotes:
        return None
    remote = remotes[0]
    needs: list[str] = []
    declared: dict = remote["variables"] if isinstance(remote.get("variables"), dict) else {}

    def fill(text: str) -> str:
        def one(match: re.Match) -> str:
            variable = match.group(1)
            if variable in variables:
                return str(variables[variable])
            spec: dict = declared[variable] if isinstance(declared.get(variable), dict) else {}
            if spec.get("default") is not None and not spec.get("isSecret"):
                return str(spec["default"])
            env = _env_name(variable)
            needs.append(f"{env}{' (secret)' if spec.get('isSecret') else ''}: URL variable "
                         f"{variable}{_described(spec)}")
            return f"${{{env}}}"
        return _VARIABLE.sub(one, text)

    entry: dict[str, Any] = {"type": "http" if remote["type"] == "streamable-http" else "sse",
                             "url": fill(remote["url"])}
    headers: dict[str, str] = {}
    for header in remote.get("headers") or []:
        if not isinstance(header, dict) or not isinstance(header.get("name"), str):
            continue
        secret = bool(header.get("isSecret"))
        value = header.get("value", header.get("default"))
        if isinstance(value, str) and not secret:
            headers[header["name"]] = fill(value)
        elif secret or header.get("isRequired"):
            env = _env_name(header["name"])
            headers[header["name"]] = f"${{{env}}}"
            needs.append(f"{env}{' (secret)' if secret else ''}: header {header['name']}"
                         f"{_described(header)}")
    if headers:
        entry["headers"] = headers
    for key in ("title", "description"):
        if isinstance(card.get(key), str):
            entry[key] = card[key]
    return Found(_key(card["name"]), entry, needs, source, card)


#: how a registry package is run: the runner and how it names a version
_RUNNERS = {
    "npm": lambda ident, ver: ("npx", ["-y", f"{ident}@{ver}" if ver else ident]),
    "pypi": lambda ident, ver: ("uvx", [f"{ident}=={ver}" if ver else ident]),
    "oci": lambda ident, ver: ("docker", ["run", "-i", "--rm", f"{ident}:{ver}" if ver
                                          else ident]),
    "nuget": lambda ident, ver: ("dnx", [f"{ident}@{ver}" if ver else ident, "--yes"]),
}


def _package_entry(document: dict, source: str) -> Found | None:
    for package in document.get("packages") or []:
        if not isinstance(package, dict) or package.get("registryType") not in _RUNNERS:
            continue
        transport = package.get("transport") or {}
        if isinstance(transport, dict) and transport.get("type", "stdio") != "stdio":
            continue
        identifier = package.get("identifier")
        if not isinstance(identifier, str):
            continue
        command, args = _RUNNERS[package["registryType"]](identifier, package.get("version"))
        runtime = _arguments(package.get("runtimeArguments"))
        if package["registryType"] == "oci":
            args = args[:3] + runtime + args[3:]  # docker's flags go before the image
        else:
            args = runtime + args
        args += _arguments(package.get("packageArguments"))
        needs: list[str] = []
        env: dict[str, str] = {}
        for variable in package.get("environmentVariables") or []:
            if not isinstance(variable, dict) or not isinstance(variable.get("name"), str):
                continue
            name = variable["name"]
            if isinstance(variable.get("value"), str) and not variable.get("isSecret"):
                env[name] = variable["value"]
            elif isinstance(variable.get("default"), str) and not variable.get("isSecret"):
                env[name] = f"${{{name}:-{variable['default']}}}"
            elif variable.get("isRequired") or variable.get("isSecret"):
                env[name] = f"${{{name}}}"
                needs.append(f"{name}{' (secret)' if variable.get('isSecret') else ''}: "
                             f"environment variable{_described(variable)}")
        entry: dict[str, Any] = {"command": command, "args": args}
        if env:
            entry["env"] = env
        if isinstance(document.get("description"), str):
            entry["description"] = document["description"]
        return Found(_key(document["name"]), entry, needs, source, document)
    return None


def _arguments(items: Any) -> list[str]:
    out: list[str] = []
    for item in items or []:
        if not isinstance(item, dict):
            continue
        value = item.get("value", item.get("default"))
        if item.get("type") == "named" and isinstance(item.get("name"), str):
            out.append(item["name"])
            if value is not None:
                out.append(str(value))
        elif value is not None:
            out.append(str(value))
        elif isinstance(item.get("valueHint"), str):
            out.append(f"${{{_env_name(item['valueHint'])}}}")
    return out


def _described(spec: dict) -> str:
    text = spec.get("description")
    return f" ({text})" if isinstance(text, str) and text else ""
