"""Claude Code's ``.mcp.json``: server specs, ``${VAR}`` expansion and tool names.

    {"mcpServers": {
        "files":  {"command": "npx", "args": ["-y", "mcp-files"], "env": {"ROOT": "${HOME}"}},
        "remote": {"type": "http", "url": "https://mcp.example/mcp",
                   "headers": {"Authorization": "Bearer ${TOKEN}"}, "timeout": 60000}}}

``McpConfig.load(path)`` / ``McpConfig.from_dict(data)`` validate every entry at once and raise
one :class:`ConfigError` that names each bad server and field; nothing is half loaded.
"""
from __future__ import annotations

import json
import os
import re
from typing import Any, Literal, Mapping, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .errors import ConfigError

Transport = Literal["stdio", "http", "sse"]
TRANSPORT_ALIASES = {"stdio": "stdio", "http": "http", "streamable-http": "http",
                     "streamableHttp": "http", "sse": "sse"}

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-(.*?))?\}")


def normalize_name(part: str) -> str:
    """Replace every character outside ``[A-Za-z0-9_-]`` with ``_`` (Claude Code's rule)."""
    return _UNSAFE.sub("_", part)


def tool_name(key: str, tool: str) -> str:
    """The name the model sees: ``mcp__KEY__TOOL``, both parts normalised."""
    return f"mcp__{normalize_name(key)}__{normalize_name(tool)}"


def expand_vars(text: str, env: Mapping[str, str], missing: set[str]) -> str:
    """Expand ``${VAR}`` and ``${VAR:-default}``; an unset variable without a default stays as
    written and its name is added to ``missing``. A bare ``$VAR`` is left alone."""

    def sub(match: re.Match) -> str:
        name, default = match.group(1), match.group(2)
        if name in env:
            return env[name]
        if default is not None:
            return default
        missing.add(name)
        return match.group(0)

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


class ServerSpec(BaseModel):
    """One entry of ``mcpServers``: what a server is started or reached with.

    ``timeout`` is the call timeout in milliseconds (Claude Code's per-server ``timeout``).
    ``plugin_root``/``plugin_data`` mark a plugin's server (named ``plugin:NAME:SERVER``).
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
    plugin_root: Optional[str] = Field(default=None, alias="pluginRoot")
    plugin_data: Optional[str] = Field(default=None, alias="pluginData")
    project_dir: Optional[str] = Field(default=None, alias="projectDir")

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
        """Read a ``.mcp.json`` file. Raises ConfigError for an unreadable file, bad JSON
        (with line and column) or bad entries. ``CLAUDE_PROJECT_DIR`` of its servers is the
        file's folder."""
        path = os.fspath(path)
        try:
            with open(path, encoding="utf-8-sig") as fh:  # an editor's BOM is no error
                data = json.load(fh)
        except OSError as exc:
            raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from exc
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}: not valid JSON at line {exc.lineno} column {exc.colno}: "
                              f"{exc.msg}") from exc
        folder = os.path.dirname(os.path.abspath(path))
        config = cls.from_dict(data, env=env, project_dir=folder, source=path)
        config.path = path
        return config

    @classmethod
    def from_dict(cls, data: Any, *, env: Mapping[str, str] | None = None,
                  project_dir: str | None = None, source: str = ".mcp.json") -> "McpConfig":
        """Validate ``{"mcpServers": {name: entry}}``. Raises ConfigError with every problem."""
        env = os.environ if env is None else env
        if not isinstance(data, dict) or not isinstance(data.get("mcpServers", {}), dict):
            raise ConfigError(f"{source}: expected an object with an object \"mcpServers\"")
        servers: list[ServerSpec] = []
        problems: list[str] = []
        warnings: list[str] = []
        for name, entry in data.get("mcpServers", {}).items():
            where = f"mcpServers.{name}"
            if not isinstance(entry, dict):
                problems.append(f"{where}: expected an object, got {type(entry).__name__}")
                continue
            unknown = sorted(str(k) for k in entry if k not in _ENTRY_FIELDS)
            if unknown:  # Claude Code ignores what it does not know (oauth, ...): so do we
                warnings.append(f"{where}: unknown field{'s' if len(unknown) > 1 else ''} "
                                f"ignored: {', '.join(unknown)}")
                entry = {k: v for k, v in entry.items() if k in _ENTRY_FIELDS}
            missing: set[str] = set()
            expanded = _expand_entry(entry, env, missing)
            if project_dir is not None:
                expanded.setdefault("projectDir", project_dir)
            try:
                servers.append(ServerSpec(name=name, **expanded))
            except ValidationError as exc:
                problems.extend(_describe(where, exc))
                continue
            except TypeError as exc:  # a field given twice, e.g. "name"
                problems.append(f"{where}: {exc}")
                continue
            if missing:
                warnings.append(f"{where}: Missing environment variables: "
                                f"{', '.join(sorted(missing))}")
        if problems:
            raise ConfigError(f"{source}: " + "; ".join(problems), problems)
        return cls(servers, warnings)


#: the keys an entry may have: the spec's fields (by name and by alias) and "type"; "name"
#: stays, to be refused as a field given twice
_ENTRY_FIELDS = frozenset({"type"} | set(ServerSpec.model_fields)
                          | {f.alias for f in ServerSpec.model_fields.values() if f.alias})


def _expand_entry(entry: dict, env: Mapping[str, str], missing: set[str]) -> dict:
    """Expand variables in command, args, env values, url and header values (Claude Code's
    places); values of the wrong type are left for validation to name."""
    out = dict(entry)

    def exp(value: Any) -> Any:
        return expand_vars(value, env, missing) if isinstance(value, str) else value

    for field in ("command", "url", "cwd"):
        if field in out:
            out[field] = exp(out[field])
    if isinstance(out.get("args"), list):
        out["args"] = [exp(a) for a in out["args"]]
    for field in ("env", "headers"):
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
