"""Skills over MCP (the ``io.modelcontextprotocol/skills`` extension).

    skills = server.list_skills()            # [{uri, frontmatter, resources: [{uri, digest, size}]}]
    skill = server.get_skill(skills[0]["uri"])
    skill["body"], skill["files"]            # verified text of SKILL.md and of every other file

A server lists its skills with ``skills/list``; each entry names its ``SKILL.md`` and the other
files (resources) with their size in bytes and ``sha256:`` digest. Nothing is read while
listing. :func:`get_skill` reads ``SKILL.md``, checks its size and digest, then its
frontmatter against the entry's, field by field, and only then reads the other files, each
checked the same way. Any mismatch raises :class:`~raider_sync.errors.SkillRejected` and
nothing more is read. A ``skill://`` URI read through :class:`~raider_sync.Resources` (an
``@server:skill://...`` mention) is checked against its entry the same way.

The frontmatter compared is the flat ``key: value`` block between the leading ``---`` lines;
anything else there (nested values, lists) counts as a discrepancy: the skill is not loaded.
"""
from __future__ import annotations

import hashlib
from typing import Any

from ..errors import McpError, SkillRejected
from ..protocol import fetch_all_pages

EXTENSION = "io.modelcontextprotocol/skills"


def list_skills(server: Any, timeout: float, cache: str = "use") -> list[dict]:
    """Every skill entry the server lists (every page). Raises McpError, NotConnected."""
    def request(params: dict | None, seconds: float) -> dict:
        return server._request_f("skills/list", params, seconds, cache=cache).result(seconds + 1)
    skills = fetch_all_pages(request, "skills", timeout)
    return [skill for skill in skills if isinstance(skill, dict) and isinstance(
        skill.get("uri"), str)]


def find_entry(skills: list[dict], uri: str) -> tuple[dict, dict] | None:
    """The skill entry, and its file entry, that list ``uri``."""
    for skill in skills:
        for item in skill.get("resources") or []:
            if isinstance(item, dict) and item.get("uri") == uri:
                return skill, item
        if skill.get("uri") == uri:
            return skill, {"uri": uri}
    return None


def verify(text: str, item: dict) -> None:
    """Check one file's text against its entry's ``size`` and ``digest``. Raises
    SkillRejected naming the file and what differs."""
    data = text.encode("utf-8")
    size = item.get("size")
    if isinstance(size, int) and len(data) != size:
        raise SkillRejected(f"{item['uri']}: {len(data)} bytes read, the skill's entry says "
                            f"{size}; not used")
    digest = item.get("digest")
    if isinstance(digest, str):
        algorithm, _, expected = digest.partition(":")
        if algorithm.lower() != "sha256" or not expected:
            raise SkillRejected(f"{item['uri']}: digest {digest!r} is not a sha256 digest")
        if hashlib.sha256(data).hexdigest() != expected.lower():
            raise SkillRejected(f"{item['uri']}: its sha256 digest differs from the skill's "
                                f"entry; not used")


def frontmatter(text: str) -> dict | None:
    """The flat ``key: value`` frontmatter of a SKILL.md, or None when it has none or it
    holds anything but flat scalar lines."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return None
    fields: dict[str, str] = {}
    for line in lines[1:]:
        if line.strip() == "---":
            return fields
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, sep, value = line.partition(":")
        if not sep or line[:1].isspace() or not key.strip():
            return None
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        fields[key.strip()] = value
    return None


def read_text(server: Any, uri: str, timeout: float) -> str:
    contents = server.read_resource(uri, timeout=timeout, cache="bypass")
    texts = [c.get("text") for c in contents if isinstance(c, dict)]
    strings = [t for t in texts if isinstance(t, str)]
    if not texts or len(strings) != len(texts):
        raise SkillRejected(f"{uri}: the server did not answer with text")
    return "".join(strings)


def get_skill(server: Any, uri: str, timeout: float) -> dict:
    """The skill whose entry is ``uri`` (its SKILL.md), every file verified:
    ``{uri, frontmatter, body, files: {uri: text}}``. Raises SkillRejected for a skill that is
    not listed or fails verification, McpError for a failed read."""
    skills = list_skills(server, timeout)
    found = find_entry(skills, uri)
    if found is None:
        raise SkillRejected(f"{uri}: the server lists no skill with that URI")
    skill, _ = found
    items = {item["uri"]: item for item in skill.get("resources") or []
             if isinstance(item, dict) and isinstance(item.get("uri"), str)}
    main = items.get(skill["uri"], {"uri": skill["uri"]})
    body = read_text(server, skill["uri"], timeout)
    verify(body, main)
    declared = skill.get("frontmatter")
    if not isinstance(declared, dict):
        declared = {}
    parsed = frontmatter(body)
    if parsed is None or any(str(parsed.get(key)) != str(value)
                             for key, value in declared.items()):
        raise SkillRejected(f"{skill['uri']}: its frontmatter differs from the skill's entry; "
                            f"the skill is not loaded")
    files = {}
    for file_uri, item in items.items():
        if file_uri == skill["uri"]:
            continue
        text = read_text(server, file_uri, timeout)
        verify(text, item)
        files[file_uri] = text
    return {"uri": skill["uri"], "frontmatter": parsed, "body": body, "files": files}


def read_verified(server: Any, uri: str, timeout: float) -> list[dict]:
    """resources/read of a ``skill://`` URI, checked against the skill entry that lists it
    (unlisted ones are read unchecked). Raises SkillRejected, McpError."""
    try:
        found = find_entry(list_skills(server, timeout), uri)
    except McpError:
        found = None  # a server without skills/list: nothing to check against
    contents = server.read_resource(uri, timeout=timeout, cache="bypass")
    if found is not None:
        verify("".join(c.get("text") or "" for c in contents if isinstance(c, dict)), found[1])
    return contents
