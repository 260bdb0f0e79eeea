"""Variables in an entry of a config file: ``${VAR}``, ``${VAR:-default}``, the editors'
``${env:VAR}``, ``${input:ID}`` and predefined names (``${userHome}``,
``${workspaceFolder}``, ...), the draft standard's ``${value:TEXT}`` and chains of them, and an
entry's ``envFile``. Nothing is raised: what is missing is collected for the caller's
warnings, and what has the wrong type is left for validation to name."""
from __future__ import annotations

import os
import re
from typing import Any, Mapping

# ${VAR}, ${VAR:-default}, the editors' ${env:VAR}, ${input:ID} and ${/}, and the draft
# standard's ${value:LITERAL} and chains of them, ${env:A | env:B | value:C}
_VAR = re.compile(r"\$\{(?:(env|input|value):([^}]*)|([A-Za-z_][A-Za-z0-9_]*)(?::-(.*?))?|(/))\}")
#: where an ``${input:ID}`` of VS Code's format takes its value from: this prefix plus the ID
#: upper-cased, each character outside [A-Z0-9_] replaced with ``_``
INPUT_PREFIX = "RAIDER_SYNC_INPUT_"


def env_name(text: str) -> str:
    """``text`` as an environment variable's name: upper-cased, each character outside
    [A-Z0-9_] replaced with ``_``."""
    return re.sub(r"[^A-Z0-9_]", "_", text.upper())


def input_variable(input_id: str) -> str:
    """The environment variable that answers ``${input:ID}``: ``RAIDER_SYNC_INPUT_<ID>``."""
    return INPUT_PREFIX + env_name(input_id)


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


def predefined_variables(env: Mapping[str, str], project_dir: str | None) -> dict[str, str]:
    """The editors' predefined variables: the workspace is the project directory (else the
    working directory)."""
    folder = project_dir or os.getcwd()
    return {"userHome": env.get("HOME") or os.path.expanduser("~"), "workspaceFolder": folder,
            "workspaceFolderBasename": os.path.basename(folder.rstrip("/")) or folder,
            "pathSeparator": "/"}


def read_env_file(entry: dict, where: str, folder: str, warnings: list[str]) -> None:
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


def expand_entry(entry: dict, env: Mapping[str, str], missing: set[str],
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
