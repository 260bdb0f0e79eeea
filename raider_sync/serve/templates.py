"""Resource templates: resources named by a URI template (``test://items/{id}``), read by
any URI that matches it.

Matching covers the simple expansions of RFC 6570 (``{name}``: one path segment, no ``/``)
and the reserved one (``{+name}``: anything, ``/`` included), which is what resource
templates use in practice; other operators are refused when the template is registered.
"""
from __future__ import annotations

import base64
import re
from dataclasses import dataclass
from typing import Any, Callable, Optional
from urllib.parse import unquote

_EXPRESSION = re.compile(r"\{([+]?)([A-Za-z0-9_]+)\}")


def template_pattern(uri_template: str) -> re.Pattern:
    """The regular expression a URI must match for ``uri_template``. Raises ValueError for
    an expression this module does not support (``{#x}``, ``{?x,y}``, ...)."""
    parts: list[str] = []
    position = 0
    for match in _EXPRESSION.finditer(uri_template):
        parts.append(re.escape(uri_template[position:match.start()]))
        reserved, name = match.groups()
        parts.append(f"(?P<{name}>.+)" if reserved else f"(?P<{name}>[^/]+)")
        position = match.end()
    parts.append(re.escape(uri_template[position:]))
    literal = _EXPRESSION.sub("", uri_template)
    if "{" in literal or "}" in literal:
        raise ValueError(f"resource template {uri_template!r}: only {{name}} and {{+name}} "
                         f"expressions are supported")
    return re.compile("".join(parts) + r"\Z")


def is_template(uri: str) -> bool:
    """Whether ``uri`` is a URI template rather than one resource's URI."""
    return "{" in uri


@dataclass
class LocalTemplate:
    """A resource template: ``read(**variables)`` returns the text (str) or bytes of the
    resource a matching URI names."""
    uri_template: str
    name: str
    read: Callable[..., Any]
    mime_type: Optional[str] = None
    description: Optional[str] = None

    def __post_init__(self) -> None:
        self.pattern = template_pattern(self.uri_template)

    def definition(self) -> dict:
        item = {"uriTemplate": self.uri_template, "name": self.name}
        if self.mime_type:
            item["mimeType"] = self.mime_type
        if self.description:
            item["description"] = self.description
        return item

    def match(self, uri: str) -> dict[str, str] | None:
        """The template's variables in ``uri`` (percent-decoded), or None."""
        found = self.pattern.match(uri)
        return None if found is None else {k: unquote(v) for k, v in found.groupdict().items()}

    def contents(self, uri: str, variables: dict[str, str]) -> list[dict]:
        """``[{uri, mimeType, text | blob}]`` of the resource ``uri`` (``read`` may block
        or raise)."""
        return [content_item(uri, self.mime_type, self.read(**variables))]


def content_item(uri: str, mime_type: str | None, value: Any) -> dict:
    """One entry of a resources/read answer: ``value`` as text, or bytes as a base64 blob."""
    item: dict[str, Any] = {"uri": uri}
    if mime_type:
        item["mimeType"] = mime_type
    if isinstance(value, (bytes, bytearray)):
        item["blob"] = base64.b64encode(bytes(value)).decode("ascii")
    else:
        item["text"] = str(value)
    return item
