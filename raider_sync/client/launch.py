"""What a server spec starts: the call timeout, a stdio server's environment, the fingerprint,
the OAuth of an HTTP server.

Functions of a :class:`ServerSpec` (and the environment it inherits, or the ``auth`` its
server was given), so they can be read and tested without starting anything.
"""
from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Mapping

from ..config import ServerSpec
from ..errors import ConfigError

DEFAULT_STARTUP_TIMEOUT_MS = 30000
#: the call timeout when neither the spec's ``timeout`` nor MCP_TOOL_TIMEOUT gives one
DEFAULT_CALL_TIMEOUT_S = 600.0
PLUGIN_VARS = ("CLAUDE_PLUGIN_ROOT", "CLAUDE_PLUGIN_DATA")


def env_ms(name: str, default: float) -> float:
    """A positive number of milliseconds from the environment variable ``name``, else
    ``default``."""
    try:
        value = float(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if value > 0 else default


def startup_timeout_ms() -> float:
    """MCP_TIMEOUT, else 30000."""
    return env_ms("MCP_TIMEOUT", DEFAULT_STARTUP_TIMEOUT_MS)


def call_timeout(spec: ServerSpec) -> float:
    """Seconds a call may take: the spec's ``timeout`` (ms), else MCP_TOOL_TIMEOUT (ms),
    else 600."""
    if spec.timeout:
        return spec.timeout / 1000
    return env_ms("MCP_TOOL_TIMEOUT", DEFAULT_CALL_TIMEOUT_S * 1000) / 1000


def child_env(spec: ServerSpec, base_env: Mapping[str, str]) -> dict[str, str]:
    """The environment a stdio server starts with: ``base_env`` without inherited plugin
    variables, the spec's env, CLAUDE_PROJECT_DIR and a plugin's root and data folders."""
    env = {k: v for k, v in base_env.items() if k not in PLUGIN_VARS}
    env.update(spec.env)
    env["CLAUDE_PROJECT_DIR"] = spec.project_dir or os.getcwd()
    if spec.plugin_root is not None:
        env["CLAUDE_PLUGIN_ROOT"] = spec.plugin_root
    if spec.plugin_data is not None:
        env["CLAUDE_PLUGIN_DATA"] = spec.plugin_data
    return env


def fingerprint_parts(spec: ServerSpec, base_env: Mapping[str, str]) -> dict[str, Any]:
    """What the server is started with, field by field (see :func:`fingerprint`).

    The project directory counts where the server sees it: as CLAUDE_PROJECT_DIR in a stdio
    server's environment (the entry's ``projectDir``, else the working directory, so a file
    loaded from the working directory and the same dict given to ``from_dict`` agree), and
    as the folder a ``headersHelper`` runs in."""
    if spec.transport == "stdio":
        what: dict[str, Any] = {"command": spec.command, "args": spec.args, "cwd": spec.cwd,
                                "env": child_env(spec, base_env)}
    else:
        what = {"url": spec.url, "headers": spec.headers, "headers_helper": spec.headers_helper}
        if spec.headers_helper:
            what["project_dir"] = spec.project_dir or os.getcwd()
    what.update(transport=spec.transport, prefix=spec.key, timeout=call_timeout(spec),
                max_message_size=spec.max_message_size)
    if spec.allowed_tools is not None or spec.disabled_tools:  # another set of tools
        what.update(allowed_tools=spec.allowed_tools, disabled_tools=spec.disabled_tools)
    return what


def fingerprint(spec: ServerSpec, base_env: Mapping[str, str]) -> str:
    """What the server is started with, as one string: the transport, the command, arguments,
    working directory and whole environment (CLAUDE_PROJECT_DIR included) of a stdio server,
    the URL and headers of an HTTP one, the tool prefix, the call timeout, the message size
    limit and the tool filter. Equal fingerprints talk to the same thing. A digest, so
    secrets in env and headers are never shown."""
    what = fingerprint_parts(spec, base_env)
    digest = hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()
    return f"{spec.transport}:{spec.key}:{digest[:32]}"


def what_changed(old: dict[str, Any], new: dict[str, Any]) -> str:
    """The fields in which two :func:`fingerprint_parts` differ, for people: ``args, env
    (API_KEY)``. Names of variables and headers only, never their values."""
    changes = []
    for field in sorted(set(old) | set(new)):
        before, after = old.get(field), new.get(field)
        if before == after:
            continue
        if isinstance(before, dict) and isinstance(after, dict):
            names = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
            shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
            changes.append(f"{field} ({shown})")
        else:
            changes.append(field)
    return ", ".join(changes)


def auth_for(spec: ServerSpec, auth: Any) -> Any:
    """The OAuth of an HTTP server: ``auth`` (an OAuth, bound to the server; or a factory
    called with the spec), else one made from the entry's oauth block. None for stdio, and
    for an entry that sets its own ``Authorization`` header without an ``oauth`` key: OAuth
    does not take such an entry over unless the entry asks for it (or a factory does)."""
    if spec.transport not in ("http", "sse"):
        return None
    from ..auth import OAuth
    url = spec.url
    if url is None:  # McpConfig refuses such an entry; a ServerSpec made by hand may lack it
        raise ConfigError(f"{spec.name}: an {spec.transport} server needs a url")
    own_header = spec.oauth is None and any(
        name.lower() == "authorization" for name in spec.headers)
    if auth is None:
        return None if own_header else OAuth.for_spec(spec)
    if isinstance(auth, OAuth):
        return None if own_header else auth.bind(url, spec.name)
    if callable(auth):
        made = auth(spec)
        if made is None:
            return None
        if not isinstance(made, OAuth):
            raise TypeError(f"auth factory must return an OAuth, not {type(made).__name__}")
        return made.bind(url, spec.name)
    raise TypeError(f"auth must be an OAuth or a factory fn(spec) -> OAuth, not "
                    f"{type(auth).__name__}")
