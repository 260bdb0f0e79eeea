"""A skill as a ToolServer serves it: its files, read once, and its SKILL.md's frontmatter,
checked against the Agent Skills rules and the skills extension's (SEP-2640).

    skill = skill_from_folder("skills/pdf-processing")        # skill://pdf-processing/SKILL.md
    skill = skill_from_text("acme/refunds", SKILL_MD, {"examples/email.md": "..."})
    skill.entry()      # {uri, frontmatter, resources: [{uri, digest: "sha256:...", size}]}

Every problem is a ValueError that names the skill and what is wrong: no SKILL.md, a
frontmatter without ``name`` or ``description``, a name that breaks the naming rules or
differs from the skill path's last segment, more than :data:`MAX_FILES` files or
:data:`MAX_BYTES` bytes, a file path that leaves the skill's folder.

The frontmatter is read as the YAML subset that every YAML reader (and raider_sync's own
client) reads alike: ``key: value`` lines of single-line strings, plain or quoted, and maps of
such lines one level deep (``metadata:``). What YAML would read as something else (``true``,
``1.0``, ``2024-01-01``, an empty value), a list, a multi-line value or an escape sequence is
refused with the line it is on: quote it, or write it otherwise. Nothing here blocks but
reading the folder.
"""
from __future__ import annotations

import hashlib
import mimetypes
import os
import re
from dataclasses import dataclass, field
from urllib.parse import quote

SCHEME = "skill://"
SKILL_MD = "SKILL.md"
#: the extension's limits on one skill: its files (SKILL.md included) and their bytes
MAX_FILES = 512
MAX_BYTES = 16 * 1024 * 1024
#: the Agent Skills specification's limit on a description
MAX_DESCRIPTION = 1024

#: a skill's name (the Agent Skills naming rules): 1-64 of a-z, 0-9 and single inner hyphens
_NAME = re.compile(r"(?!.*--)[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?")
#: a prefix segment of a skill path: RFC 3986 reg-name characters (the first is an authority)
_SEGMENT = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=]+")
_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-/]*")
#: plain values YAML reads as null, a boolean, a number or a date (YAML 1.1 or 1.2)
_NOT_A_STRING = re.compile(
    r"(~|null|Null|NULL|[yY]|[nN]|yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE"
    r"|on|On|ON|off|Off|OFF|=|<<"
    r"|[-+]?\.?[0-9][0-9_:]*(\.[0-9_]*)?([eE][-+]?[0-9]+)?"
    r"|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN)|[-+]?0[xXoObB][0-9a-fA-F_]+"
    r"|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}([Tt ].*)?)")
_INDICATORS = tuple("[]{}&*!|>%@`,#")
#: characters YAML or Python would take for a line break, and other controls
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x85\u2028\u2029]")
_MIME_TYPES = {".md": "text/markdown", ".markdown": "text/markdown"}


@dataclass(frozen=True)
class SkillFile:
    """One file of a skill: its path in the skill's folder, its URI and its bytes."""
    path: str
    uri: str
    data: bytes
    mime_type: str

    @property
    def digest(self) -> str:
        return "sha256:" + hashlib.sha256(self.data).hexdigest()

    def content(self) -> str | bytes:
        """The text of the file, or its bytes when they are not UTF-8 (sent as a blob)."""
        try:
            return self.data.decode("utf-8")
        except UnicodeDecodeError:
            return self.data


@dataclass(frozen=True)
class Skill:
    """A skill: where it is served (``skill://<skill_path>/SKILL.md``), its frontmatter and
    its files, SKILL.md first."""
    skill_path: str
    frontmatter: dict
    files: tuple[SkillFile, ...] = field(repr=False)

    @property
    def uri(self) -> str:
        return f"{SCHEME}{self.skill_path}/{SKILL_MD}"

    @property
    def name(self) -> str:
        return self.frontmatter["name"]

    def entry(self) -> dict:
        """The skill's entry of ``skills/list`` and ``skills/get`` (a fresh copy)."""
        return {"uri": self.uri, "frontmatter": _copy(self.frontmatter),
                "resources": [{"uri": f.uri, "digest": f.digest, "size": len(f.data)}
                              for f in self.files]}

    def resource(self, file: SkillFile) -> dict:
        """The ``resources/list`` entry of one of its files: SKILL.md is named and described
        by the frontmatter, any other file by its file name."""
        item: dict = {"uri": file.uri, "name": file.path.rsplit("/", 1)[-1],
                      "mimeType": file.mime_type, "size": len(file.data)}
        if file.path == SKILL_MD:
            item["name"] = self.name
            item["description"] = self.frontmatter["description"]
        return item


def skill_from_folder(folder: str | os.PathLike, skill_path: str | None = None) -> Skill:
    """The skill in ``folder`` (its SKILL.md and every file below it, read now), served at
    ``skill_path`` (default: the folder's name). Raises ValueError (see the module), OSError
    for a folder that cannot be read."""
    root = os.path.realpath(os.fspath(folder))
    where = f"skill folder {os.fspath(folder)!r}"
    if not os.path.isdir(root):
        raise ValueError(f"{where}: not a folder")
    if not os.path.isfile(os.path.join(root, SKILL_MD)):
        raise ValueError(f"{where}: it holds no {SKILL_MD}")
    paths = _walk(root, where)
    files = {}
    for path in paths:
        with open(os.path.join(root, *path.split("/")), "rb") as file:
            files[path] = file.read()
    skill_md = files.pop(SKILL_MD)
    try:
        text = skill_md.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{where}: {SKILL_MD} is not UTF-8 text") from None
    if skill_path is None:
        skill_path = os.path.basename(os.path.normpath(os.fspath(folder)))  # as it was named
    return _skill(skill_path, text, files)


def skill_from_text(skill_path: str, skill_md: str,
                    files: dict[str, str | bytes] | None = None) -> Skill:
    """A skill held in memory: its SKILL.md text and its other files by path (``str`` as
    UTF-8, ``bytes`` as they are), served at ``skill_path``. Raises ValueError (see the
    module) and TypeError for what is not text or bytes."""
    if not isinstance(skill_md, str):
        raise TypeError(f"skill_md must be the text of SKILL.md, not {type(skill_md).__name__}")
    data: dict[str, bytes] = {}
    for path, value in (files or {}).items():
        if not isinstance(path, str):
            raise TypeError(f"skill {skill_path!r}: file paths must be strings, not {path!r}")
        _check_file_path(path, f"skill {skill_path!r}")
        if path == SKILL_MD:
            raise ValueError(f"skill {skill_path!r}: give {SKILL_MD} as skill_md, not in files")
        if isinstance(value, str):
            value = value.encode("utf-8")
        if not isinstance(value, (bytes, bytearray)):
            raise TypeError(f"skill {skill_path!r}: file {path!r} must be str or bytes, "
                            f"not {type(value).__name__}")
        data[path] = bytes(value)
    return _skill(skill_path, skill_md, data)


def _skill(skill_path: str, skill_md: str, files: dict[str, bytes]) -> Skill:
    """The skill of SKILL.md's text and the other files' bytes, every rule checked."""
    if not isinstance(skill_path, str):
        raise TypeError(f"skill_path must be a string, not {type(skill_path).__name__}")
    where = f"skill {skill_path!r}"
    frontmatter = parse_frontmatter(skill_md, where)
    name = frontmatter.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"{where}: the frontmatter's name {name!r} breaks the naming rules "
                         f"(1-64 of a-z, 0-9 and hyphens, no hyphen first, last or twice)")
    description = frontmatter.get("description")
    if not isinstance(description, str) or not 1 <= len(description) <= MAX_DESCRIPTION:
        raise ValueError(f"{where}: the frontmatter's description must be 1 to "
                         f"{MAX_DESCRIPTION} characters of text")
    _check_skill_path(skill_path, name)
    data = {SKILL_MD: skill_md.encode("utf-8"), **dict(sorted(files.items()))}
    if len(data) > MAX_FILES:
        raise ValueError(f"{where}: {len(data)} files, more than the {MAX_FILES} a skill may have")
    total = sum(len(value) for value in data.values())
    if total > MAX_BYTES:
        raise ValueError(f"{where}: {total} bytes, more than the {MAX_BYTES} (16 MiB) a skill "
                         f"may have")
    base = f"{SCHEME}{skill_path}/"
    return Skill(skill_path, frontmatter, tuple(
        SkillFile(path, base + "/".join(quote(part, safe="!$&'()*+,;=:@~")
                                        for part in path.split("/")),
                  value, _mime_type(path, value)) for path, value in data.items()))


def parse_frontmatter(text: str, where: str = "SKILL.md") -> dict:
    """The frontmatter at the top of a SKILL.md, between two ``---`` lines, as a dict of
    strings (and of string maps one level deep). Raises ValueError naming ``where`` and the
    line for anything outside the subset the module describes."""
    lines = text.split("\n")
    if not lines or lines[0].rstrip("\r") != "---":
        raise ValueError(f"{where}: SKILL.md must begin with a '---' line and YAML "
                         f"frontmatter")
    fields: dict = {}
    inner: dict | None = None     # the map being filled (after "key:" with no value)
    indent = ""
    for number, raw in enumerate(lines[1:], start=2):
        line = raw.rstrip("\r")
        at = f"{where}: frontmatter line {number}"
        if line.rstrip(" \t") == "---":
            if inner is not None and not inner:
                raise ValueError(f"{where}: frontmatter line {number - 1}: a key without a "
                                 f"value")
            return fields
        if _CONTROL.search(line):
            raise ValueError(f"{at}: a control character")
        if not line.strip() or line.lstrip(" ").startswith("#"):
            continue
        if line[0] in " \t":
            if inner is None:
                raise ValueError(f"{at}: an indented line outside a map (values are one line)")
            if "\t" in line[:len(line) - len(line.lstrip(" \t"))]:
                raise ValueError(f"{at}: indented with a tab")
            here = line[:len(line) - len(line.lstrip(" "))]
            if inner and here != indent:
                raise ValueError(f"{at}: maps are one level deep, each line indented alike")
            indent = here
            key, value = _key_value(line.strip(), at)
            if value is None:
                raise ValueError(f"{at}: maps are one level deep")
            _put(inner, key, value, at)
            continue
        if inner is not None and not inner:
            raise ValueError(f"{where}: frontmatter line {number - 1}: a key without a value")
        key, value = _key_value(line, at)
        if value is None:
            inner = {}
            _put(fields, key, inner, at)
        else:
            inner = None
            _put(fields, key, value, at)
    raise ValueError(f"{where}: the frontmatter has no closing '---' line")


def _key_value(line: str, at: str) -> tuple[str, str | None]:
    """The key of a ``key: value`` line and its value (None for ``key:``, a map's start)."""
    key, sep, rest = line.partition(":")
    if not sep or not _KEY.fullmatch(key):
        raise ValueError(f"{at}: not a 'key: value' line (keys are letters, digits, '_', "
                         f"'-', '.' and '/')")
    if rest and rest[0] not in " \t":
        raise ValueError(f"{at}: a space must follow the ':' after {key!r}")
    rest = rest.strip(" \t")
    return key, (_scalar(rest, at) if rest else None)


def _scalar(value: str, at: str) -> str:
    """A one-line string value, quoted or plain, as YAML reads it; ValueError for a value
    YAML reads as something else or reads differently from a plain reader."""
    if value[0] in "\"'":
        quote_mark = value[0]
        inner = value[1:-1]
        if len(value) < 2 or value[-1] != quote_mark or quote_mark in inner or "\\" in inner:
            raise ValueError(f"{at}: a quoted value must be one quoted string with no "
                             f"{quote_mark} and no backslash inside")
        return inner
    if (value.startswith(_INDICATORS) or value[:2] in ("- ", "? ", ": ")
            or value in ("-", "?", ":") or ": " in value or " #" in value
            or "\t#" in value or value.endswith(":")):
        raise ValueError(f"{at}: {value!r} is not a plain YAML string; put it in quotes")
    if _NOT_A_STRING.fullmatch(value):
        raise ValueError(f"{at}: YAML reads {value!r} as something other than text; put it "
                         f"in quotes")
    return value


def _put(fields: dict, key: str, value, at: str) -> None:
    if key in fields:
        raise ValueError(f"{at}: {key!r} is given twice")
    fields[key] = value


def _check_skill_path(skill_path: str, name: str) -> None:
    segments = skill_path.split("/")
    if segments[-1] != name:
        raise ValueError(f"skill {skill_path!r}: the skill path's last segment must be the "
                         f"frontmatter's name {name!r}")
    for segment in segments[:-1]:
        if segment in (".", "..") or not _SEGMENT.fullmatch(segment):
            raise ValueError(f"skill {skill_path!r}: {segment!r} is not a valid segment of a "
                             f"skill path (letters, digits and -._~!$&'()*+,;=)")


def _check_file_path(path: str, where: str) -> None:
    parts = path.split("/")
    if (not path or "\\" in path or _CONTROL.search(path) or "\n" in path or "\t" in path
            or any(part in ("", ".", "..") for part in parts)):
        raise ValueError(f"{where}: {path!r} is not a relative path inside the skill's "
                         f"folder ('/'-separated, no empty, '.' or '..' parts)")


def _walk(root: str, where: str) -> list[str]:
    """The '/'-separated paths of the regular files below ``root``, in order; ValueError for
    a link or a special file, or once the limits are passed (before anything is read)."""
    found: list[str] = []
    total = 0
    for folder, dirs, names in os.walk(root, onerror=_raise):  # an unreadable folder raises
        dirs.sort()
        for name in sorted(names + [d for d in dirs if os.path.islink(os.path.join(folder, d))]):
            full = os.path.join(folder, name)
            path = os.path.relpath(full, root).replace(os.sep, "/")
            _check_file_path(path, where)
            if os.path.islink(full) or not os.path.isfile(full):
                raise ValueError(f"{where}: {path} is not a regular file (links are not "
                                 f"followed)")
            found.append(path)
            total += os.path.getsize(full)
            if len(found) > MAX_FILES or total > MAX_BYTES:
                raise ValueError(f"{where}: more than the {MAX_FILES} files or {MAX_BYTES} "
                                 f"bytes (16 MiB) a skill may have")
    return found


def _raise(error: OSError) -> None:
    raise error


def _mime_type(path: str, data: bytes) -> str:
    if path == SKILL_MD:
        return "text/markdown"
    suffix = os.path.splitext(path)[1].lower()
    guessed = _MIME_TYPES.get(suffix) or mimetypes.guess_type(path)[0]
    if guessed:
        return guessed
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return "application/octet-stream"
    return "text/plain"


def _copy(value):
    return {k: _copy(v) for k, v in value.items()} if isinstance(value, dict) else value
