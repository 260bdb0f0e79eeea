"""Reading a config file: :class:`McpConfig`, the servers of one ``.mcp.json`` (or of another
client's file: :mod:`.dialects`), validated all at once. A bad file raises one
:class:`~raider_sync.errors.ConfigError` that names each bad server and field; nothing is half
loaded. Reading blocks only for the file."""
from __future__ import annotations

import os
from typing import Any, Mapping

from pydantic import ValidationError

from ..errors import ConfigError
from . import dialects
from .names import find_named
from .specs import ENTRY_FIELDS, OAUTH_FIELDS, ServerSpec
from .variables import expand_entry, input_variable, predefined_variables, read_env_file

#: the top-level keys that hold servers: Claude Code's and Cursor's, then VS Code's
SERVER_KEYS = ("mcpServers", "servers")


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
        text = dialects.read_text(path)
        notes: list[str] = []
        if dialects.detect(text, path) == "codex":
            data, notes = dialects.to_native(dialects.parse(text, "codex", path), "codex", path)
        else:
            data = dialects.parse_json(text, path)
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
        predefined = predefined_variables(env, project_dir)
        servers: list[ServerSpec] = []
        problems: list[str] = []
        owners: dict[str, str] = {}
        for where, name, entry in entries:
            if not isinstance(entry, dict):
                problems.append(f"{where}: expected an object, got {type(entry).__name__}")
                continue
            unknown = sorted(str(k) for k in entry if k not in ENTRY_FIELDS)
            if unknown:  # Claude Code ignores what it does not know: so do we
                warnings.append(f"{where}: unknown field{'s' if len(unknown) > 1 else ''} "
                                f"ignored: {', '.join(unknown)}")
                entry = {k: v for k, v in entry.items() if k in ENTRY_FIELDS}
            if isinstance(entry.get("oauth"), dict):
                unknown = sorted(str(k) for k in entry["oauth"] if k not in OAUTH_FIELDS)
                if unknown:
                    warnings.append(f"{where}.oauth: unknown field"
                                    f"{'s' if len(unknown) > 1 else ''} ignored: "
                                    f"{', '.join(unknown)}")
                    entry = {**entry, "oauth": {k: v for k, v in entry["oauth"].items()
                                                if k in OAUTH_FIELDS}}
            missing: set[str] = set()
            inputs: set[str] = set()
            expanded = expand_entry(entry, env, missing, predefined, inputs)
            if "envFile" in expanded:
                read_env_file(expanded, where, predefined["workspaceFolder"], warnings)
            if project_dir is not None:
                expanded.setdefault("projectDir", project_dir)
            try:
                spec = ServerSpec(name=name, **expanded)
            except ValidationError as exc:
                problems.extend(validation_problems(where, exc))
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


def validation_problems(where: str, exc: ValidationError) -> list[str]:
    """One line per problem pydantic found in the entry at ``where`` (a dotted path, or ""),
    each naming its field: ``where.field: message``; the gateway's config says them the same
    way."""
    problems = []
    for error in exc.errors():
        loc = ".".join(str(part) for part in error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = "unknown field"
        problems.append(f"{where}{'.' if where and loc else ''}{loc}: {message}")
    return problems
