"""Customer keys from outside the config file, as secrets managers hand them out.

Besides the config's ``keys`` list, keys come from

- ``keys_dir``: a directory whose ``*.json`` files each hold one key entry or a list of them
  (a mounted Kubernetes secret, a Vault agent template), read in name order;
- ``keys_env``: the name of an environment variable that holds a JSON list of key entries.

An entry there is the config's key entry (``id``, ``servers``, and ``env`` or ``sha256``), and
may also give the key itself as ``key``: the file or the variable is the secret already. The
key is turned into its SHA-256 at once and kept nowhere else. All keys together are checked as
the config's are (one id once, only configured servers). A relay re-reads every source on
:meth:`~raider_sync.gateway.relay.Relay.reload_keys` (SIGHUP under ``raider-sync gateway``).

Reading raises nothing: problems are added to the list given, each naming the file or the
variable and the entry. :func:`authenticate` finds the key a request presents.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
from typing import Any, Iterable, Mapping, Optional

#: a configured key as a request is checked against it: (key id, SHA-256 of the key, the
#: names of the servers it may use)
KeyDigest = tuple[str, bytes, frozenset]


def authenticate(environ: dict, digests: Iterable[KeyDigest]
                 ) -> Optional[tuple[str, frozenset, str]]:
    """``(key id, server names, key)`` of the key the request presents
    (``Authorization: Bearer KEY``, else ``X-Api-Key: KEY``), compared in constant time with
    every key of ``digests`` (no early exit), or ``None``."""
    token = None
    authorization = environ.get("HTTP_AUTHORIZATION", "")
    scheme, _, value = authorization.strip().partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        token = value.strip()
    if token is None:
        token = environ.get("HTTP_X_API_KEY", "").strip() or None
    if token is None:
        return None
    digest = hashlib.sha256(token.encode("latin-1", "replace")).digest()
    found = None
    for key_id, expected, servers in digests:
        if hmac.compare_digest(digest, expected) and found is None:
            found = (key_id, servers, token)
    return found


def external_entries(data: Mapping[str, Any], env: Mapping[str, str],
                     problems: list[str]) -> list[tuple[str, Any]]:
    """``(label, entry)`` for every key entry of ``keys_dir`` and ``keys_env`` in ``data``, with
    any inline ``key`` replaced by its ``sha256``; unreadable sources go to ``problems``."""
    out: list[tuple[str, Any]] = []
    directory = data.get("keys_dir")
    if directory is not None:
        if not isinstance(directory, str) or not directory:
            problems.append("keys_dir: expected the path of a directory")
        else:
            out.extend(_from_dir(directory, problems))
    name = data.get("keys_env")
    if name is not None:
        if not isinstance(name, str) or not name:
            problems.append("keys_env: expected the name of an environment variable")
        elif not env.get(name):
            problems.append(f"keys_env: environment variable {name} is not set")
        else:
            out.extend(_parsed(f"keys_env ({name})", env[name].encode("utf-8"), problems))
    return out


def _from_dir(directory: str, problems: list[str]) -> list[tuple[str, Any]]:
    try:
        names = sorted(n for n in os.listdir(directory) if n.endswith(".json"))
    except OSError as exc:
        problems.append(f"keys_dir: cannot read {directory}: {exc.strerror or exc}")
        return []
    out = []
    for name in names:
        try:
            with open(os.path.join(directory, name), "rb") as fh:
                raw = fh.read()
        except OSError as exc:
            problems.append(f"keys_dir/{name}: cannot read it: {exc.strerror or exc}")
            continue
        out.extend(_parsed(f"keys_dir/{name}", raw, problems))
    return out


def _parsed(label: str, raw: bytes, problems: list[str]) -> list[tuple[str, Any]]:
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        problems.append(f"{label}: not a JSON key entry or list of entries")
        return []
    entries = data if isinstance(data, list) else [data]
    out = []
    for i, entry in enumerate(entries):
        where = label if len(entries) == 1 and not isinstance(data, list) else f"{label}[{i}]"
        if isinstance(entry, dict) and "key" in entry:
            key = entry["key"]
            entry = {k: v for k, v in entry.items() if k != "key"}
            if not isinstance(key, str) or not key:
                problems.append(f"{where}.key: expected the key as a non-empty string")
                continue
            if "sha256" in entry or "env" in entry:
                problems.append(f"{where}.key: give the key by exactly one of key, env or sha256")
                continue
            entry["sha256"] = hashlib.sha256(key.encode("utf-8")).hexdigest()
        out.append((where, entry))
    return out
