"""Other clients' MCP configuration files, read as they are and written for them.

raider_sync's own format is Claude Code's ``.mcp.json`` (``{"mcpServers": {...}}``, see
:mod:`raider_sync.config`), which Cursor and Claude Desktop share and which loads VS Code's
``{"servers": ...}`` too. This module converts, on the *unexpanded* documents (a ``${TOKEN}``
stays a reference: no secret is ever written into a file), between it and:

- ``claude-desktop``: ``claude_desktop_config.json``, stdio servers only;
- ``vscode``: VS Code's ``mcp.json``, ``servers`` with a required ``type`` and ``${env:VAR}``;
- ``mcp-json``: the draft standard ``mcp.json`` (SEP-2633): a required ``type`` of ``stdio``,
  ``sse`` or ``streamable-http``; ``title`` and ``description``; ``oauth`` with ``clientId``,
  ``scopes`` and ``redirectUri``; ``${env:VAR | value:DEFAULT}``;
- ``codex``: Codex's ``config.toml``, ``[mcp_servers.NAME]`` tables.

:func:`to_native` reads one of them into an ``.mcp.json`` document and :func:`from_native`
writes one from it; both return the document and a warning per field the other side has no
place for (a field is dropped with a warning, never silently). Reading TOML needs ``tomllib``
(Python 3.11+) or ``tomli``; writing it needs ``tomli-w``: ``pip install raider_sync[toml]``.
"""
from __future__ import annotations

import importlib
import json
import re
from typing import Any, Callable

from ..errors import ConfigError

#: the formats this module reads and writes ("claude" is raider_sync's own)
FORMATS = ("claude", "claude-desktop", "vscode", "mcp-json", "codex")

#: ${VAR} and ${VAR:-default} of the native format
_NATIVE_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-(.*?))?\}")
#: a value that is nothing but one variable
_ONLY_VAR = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$")
_BEARER_VAR = re.compile(r"^Bearer \$\{([A-Za-z_][A-Za-z0-9_]*)\}$")

Document = dict
Warnings = list


def detect(text: str, path: str = "") -> str:
    """The format of a configuration file's text: ``codex`` for TOML (by a ``.toml`` path or
    a ``[mcp_servers...]`` table), ``vscode`` for a ``servers`` object, else ``claude``."""
    if path.endswith(".toml") or re.search(r"^\s*\[mcp_servers[.\]]", text, re.M):
        return "codex"
    try:
        data = json.loads(text)
    except ValueError:
        return "claude"
    if isinstance(data, dict) and "servers" in data and "mcpServers" not in data:
        return "vscode"
    return "claude"


def parse(text: str, format: str, source: str = "config") -> dict:
    """The document in ``text`` (JSON, or TOML for ``codex``). Raises ConfigError for text
    that does not parse, with where."""
    _check_format(format)
    if format == "codex":
        return parse_toml(text, source)
    data = parse_json(text, source)
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected an object")
    return data


def render(document: dict, format: str) -> str:
    """``document`` as the text of a ``format`` file (TOML for ``codex``, else JSON)."""
    _check_format(format)
    if format == "codex":
        try:
            import tomli_w
        except ImportError:
            raise ConfigError("writing Codex's TOML needs tomli-w: "
                              "pip install 'raider_sync[toml]'") from None
        return tomli_w.dumps(document)
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def to_native(document: dict, format: str, source: str = "config") -> tuple[dict, list[str]]:
    """An ``.mcp.json`` document (``{"mcpServers": ...}``) from a ``format`` document, and a
    warning per field left out. Raises ConfigError for a document without its servers'
    object where the format puts it."""
    _check_format(format)
    readers: dict[str, Callable[[dict, str, list[str]], dict]] = {
        "claude": _servers_of("mcpServers"), "claude-desktop": _servers_of("mcpServers"),
        "vscode": _from_vscode, "mcp-json": _from_mcp_json, "codex": _from_codex}
    warnings: list[str] = []
    servers = readers[format](document, source, warnings)
    return {"mcpServers": servers}, warnings


def from_native(document: dict, format: str, source: str = ".mcp.json"
                ) -> tuple[dict, list[str]]:
    """A ``format`` document from an ``.mcp.json`` one (``mcpServers``, or VS Code's
    ``servers``), and a warning per field the format cannot hold."""
    _check_format(format)
    servers: dict = {}
    for key in ("mcpServers", "servers"):
        if isinstance(document.get(key), dict):
            for name, entry in document[key].items():
                servers.setdefault(name, entry)
    writers: dict[str, Callable[[str, dict, list[str]], dict | None]] = {
        "claude": _to_claude, "claude-desktop": _to_desktop, "vscode": _to_vscode,
        "mcp-json": _to_mcp_json, "codex": _to_codex}
    warnings: list[str] = []
    out: dict = {}
    for name, entry in servers.items():
        if not isinstance(entry, dict):
            warnings.append(f"{name}: not an object; left out")
            continue
        written = writers[format](name, entry, warnings)
        if written is not None:
            out[name] = written
    top = {"vscode": "servers", "codex": "mcp_servers"}.get(format, "mcpServers")
    return {top: out}, warnings


# -- reading ---------------------------------------------------------------------------------

def _servers_of(key: str) -> Callable[[dict, str, list[str]], dict]:
    def read(document: dict, source: str, warnings: list[str]) -> dict:
        servers = document.get(key, {})
        if not isinstance(servers, dict):
            raise ConfigError(f"{source}: {key}: expected an object")
        return dict(servers)
    return read


def _from_vscode(document: dict, source: str, warnings: list[str]) -> dict:
    servers = _servers_of("servers")(document, source, warnings)
    if document.get("inputs"):
        warnings.append(f"{source}: inputs: not kept; an ${{input:ID}} takes its value from "
                        f"the environment variable RAIDER_SYNC_INPUT_<ID>")
    return servers  # the loader reads VS Code's entries and variables as they are


def _from_mcp_json(document: dict, source: str, warnings: list[str]) -> dict:
    servers = _servers_of("mcpServers")(document, source, warnings)
    out = {}
    for name, entry in servers.items():
        if isinstance(entry, dict) and entry.get("type") == "streamable-http":
            entry = {**entry, "type": "http"}
        # the loader reads ${env:A | value:B}, ${value:...}, title, description and
        # oauth.redirectUri as they are
        out[name] = entry
    return out


#: Codex keys and where they go; the rest is handled one by one in _from_codex
_CODEX_SAME = ("command", "args", "env", "cwd", "url")


def _from_codex(document: dict, source: str, warnings: list[str]) -> dict:
    tables = document.get("mcp_servers", {})
    if not isinstance(tables, dict):
        raise ConfigError(f"{source}: mcp_servers: expected a table")
    out: dict = {}
    for name, table in tables.items():
        where = f"mcp_servers.{name}"
        if not isinstance(table, dict):
            out[name] = table
            continue
        if table.get("enabled") is False:
            warnings.append(f"{where}: enabled = false; left out")
            continue
        entry: dict[str, Any] = {k: table[k] for k in _CODEX_SAME if k in table}
        if "url" in entry:
            entry = {"type": "http", **entry}
        env = dict(entry.get("env") or {})
        for variable in table.get("env_vars") or []:
            env.setdefault(variable, f"${{{variable}}}")  # passed through from the environment
        if env:
            entry["env"] = env
        headers = dict(table.get("http_headers") or {})
        for header, variable in (table.get("env_http_headers") or {}).items():
            headers[header] = f"${{{variable}}}"
        if table.get("bearer_token_env_var"):
            headers["Authorization"] = f"Bearer ${{{table['bearer_token_env_var']}}}"
        if headers:
            entry["headers"] = headers
        if "tool_timeout_sec" in table:
            entry["timeout"] = int(float(table["tool_timeout_sec"]) * 1000)
        if "enabled_tools" in table:
            entry["allowedTools"] = list(table["enabled_tools"])
        if "disabled_tools" in table:
            entry["disabledTools"] = list(table["disabled_tools"])
        oauth: dict[str, Any] = {}
        if "scopes" in table:
            oauth["scopes"] = list(table["scopes"])
        codex_oauth = table.get("oauth")
        if isinstance(codex_oauth, dict):
            if "client_id" in codex_oauth:
                oauth["clientId"] = codex_oauth["client_id"]
            _dropped(warnings, f"{where}.oauth", [k for k in codex_oauth if k != "client_id"])
        if oauth:
            entry["oauth"] = oauth
        known = set(_CODEX_SAME) | {"enabled", "env_vars", "http_headers", "env_http_headers",
                                    "bearer_token_env_var", "tool_timeout_sec", "enabled_tools",
                                    "disabled_tools", "scopes", "oauth"}
        _dropped(warnings, where, [k for k in table if k not in known])
        out[name] = entry
    return out


# -- writing ---------------------------------------------------------------------------------

def _transport(entry: dict) -> str:
    kind = entry.get("type")
    if kind in ("http", "streamable-http", "streamableHttp"):
        return "http"
    if kind in ("stdio", "sse"):
        return kind
    return "stdio" if "command" in entry or "url" not in entry else "http"


def _to_claude(name: str, entry: dict, warnings: list[str]) -> dict:
    return dict(entry)


def _to_desktop(name: str, entry: dict, warnings: list[str]) -> dict | None:
    if _transport(entry) != "stdio":
        warnings.append(f"{name}: Claude Desktop's file holds stdio servers only (add a remote "
                        f"server as a connector); left out")
        return None
    return _keep(name, entry, ("command", "args", "env"), warnings)


def _to_vscode(name: str, entry: dict, warnings: list[str]) -> dict:
    kind = _transport(entry)
    fields = (("command", "args", "env", "envFile") if kind == "stdio"
              else ("url", "headers"))
    out = {"type": kind, **_keep(name, entry, fields + ("type",), warnings)}
    return _rewrite_vars(name, out, warnings, _vscode_var)


def _to_mcp_json(name: str, entry: dict, warnings: list[str]) -> dict:
    kind = _transport(entry)
    fields = (("command", "args", "env") if kind == "stdio" else ("url", "headers", "oauth"))
    out = {"type": "streamable-http" if kind == "http" else kind,
           **_keep(name, entry, fields + ("type", "title", "description"), warnings)}
    if isinstance(out.get("oauth"), dict):
        oauth = out["oauth"]
        kept = {k: oauth[k] for k in ("clientId", "scopes") if k in oauth}
        if isinstance(kept.get("scopes"), str):
            kept["scopes"] = kept["scopes"].split()
        if "callbackPort" in oauth:
            kept["redirectUri"] = f"http://localhost:{oauth['callbackPort']}/callback"
        _dropped(warnings, f"{name}.oauth", [k for k in oauth if k not in
                                             ("clientId", "scopes", "callbackPort")])
        out["oauth"] = kept
    return _rewrite_vars(name, out, warnings, _mcp_json_var)


def _to_codex(name: str, entry: dict, warnings: list[str]) -> dict:
    kind = _transport(entry)
    if kind == "sse":
        warnings.append(f"{name}: Codex reaches Streamable HTTP servers, not the old SSE "
                        f"transport; written as a url all the same")
    table: dict[str, Any] = {}
    for field in ("command", "args", "cwd", "url"):
        if field in entry:
            table[field] = entry[field]
            if "${" in json.dumps(entry[field]):
                warnings.append(f"{name}.{field}: Codex does not expand variables; written "
                                f"as it is")
    env: dict[str, str] = {}
    passed: list[str] = []
    for key, value in (entry.get("env") or {}).items():
        match = _ONLY_VAR.match(str(value))
        if match and match.group(1) == key:
            passed.append(key)  # Codex passes a variable through by its name
        elif "${" in str(value):
            warnings.append(f"{name}.env.{key}: Codex does not expand variables; left out")
        else:
            env[key] = value
    if env:
        table["env"] = env
    if passed:
        table["env_vars"] = passed
    headers: dict[str, str] = {}
    env_headers: dict[str, str] = {}
    for header, value in (entry.get("headers") or {}).items():
        bearer = _BEARER_VAR.match(str(value)) if header.lower() == "authorization" else None
        only = _ONLY_VAR.match(str(value))
        if bearer:
            table["bearer_token_env_var"] = bearer.group(1)
        elif only:
            env_headers[header] = only.group(1)
        elif "${" in str(value):
            warnings.append(f"{name}.headers.{header}: Codex takes a header from one whole "
                            f"variable only; left out")
        else:
            headers[header] = value
    if headers:
        table["http_headers"] = headers
    if env_headers:
        table["env_http_headers"] = env_headers
    if isinstance(entry.get("timeout"), (int, float)) and not isinstance(entry["timeout"], bool):
        table["tool_timeout_sec"] = entry["timeout"] / 1000
    if "allowedTools" in entry:
        table["enabled_tools"] = list(entry["allowedTools"])
    if "disabledTools" in entry:
        table["disabled_tools"] = list(entry["disabledTools"])
    oauth = entry.get("oauth")
    if isinstance(oauth, dict):
        if "scopes" in oauth:
            scopes = oauth["scopes"]
            table["scopes"] = scopes.split() if isinstance(scopes, str) else list(scopes)
        if "clientId" in oauth:
            table["oauth"] = {"client_id": oauth["clientId"]}
        _dropped(warnings, f"{name}.oauth", [k for k in oauth if k not in ("clientId", "scopes")])
    _dropped(warnings, name, [k for k in entry if k not in
                              ("type", "command", "args", "cwd", "url", "env", "headers",
                               "timeout", "allowedTools", "disabledTools", "oauth")])
    return table


def _keep(name: str, entry: dict, fields: tuple[str, ...], warnings: list[str]) -> dict:
    _dropped(warnings, name, [k for k in entry if k not in fields])
    return {k: entry[k] for k in fields if k in entry and k != "type"}


def _dropped(warnings: list[str], where: str, keys: list[str]) -> None:
    if keys:
        warnings.append(f"{where}: no place for {', '.join(sorted(map(str, keys)))} in this "
                        f"format; left out")


def _vscode_var(name: str, default: str | None, where: str, warnings: list[str]) -> str:
    if default is not None:
        warnings.append(f"{where}: VS Code has no default for a variable; ${{{name}}}'s "
                        f"default {default!r} left out")
    return f"${{env:{name}}}"


def _mcp_json_var(name: str, default: str | None, where: str, warnings: list[str]) -> str:
    return f"${{env:{name}}}" if default is None else f"${{env:{name} | value:{default}}}"


def _rewrite_vars(name: str, entry: dict, warnings: list[str],
                  write: Callable[[str, str | None, str, list[str]], str]) -> dict:
    """``entry`` with every native ``${VAR}`` / ``${VAR:-D}`` written the editors' way."""
    def rewrite(value: Any, where: str) -> Any:
        if isinstance(value, str):
            return _NATIVE_VAR.sub(lambda m: write(m.group(1), m.group(2), where, warnings),
                                   value)
        if isinstance(value, list):
            return [rewrite(v, where) for v in value]
        if isinstance(value, dict):
            return {k: rewrite(v, f"{where}.{k}") for k, v in value.items()}
        return value
    return {k: rewrite(v, f"{name}.{k}") for k, v in entry.items()}


def _check_format(format: str) -> None:
    if format not in FORMATS:
        raise ConfigError(f"unknown configuration format {format!r} (use one of "
                          f"{', '.join(FORMATS)})")


def read_text(path: str) -> str:
    """The text of the config file at ``path``, an editor's BOM left out. Raises ConfigError
    for a file that cannot be read, or that is not UTF-8."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text") from exc


def parse_json(text: str, source: str = "config") -> Any:
    """The JSON document in ``text``. Raises ConfigError for text that does not parse, with
    its line and column, or that nests too deeply."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{source}: not valid JSON at line {exc.lineno} column {exc.colno}: "
                          f"{exc.msg}") from None
    except RecursionError:
        raise ConfigError(f"{source}: JSON nested too deeply") from None


def parse_toml(text: str, source: str = "config") -> dict:
    """The TOML document in ``text``, with ``tomllib`` (Python 3.11+) or ``tomli`` (the
    ``toml`` extra, for 3.10). Raises ConfigError for text that does not parse, with where, or
    when neither reader is installed."""
    toml = _toml_reader()
    try:
        return toml.loads(text)
    except toml.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}") from None


def _toml_reader() -> Any:
    for name in ("tomllib", "tomli"):  # the standard library's from Python 3.11
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    raise ConfigError("reading TOML on Python 3.10 needs tomli: "
                      "pip install 'raider_sync[toml]'")
