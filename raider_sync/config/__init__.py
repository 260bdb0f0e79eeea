"""Claude Code's ``.mcp.json``: server specs, ``${VAR}`` expansion and tool names.

    {"mcpServers": {
        "files":  {"command": "npx", "args": ["-y", "mcp-files"], "env": {"ROOT": "${HOME}"}},
        "remote": {"type": "http", "url": "https://mcp.example/mcp",
                   "headers": {"Authorization": "Bearer ${TOKEN}"}, "timeout": 60000}}}

``McpConfig.load(path)`` / ``McpConfig.from_dict(data)`` validate every entry at once and raise
one :class:`ConfigError` that names each bad server and field; nothing is half loaded.
Cursor's ``mcp.json`` has the same shape; VS Code's (``{"servers": ..., "inputs": [...]}``)
loads too, with the editors' variables (``${env:VAR}``, ``${input:ID}``, ``${userHome}``,
``${workspaceFolder}``, ...) and ``envFile``.
"""
from __future__ import annotations

import json
import os
import re
from typing import Annotated, Any, Literal, Mapping, Optional
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..errors import ConfigError
from . import dialects

Transport = Literal["stdio", "http", "sse"]
TRANSPORT_ALIASES = {"stdio": "stdio", "http": "http", "streamable-http": "http",
                     "streamableHttp": "http", "sse": "sse"}

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
# ${VAR}, ${VAR:-default}, the editors' ${env:VAR}, ${input:ID} and ${/}, and the draft
# standard's ${value:LITERAL} and chains of them, ${env:A | env:B | value:C}
_VAR = re.compile(r"\$\{(?:(env|input|value):([^}]*)|([A-Za-z_][A-Za-z0-9_]*)(?::-(.*?))?|(/))\}")
#: where an ``${input:ID}`` of VS Code's format takes its value from: this prefix plus the ID
#: upper-cased, each character outside [A-Z0-9_] replaced with ``_``
INPUT_PREFIX = "RAIDER_SYNC_INPUT_"
#: the top-level keys that hold servers: Claude Code's and Cursor's, then VS Code's
SERVER_KEYS = ("mcpServers", "servers")


def normalize_name(part: str) -> str:
    """Replace every character outside ``[A-Za-z0-9_-]`` with ``_`` (Claude Code's rule)."""
    return _UNSAFE.sub("_", part)


def tool_name(key: str, tool: str) -> str:
    """The name the model sees: ``mcp__KEY__TOOL``, both parts normalised."""
    return f"mcp__{normalize_name(key)}__{normalize_name(tool)}"


def input_variable(input_id: str) -> str:
    """The environment variable that answers ``${input:ID}``: ``RAIDER_SYNC_INPUT_<ID>``."""
    return INPUT_PREFIX + re.sub(r"[^A-Z0-9_]", "_", input_id.upper())


def expand_vars(text: str, env: Mapping[str, str], missing: set[str],
                predefined: Mapping[str, str] | None = None,
                missing_inputs: set[str] | None = None) -> str:
    """Expand ``${VAR}``, ``${VAR:-default}`` and ``${env:VAR}`` from ``env``, a name of
    ``predefined`` (``userHome``, ``workspaceFolder``, ... ) when ``env`` lacks it, ``${/}``
    as ``/``, ``${input:ID}`` from ``env[input_variable(ID)]``, ``${value:TEXT}`` as TEXT, and
    a chain ``${env:A | input:B | value:C}`` as its first alternative that has a value (the
    draft standard ``mcp.json``'s form). One pass: what a value
    brings in is not expanded again. An unset variable without a default stays as written
    and its name is added to ``missing`` (an input's ID to ``missing_inputs``). A bare
    ``$VAR`` is left alone."""
    predefined = predefined or {}

    def sub(match: re.Match) -> str:
        scope, scoped, name, default, slash = match.groups()
        if slash:
            return "/"
        if scope is not None:
            return scoped_value(f"{scope}:{scoped}", match.group(0))
        if name in env:
            return env[name]
        if scope is None and name in predefined:
            return predefined[name]
        if default is not None:
            return default
        missing.add(name)
        return match.group(0)

    def scoped_value(expression: str, written: str) -> str:
        # the first of "env:A | input:B | value:C" that has a value
        unset: list[tuple[str, str]] = []
        for alternative in expression.split("|"):
            scope, _, key = alternative.strip().partition(":")
            key = key.strip()
            if scope == "value":
                return key
            if scope == "env" and key in env:
                return env[key]
            if scope == "input" and input_variable(key) in env:
                return env[input_variable(key)]
            unset.append((scope, key))
        for scope, key in unset:
            if scope == "input":
                (missing_inputs if missing_inputs is not None else missing).add(key)
            else:
                missing.add(key if scope == "env" else f"{scope}:{key}")
        return written

    return _VAR.sub(sub, text)


def find_named(items, name: str):
    """The first of ``items`` (anything with ``name`` and ``key``) named ``name``, else the
    first whose key is ``name`` (``plugin:a:b`` is also found as ``plugin_a_b``), else None."""
    items = list(items)
    for item in items:
        if item.name == name:
            return item
    for item in items:
        if item.key == name:
            return item
    return None


class OAuthSettings(BaseModel):
    """The ``oauth`` block of an http/sse entry (Claude Code's keys, plus ``clientSecret`` and
    ``clientMetadataUrl``). ``scopes`` is a space-separated string or a list."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    client_id: Optional[str] = Field(default=None, alias="clientId", min_length=1)
    client_secret: Optional[str] = Field(default=None, alias="clientSecret", repr=False)
    callback_port: Optional[int] = Field(default=None, alias="callbackPort", gt=0, lt=65536)
    auth_server_metadata_url: Optional[str] = Field(default=None, alias="authServerMetadataUrl")
    scopes: Optional[list[str]] = None
    client_metadata_url: Optional[str] = Field(default=None, alias="clientMetadataUrl")

    @model_validator(mode="before")
    @classmethod
    def _port_of_redirect_uri(cls, data: Any) -> Any:
        # the draft standard mcp.json names the whole redirect URI; only its port is ours
        if not isinstance(data, dict) or "redirectUri" not in data:
            return data
        data = dict(data)
        port = loopback_callback_port(data.pop("redirectUri"))
        if port is None:
            raise ValueError("redirectUri: must be http://localhost:PORT/callback (the "
                             "loopback listener raider_sync runs)")
        data.setdefault("callbackPort", port)
        return data

    @field_validator("scopes", mode="before")
    @classmethod
    def _split_scopes(cls, value: Any) -> Any:
        return value.split() if isinstance(value, str) else value

    @field_validator("auth_server_metadata_url", "client_metadata_url")
    @classmethod
    def _https(cls, url: Optional[str]) -> Optional[str]:
        if url is not None and not re.match(r"^https://[^/\s]+|^http://(localhost|127\.0\.0\.1"
                                            r"|\[::1\])(:\d+)?(/|$)", url):
            raise ValueError("must be an https:// URL (http:// only for localhost)")
        return url


#: the keys an oauth block may have (by name and by alias, and the draft's redirectUri)
_OAUTH_FIELDS = frozenset(set(OAuthSettings.model_fields) | {"redirectUri"}
                          | {f.alias for f in OAuthSettings.model_fields.values() if f.alias})


def loopback_callback_port(uri: Any) -> int | None:
    """The port of a redirect URI ``http://localhost:PORT/callback`` (or 127.0.0.1, [::1]),
    else None."""
    if not isinstance(uri, str):
        return None
    parts = urlsplit(uri)
    try:
        port = parts.port
    except ValueError:
        return None
    if (parts.scheme == "http" and parts.hostname in ("localhost", "127.0.0.1", "::1")
            and parts.path == "/callback" and port):
        return port
    return None


class RestartPolicy(BaseModel):
    """An entry's ``restart`` key: restart a crashed server on the next call.

    ``{"maxRestarts": 3, "backoffMs": 1000, "maxBackoffMs": 30000}`` (the defaults; ``true``
    means them all). Restart *n* comes no sooner than ``backoffMs * 2**(n-1)`` ms (at most
    ``maxBackoffMs``) after the crash; after ``maxRestarts`` in a row the server stays failed.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    max_restarts: int = Field(default=3, ge=0, alias="maxRestarts")
    backoff_ms: int = Field(default=1000, ge=0, alias="backoffMs")
    max_backoff_ms: int = Field(default=30000, ge=0, alias="maxBackoffMs")

    def delay(self, restarts: int) -> float:
        """Seconds to wait after a crash before restart number ``restarts + 1``."""
        return min(self.max_backoff_ms, self.backoff_ms * 2 ** min(restarts, 32)) / 1000


class ServerSpec(BaseModel):
    """One entry of ``mcpServers``: what a server is started or reached with.

    ``timeout`` is the call timeout in milliseconds (Claude Code's per-server ``timeout``);
    ``max_message_size`` (``maxMessageSize``) the bound in bytes on one received message.
    ``plugin_root``/``plugin_data`` mark a plugin's server (named ``plugin:NAME:SERVER``).
    ``allowed_tools``/``disabled_tools`` (``allowedTools``/``disabledTools``) are tool names
    or globs that narrow the tools offered (see :mod:`raider_sync.client.filters`).
    ``title`` and ``description`` (the draft standard ``mcp.json``'s) are for people only.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    name: str = Field(min_length=1)
    transport: Transport = "stdio"
    command: Optional[str] = Field(default=None, min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: Optional[str] = None
    url: Optional[str] = None
    headers: dict[str, str] = Field(default_factory=dict)
    headers_helper: Optional[str] = Field(default=None, alias="headersHelper")
    timeout: Optional[int] = Field(default=None, gt=0)
    max_message_size: Optional[int] = Field(default=None, gt=0, alias="maxMessageSize")
    plugin_root: Optional[str] = Field(default=None, alias="pluginRoot")
    plugin_data: Optional[str] = Field(default=None, alias="pluginData")
    project_dir: Optional[str] = Field(default=None, alias="projectDir")
    oauth: Optional[OAuthSettings] = None
    restart: Optional[RestartPolicy] = None
    allowed_tools: Optional[list[Annotated[str, Field(min_length=1)]]] = Field(
        default=None, alias="allowedTools")
    disabled_tools: list[Annotated[str, Field(min_length=1)]] = Field(
        default_factory=list, alias="disabledTools")
    protocol: Optional[str] = None
    title: Optional[str] = None
    description: Optional[str] = None
    tasks: Any = None
    retry: Optional[Literal["safe", "never", "always"]] = None

    @field_validator("tasks")
    @classmethod
    def _tasks_choice(cls, value: Any) -> Any:
        if value is None or value == "auto" or isinstance(value, bool):
            return value
        raise ValueError('must be "auto", true or false')

    @field_validator("protocol")
    @classmethod
    def _known_protocol(cls, value: Optional[str]) -> Optional[str]:
        from ..protocol.revisions import PROTOCOL_CHOICES
        if value is not None and value not in PROTOCOL_CHOICES:
            raise ValueError(f"must be one of {', '.join(PROTOCOL_CHOICES)}")
        return value

    @model_validator(mode="before")
    @classmethod
    def _transport_from_type(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        kind = data.pop("type", None)
        if kind is None:
            kind = "stdio" if "command" in data or "url" not in data else "http"
        if not isinstance(kind, str) or kind not in TRANSPORT_ALIASES:
            raise ValueError(f"type: unknown transport {kind!r} (use stdio, http or sse)")
        data.setdefault("transport", TRANSPORT_ALIASES[kind])
        return data

    @field_validator("timeout", mode="before")
    @classmethod
    def _timeout_is_a_number(cls, value: Any) -> Any:
        # pydantic would read true as 1 and "5000" as 5000; JSON that says so is a mistake
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise ValueError("must be a number of milliseconds")
        return value

    @field_validator("restart", mode="before")
    @classmethod
    def _restart_true_means_defaults(cls, value: Any) -> Any:
        if value is True:
            return {}
        if value is False:
            return None
        return value

    @field_validator("max_message_size", mode="before")
    @classmethod
    def _size_is_a_number(cls, value: Any) -> Any:
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise ValueError("must be a whole number of bytes")
        return value

    @field_validator("url")
    @classmethod
    def _absolute_url(cls, url: Optional[str]) -> Optional[str]:
        if url is not None and not re.match(r"^https?://[^/\s]+", url):
            raise ValueError("must be an absolute http:// or https:// URL")
        return url

    @model_validator(mode="after")
    def _needs_command_or_url(self) -> "ServerSpec":
        if self.transport == "stdio" and not self.command:
            raise ValueError("command: a stdio server needs a command")
        if self.transport in ("http", "sse") and not self.url:
            raise ValueError(f"url: a {self.transport} server needs a url")
        return self

    @property
    def key(self) -> str:
        """The name normalised for tool names: ``plugin:a:b`` keys as ``plugin_a_b``."""
        return normalize_name(self.name)

    @property
    def is_plugin(self) -> bool:
        return self.plugin_root is not None or self.name.startswith("plugin:")

    def tool_name(self, tool: str) -> str:
        return tool_name(self.key, tool)


class McpConfig:
    """The servers of one ``.mcp.json``, in file order, plus the warnings loading produced."""

    def __init__(self, servers: list[ServerSpec], warnings: list[str] | None = None,
                 path: str | None = None):
        self.servers = list(servers)
        self.warnings = list(warnings or [])
        self.path = path

    def __repr__(self) -> str:
        return f"McpConfig({[s.name for s in self.servers]!r})"

    def names(self) -> list[str]:
        return [spec.name for spec in self.servers]

    def server(self, name: str) -> ServerSpec:
        """The spec named ``name`` (or whose key is ``name``). Raises ConfigError listing the
        configured names for an unknown one."""
        spec = find_named(self.servers, name)
        if spec is not None:
            return spec
        known = ", ".join(self.names()) or "none"
        raise ConfigError(f"no MCP server named {name!r} is configured (configured: {known})")

    @classmethod
    def load(cls, path: str | os.PathLike, *, env: Mapping[str, str] | None = None) -> "McpConfig":
        """Read a ``.mcp.json`` (or Cursor's, VS Code's, Claude Desktop's or the draft
        standard's ``mcp.json``, or Codex's ``config.toml``: see :mod:`raider_sync.config.dialects`)
        file. Raises ConfigError for an unreadable file, bad JSON (with line and column) or
        TOML, or bad entries. ``CLAUDE_PROJECT_DIR`` of its servers (and
        ``${workspaceFolder}``) is the file's folder, or the folder above a ``.vscode``,
        ``.cursor`` or ``.codex`` folder holding it."""
        path = os.fspath(path)
        try:
            with open(path, encoding="utf-8-sig") as fh:  # an editor's BOM is no error
                text = fh.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}"
                              ) from exc
        notes: list[str] = []
        if dialects.detect(text, path) == "codex":
            data, notes = dialects.to_native(dialects.parse(text, "codex", path), "codex", path)
        else:
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"{path}: not valid JSON at line {exc.lineno} column "
                                  f"{exc.colno}: {exc.msg}") from exc
            except RecursionError:
                raise ConfigError(f"{path}: JSON nested too deeply") from None
        folder = os.path.dirname(os.path.abspath(path))
        if os.path.basename(folder) in (".vscode", ".cursor", ".codex"):
            folder = os.path.dirname(folder)
        config = cls.from_dict(data, env=env, project_dir=folder, source=path)
        config.warnings[:0] = [f"{path}: {note}" for note in notes]
        config.path = path
        return config

    @staticmethod
    def discover(target: str, **options: Any) -> Any:
        """The servers a domain (its AI catalog) or a Streamable HTTP URL (its server card)
        publishes, as a :class:`~raider_sync.config.discovery.Discovery`: entries to show
        before anything is written (``.document()``) or to load (``.config(env)``). Blocks
        for the HTTP requests; see :func:`raider_sync.config.discovery.discover`."""
        from .discovery import discover
        return discover(target, **options)

    @staticmethod
    def from_server_json(document: Any, **options: Any) -> Any:
        """A registry ``server.json`` as a :class:`~raider_sync.config.discovery.Discovery`
        (see :func:`raider_sync.config.discovery.from_server_json`). Runs nothing."""
        from .discovery import from_server_json
        return from_server_json(document, **options)

    @classmethod
    def from_dict(cls, data: Any, *, env: Mapping[str, str] | None = None,
                  project_dir: str | None = None, source: str = ".mcp.json") -> "McpConfig":
        """Validate ``{"mcpServers": {name: entry}}`` (or VS Code's ``{"servers": ...,
        "inputs": [...]}``). Raises ConfigError with every problem. A server whose key (the
        name normalised for tool names) another server has already is refused with a
        warning; so is an object with keys but neither ``mcpServers`` nor ``servers``."""
        env = os.environ if env is None else env
        entries, warnings = _entries(data, source)
        predefined = _predefined(env, project_dir)
        servers: list[ServerSpec] = []
        problems: list[str] = []
        owners: dict[str, str] = {}
        for where, name, entry in entries:
            if not isinstance(entry, dict):
                problems.append(f"{where}: expected an object, got {type(entry).__name__}")
                continue
            unknown = sorted(str(k) for k in entry if k not in _ENTRY_FIELDS)
            if unknown:  # Claude Code ignores what it does not know: so do we
                warnings.append(f"{where}: unknown field{'s' if len(unknown) > 1 else ''} "
                                f"ignored: {', '.join(unknown)}")
                entry = {k: v for k, v in entry.items() if k in _ENTRY_FIELDS}
            if isinstance(entry.get("oauth"), dict):
                unknown = sorted(str(k) for k in entry["oauth"] if k not in _OAUTH_FIELDS)
                if unknown:
                    warnings.append(f"{where}.oauth: unknown field"
                                    f"{'s' if len(unknown) > 1 else ''} ignored: "
                                    f"{', '.join(unknown)}")
                    entry = {**entry, "oauth": {k: v for k, v in entry["oauth"].items()
                                                if k in _OAUTH_FIELDS}}
            missing: set[str] = set()
            inputs: set[str] = set()
            expanded = _expand_entry(entry, env, missing, predefined, inputs)
            if "envFile" in expanded:
                _read_env_file(expanded, where, predefined["workspaceFolder"], warnings)
            if project_dir is not None:
                expanded.setdefault("projectDir", project_dir)
            try:
                spec = ServerSpec(name=name, **expanded)
            except ValidationError as exc:
                problems.extend(_describe(where, exc))
                continue
            except TypeError as exc:  # a field given twice, e.g. "name"
                problems.append(f"{where}: {exc}")
                continue
            if missing:
                warnings.append(f"{where}: Missing environment variables: "
                                f"{', '.join(sorted(missing))}")
            if inputs:
                warnings.append(f"{where}: inputs without a value: " + ", ".join(
                    f"{i} (set {input_variable(i)})" for i in sorted(inputs)))
            owner = owners.setdefault(spec.key, name)
            if owner != name:
                warnings.append(f"{where}: refused: its tool names (mcp__{spec.key}__...) would "
                                f"be those of server {owner!r}; rename one of them")
                continue
            servers.append(spec)
        if problems:
            raise ConfigError(f"{source}: " + "; ".join(problems), problems)
        return cls(servers, warnings)


def _entries(data: Any, source: str) -> tuple[list[tuple[str, str, Any]], list[str]]:
    """The ``(where, name, entry)`` of every server of a config's data, and warnings about
    its shape. Raises ConfigError when the data is not an object or holds servers wrongly."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected an object with an object \"mcpServers\"")
    entries: list[tuple[str, str, Any]] = []
    warnings: list[str] = []
    present = [key for key in SERVER_KEYS if key in data]
    for key in present:
        if not isinstance(data[key], dict):
            raise ConfigError(f"{source}: expected an object with an object \"{key}\"")
        for name, entry in data[key].items():
            if any(name == known for _, known, _ in entries):
                warnings.append(f"{key}.{name}: refused: a server of that name is already "
                                f"configured under {present[0]}")
                continue
            entries.append((f"{key}.{name}", name, entry))
    if not present and data:  # an empty object is an empty config
        keys = ", ".join(sorted(str(k) for k in data))
        warnings.append(f"{source}: no \"mcpServers\" (Claude Code, Cursor) or \"servers\" "
                        f"(VS Code) object, so no servers (top-level keys: {keys})")
    if "inputs" in data and not isinstance(data["inputs"], list):
        warnings.append(f"{source}: inputs: expected a list; ignored")
    return entries, warnings


def _predefined(env: Mapping[str, str], project_dir: str | None) -> dict[str, str]:
    """The editors' predefined variables: the workspace is the project directory (else the
    working directory)."""
    folder = project_dir or os.getcwd()
    return {"userHome": env.get("HOME") or os.path.expanduser("~"), "workspaceFolder": folder,
            "workspaceFolderBasename": os.path.basename(folder.rstrip("/")) or folder,
            "pathSeparator": "/"}


def _read_env_file(entry: dict, where: str, folder: str, warnings: list[str]) -> None:
    """Lay the ``KEY=VALUE`` lines of the entry's ``envFile`` (relative to the workspace)
    under its ``env``; an unreadable file is a warning."""
    path = entry.pop("envFile")
    if not isinstance(path, str):
        warnings.append(f"{where}: envFile: expected a path; ignored")
        return
    path = os.path.join(folder, os.path.expanduser(path))
    try:
        with open(path, encoding="utf-8-sig") as fh:
            lines = fh.read().splitlines()
    except OSError as exc:
        warnings.append(f"{where}: envFile {path} cannot be read ({exc.strerror or exc}); "
                        f"its variables are not set")
        return
    variables: dict[str, str] = {}
    for line in lines:
        line = line.strip()
        if line.startswith("export "):
            line = line[len("export "):].lstrip()
        key, eq, value = line.partition("=")
        if not eq or line.startswith("#") or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*",
                                                              key.strip()):
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        variables[key.strip()] = value
    env = entry.get("env")
    entry["env"] = {**variables, **env} if isinstance(env, dict) else variables


#: the keys an entry may have: the spec's fields (by name and by alias) and "type"; "name"
#: stays, to be refused as a field given twice
_ENTRY_FIELDS = frozenset({"type", "envFile"} | set(ServerSpec.model_fields)
                          | {f.alias for f in ServerSpec.model_fields.values() if f.alias})


def _expand_entry(entry: dict, env: Mapping[str, str], missing: set[str],
                  predefined: Mapping[str, str] | None = None,
                  inputs: set[str] | None = None) -> dict:
    """Expand variables in command, args, env values, cwd, url, header values, envFile
    (Claude Code's places, and the editors') and the oauth block's values; values of the
    wrong type are left for validation to name."""
    out = dict(entry)

    def exp(value: Any) -> Any:
        if not isinstance(value, str):
            return value
        return expand_vars(value, env, missing, predefined, inputs)

    for field in ("command", "url", "cwd", "envFile"):
        if field in out:
            out[field] = exp(out[field])
    if isinstance(out.get("args"), list):
        out["args"] = [exp(a) for a in out["args"]]
    for field in ("env", "headers", "oauth"):
        if isinstance(out.get(field), dict):
            out[field] = {k: exp(v) for k, v in out[field].items()}
    return out


def _describe(where: str, exc: ValidationError) -> list[str]:
    problems = []
    for error in exc.errors():
        loc = ".".join(str(part) for part in error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = "unknown field"
        problems.append(f"{where}{'.' + loc if loc else ''}: {message}")
    return problems
