"""A tool's result as the commands show it: printed as text (or JSON under ``--json``), its
image, audio and embedded resource blocks saved to files first (``call --save DIR``). Raises
ConfigError when a file cannot be written or a block's base64 is invalid."""
from __future__ import annotations

import base64
import binascii
import mimetypes
import os
import re
import sys
from typing import Any
from urllib.parse import urlsplit

from ..errors import ConfigError
from .common import EXIT_FAILED, EXIT_OK, print_json


def print_result(args, result: dict, save: str | None = None) -> int:
    """Print a tool's result as text (or JSON under --json), its blocks saved to ``save``
    first; the exit code: 1 for an error result, else 0."""
    saved = save_blocks(result, save) if save else {}
    for path in saved.values():
        print(f"raider-sync: saved {path}", file=sys.stderr)
    if args.json:
        print_json(result)
    else:
        print(_text_of(result, saved))
    return EXIT_FAILED if result.get("isError") else EXIT_OK


def save_blocks(result: dict, folder: str) -> dict[int, str]:
    """Write the image, audio and embedded resource blocks of ``result`` to files in
    ``folder`` (made if missing); ``{block index: path}``. A file is named after its block's
    index and the resource's last path segment, or its MIME type: never outside ``folder``.
    Raises ConfigError when the folder cannot be written or a block's base64 is invalid."""
    saved: dict[int, str] = {}
    for index, block in enumerate(result.get("content") or []):
        found = _block_file(block)
        if found is None:
            continue
        stem, mime, data = found
        name = f"{index}-{stem}{'' if os.path.splitext(stem)[1] else _extension(mime)}"
        path = os.path.join(folder, name)
        try:
            os.makedirs(folder, exist_ok=True)
            with open(path, "wb") as fh:
                fh.write(data)
        except OSError as exc:
            raise ConfigError(f"--save: cannot write {path}: {exc.strerror or exc}") from exc
        saved[index] = path
    return saved


def _block_file(block: Any) -> tuple[str, str, bytes] | None:
    """(name stem, MIME type, bytes) of a block worth a file, else None."""
    if not isinstance(block, dict):
        return None
    kind = block.get("type")
    if kind in ("image", "audio") and isinstance(block.get("data"), str):
        return kind, str(block.get("mimeType") or ""), _b64(block["data"])
    resource = block.get("resource")
    if kind != "resource" or not isinstance(resource, dict):
        return None
    segment = urlsplit(str(resource.get("uri", ""))).path.rstrip("/").rsplit("/", 1)[-1]
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", segment).lstrip(".") or "resource"
    mime = str(resource.get("mimeType") or "")
    if isinstance(resource.get("blob"), str):
        return stem, mime, _b64(resource["blob"])
    if isinstance(resource.get("text"), str):
        return stem, mime or "text/plain", resource["text"].encode()
    return None


def _b64(data: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (ValueError, binascii.Error) as exc:
        raise ConfigError(f"--save: a block's base64 data is invalid: {exc}") from None


def _extension(mime: str) -> str:
    return mimetypes.guess_extension(mime.split(";")[0].strip()) or ".bin"


def _text_of(result: dict, saved: dict[int, str] | None = None) -> str:
    parts = []
    for index, block in enumerate(result.get("content") or []):
        if block.get("type") == "text":
            parts.append(block.get("text", ""))
        elif saved and index in saved:
            parts.append(f"[{block.get('type')} block saved to {saved[index]}]")
        else:
            parts.append(f"[{block.get('type')} block]")
    return "\n".join(parts)
