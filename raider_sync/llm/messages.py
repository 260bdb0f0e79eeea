"""A tool result as the message a model API takes back: OpenAI Chat Completions, OpenAI
Responses, Anthropic Messages. Plain dicts; no model SDK is imported.

What each block of an MCP result becomes:

============================  ==================  ====================  =====================
MCP block                     OpenAI chat         OpenAI Responses      Anthropic
============================  ==================  ====================  =====================
text                          text                ``input_text``        ``text``
image                         a note (1)          ``input_image``       ``image`` (2)
embedded text resource (3)    text with its URI   ``input_text``        ``text``
embedded image / PDF blob     a note              ``input_image`` /     ``image`` /
                                                  ``input_file``        ``document``
other binary, audio           a note              a note                a note
resource link                 a note with URI     a note with URI       a note with URI
============================  ==================  ====================  =====================

(1) Chat Completions tool messages carry text only: :func:`openai_images` makes the user
message that shows the images of a turn's results, to add after all its tool messages.
(2) PNG, JPEG, GIF and WebP; other image types become a note. (3) Also a blob of a text type
(``text/*``, JSON, XML) that decodes as UTF-8.

A result with no content but ``structuredContent`` is sent as that JSON. An error result is
marked ``is_error`` for Anthropic and starts with "Error:" for OpenAI, which has no flag.
"""
from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any, Iterable

ANTHROPIC_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
PDF = "application/pdf"
EMPTY = "(the tool returned no content)"


@dataclass(frozen=True)
class _Part:
    kind: str               # "text", "image" or "file"
    text: str = ""
    mime: str = ""
    data: str = ""          # base64
    name: str = ""


def openai_result(call_id: str, result: dict, *, api: str = "chat") -> dict:
    """The message (``api="chat"``: ``{"role": "tool", ...}``) or input item (``api=
    "responses"``: ``{"type": "function_call_output", ...}``) that answers the model's tool
    call ``call_id`` with ``result``."""
    parts = _parts(result, is_error_prefix=True)
    if api == "chat":
        return {"role": "tool", "tool_call_id": call_id,
                "content": "\n".join(_as_text(p) for p in parts)}
    if api == "responses":
        if all(p.kind == "text" for p in parts):
            output: Any = "\n".join(p.text for p in parts)
        else:
            output = [_responses_part(p) for p in parts]
        return {"type": "function_call_output", "call_id": call_id, "output": output}
    raise ValueError(f"api must be 'chat' or 'responses', not {api!r}")


def openai_images(results: Iterable[dict]) -> dict | None:
    """A Chat Completions user message showing the images (and embedded images) of
    ``results``, or None when they have none. Add it after every tool message of the turn:
    tool messages themselves carry text only."""
    content: list[dict] = []
    for result in results:
        for part in _parts(result):
            if part.kind == "image":
                content.append({"type": "image_url",
                                "image_url": {"url": f"data:{part.mime};base64,{part.data}"}})
    if not content:
        return None
    return {"role": "user", "content": [{"type": "text", "text": "Images the tools returned:"},
                                        *content]}


def anthropic_result(tool_use_id: str, result: dict) -> dict:
    """The ``tool_result`` content block that answers the model's ``tool_use`` block
    ``tool_use_id`` with ``result``; put the blocks of one turn in one user message."""
    content = [_anthropic_part(p) for p in _parts(result)]
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
    if result.get("isError"):
        block["is_error"] = True
    return block


# -- the blocks ---------------------------------------------------------------------------

def _parts(result: dict, *, is_error_prefix: bool = False) -> list[_Part]:
    if not isinstance(result, dict):
        raise TypeError(f"a tool result must be a dict, not {type(result).__name__}")
    parts: list[_Part] = []
    for block in result.get("content") or []:
        if isinstance(block, dict):
            parts.extend(_block_parts(block))
    if not parts and result.get("structuredContent") is not None:
        parts.append(_Part("text", json.dumps(result["structuredContent"], ensure_ascii=False)))
    if not parts:
        parts.append(_Part("text", EMPTY))
    if is_error_prefix and result.get("isError"):
        first = parts[0]
        if first.kind == "text":
            parts[0] = _Part("text", f"Error: {first.text}")
        else:
            parts.insert(0, _Part("text", "Error:"))
    return parts


def _block_parts(block: dict) -> list[_Part]:
    kind = block.get("type")
    if kind == "text":
        return [_Part("text", str(block.get("text", "")))]
    if kind in ("image", "audio"):
        mime = str(block.get("mimeType") or "")
        data = block.get("data")
        if kind == "image" and isinstance(data, str):
            return [_Part("image", mime=mime, data=data)]
        return [_Part("text", f"[{kind} {mime}, {_size(data)} not shown]")]
    if kind == "resource":
        resource = block.get("resource")
        if not isinstance(resource, dict):
            resource = {}
        uri = resource.get("uri", "")
        mime = str(resource.get("mimeType") or "")
        if isinstance(resource.get("text"), str):
            return [_Part("text", f"[resource {uri}]\n{resource['text']}")]
        blob = resource.get("blob")
        decoded = _text_blob(blob, mime)
        if decoded is not None:
            return [_Part("text", f"[resource {uri}]\n{decoded}")]
        if isinstance(blob, str) and mime.startswith("image/"):
            return [_Part("text", f"[resource {uri}]"), _Part("image", mime=mime, data=blob)]
        if isinstance(blob, str) and mime == PDF:
            name = str(uri).rstrip("/").rsplit("/", 1)[-1] or "document.pdf"
            return [_Part("text", f"[resource {uri}]"), _Part("file", mime=mime, data=blob, name=name)]
        return [_Part("text", f"[resource {uri}: {mime or 'binary'}, {_size(blob)} not shown]")]
    if kind == "resource_link":
        details = ", ".join(str(block[k]) for k in ("name", "mimeType", "description")
                            if block.get(k))
        return [_Part("text", f"[resource link {block.get('uri', '')}"
                              f"{': ' + details if details else ''}]")]
    return [_Part("text", f"[{kind} block]")]


def _text_blob(blob: Any, mime: str) -> str | None:
    """The text of a base64 blob of a text type (text/*, JSON, XML), else None."""
    if not isinstance(blob, str) or not (mime.startswith("text/") or mime.endswith(("json", "xml"))):
        return None
    try:
        return base64.b64decode(blob, validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return None


def _size(data: Any) -> str:
    return f"{len(data) * 3 // 4} bytes" if isinstance(data, str) else "no data"


def _as_text(part: _Part) -> str:
    if part.kind == "text":
        return part.text
    return f"[{'image' if part.kind == 'image' else 'file'} {part.mime}, {_size(part.data)}]"


def _responses_part(part: _Part) -> dict:
    if part.kind == "image":
        return {"type": "input_image", "image_url": f"data:{part.mime};base64,{part.data}"}
    if part.kind == "file":
        return {"type": "input_file", "filename": part.name,
                "file_data": f"data:{part.mime};base64,{part.data}"}
    return {"type": "input_text", "text": part.text}


def _anthropic_part(part: _Part) -> dict:
    if part.kind == "image" and part.mime in ANTHROPIC_IMAGE_TYPES:
        return {"type": "image", "source": {"type": "base64", "media_type": part.mime,
                                            "data": part.data}}
    if part.kind == "file" and part.mime == PDF:
        return {"type": "document", "source": {"type": "base64", "media_type": PDF,
                                               "data": part.data}}
    return {"type": "text", "text": _as_text(part) or EMPTY}
