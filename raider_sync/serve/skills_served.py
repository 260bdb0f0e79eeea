"""The skills a ToolServer serves (the ``io.modelcontextprotocol/skills`` extension, SEP-2640):
``skills/list``, ``skills/get`` and ``resources/directory/read``, and the skills' files as
resources (listed by ``resources/list``, read with ``resources/read``).

    skills = ServedSkills()
    skills.add(skill_from_folder("skills/pdf-processing"))   # see .skill_files
    answer(skills, "skills/get", {"uri": "skill://pdf-processing/SKILL.md"}, page)

A server with skills declares the extension inline: ``capabilities.extensions
["io.modelcontextprotocol/skills"] = {"directoryRead": true}`` (:func:`capability`). Every
folder level under ``skill://`` is a directory resource (``mimeType: inode/directory``) that
``resources/directory/read`` lists the direct children of; it is not in ``resources/list``.
Nothing here blocks: a skill's files were read when it was added.
"""
from __future__ import annotations

import threading
from typing import Callable
from urllib.parse import unquote

from ..errors import McpError
from ..protocol.codes import INVALID_PARAMS
from .skill_files import SCHEME, SKILL_MD, Skill, SkillFile
from .templates import content_item

EXTENSION = "io.modelcontextprotocol/skills"
#: the methods the extension adds; in the stateless era their results carry ttlMs and
#: cacheScope, as the lists' do
METHODS = ("skills/list", "skills/get", "resources/directory/read")
DIRECTORY = "inode/directory"

Page = Callable[[list, str, dict], dict]


def capability() -> dict:
    """The ``capabilities.extensions`` of a server with skills."""
    return {EXTENSION: {"directoryRead": True}}


def answer(skills: "ServedSkills", method: str, params: dict, page: Page) -> dict:
    """The result of one of :data:`METHODS`; ``page(items, field, params)`` cuts a list into
    the page the request's cursor asks for. Raises McpError -32602 for a URI that is not a
    skill's SKILL.md (skills/get) or not a directory (resources/directory/read)."""
    if method == "skills/list":
        return page(skills.entries(), "skills", params)
    uri = params.get("uri")
    if not isinstance(uri, str) or not uri:
        raise McpError(INVALID_PARAMS, "uri must be a non-empty string")
    if method == "skills/get":
        return {"skill": skills.entry(uri)}
    return page(skills.directory(uri), "resources", params)


class _Index:
    """What the skills serve, by URI: each file (with the skill that names it) and each
    directory's children."""

    def __init__(self, skills: list[Skill]):
        self.files: dict[str, tuple[Skill, SkillFile]] = {}
        for skill in skills:
            for file in skill.files:
                known = self.files.get(file.uri)
                if known is not None and known[1].data != file.data:
                    raise ValueError(f"skill {skill.skill_path!r}: {file.uri} differs from "
                                     f"the same file of skill {known[0].skill_path!r}")
                if known is None or file.path == SKILL_MD:  # a SKILL.md is its skill's
                    self.files[file.uri] = (skill, file)
        self.directories: dict[str, dict[str, dict]] = {}
        for uri, (skill, file) in self.files.items():
            parts = uri[len(SCHEME):].split("/")
            for depth in range(1, len(parts)):
                folder = SCHEME + "/".join(parts[:depth])
                child = SCHEME + "/".join(parts[:depth + 1])
                children = self.directories.setdefault(folder, {})
                children[child] = (skill.resource(file) if depth == len(parts) - 1 else
                                   {"uri": child, "name": unquote(parts[depth]),
                                    "mimeType": DIRECTORY})
        clash = sorted(set(self.files) & set(self.directories))
        if clash:
            raise ValueError(f"{clash[0]} is a file of one skill and a folder of another")


class ServedSkills:
    """The skills of one tool server, by the URI of their SKILL.md. Thread-safe: adding a
    skill builds a new index, which readers take whole."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._skills: dict[str, Skill] = {}
        self._index = _Index([])

    def __len__(self) -> int:
        return len(self._skills)

    def add(self, skill: Skill) -> None:
        """Serve ``skill``, in place of one at the same URI. Raises ValueError when one of its
        files is served by another skill with other bytes (nothing changes then)."""
        with self._lock:
            skills = {**self._skills, skill.uri: skill}
            index = _Index([skills[uri] for uri in sorted(skills)])
            self._skills, self._index = skills, index

    def entries(self) -> list[dict]:
        """The ``skills/list`` entries, by URI."""
        skills = self._skills
        return [skills[uri].entry() for uri in sorted(skills)]

    def entry(self, uri: str) -> dict:
        """The entry of the skill whose SKILL.md is ``uri``. Raises McpError -32602."""
        skill = self._skills.get(uri)
        if skill is None:
            raise McpError(INVALID_PARAMS, f"no skill is served at {uri}", {"uri": uri})
        return skill.entry()

    def resources(self) -> list[dict]:
        """The ``resources/list`` entries of every skill's files."""
        return [skill.resource(file) for skill, file in self._index.files.values()]

    def contents(self, uri: str) -> list[dict] | None:
        """The ``resources/read`` contents of a skill's file, or None for any other URI."""
        found = self._index.files.get(uri)
        if found is None:
            return None
        file = found[1]
        return [content_item(uri, file.mime_type, file.content())]

    def directory(self, uri: str) -> list[dict]:
        """The direct children of the directory ``uri``: files as ``resources/list`` has
        them, folders as directory resources. Raises McpError -32602 for any other URI."""
        children = self._index.directories.get(uri.rstrip("/"))  # a trailing / is forgiven
        if children is None:
            raise McpError(INVALID_PARAMS, f"{uri} is not a directory of the skills served",
                           {"uri": uri})
        return [children[child] for child in sorted(children)]

