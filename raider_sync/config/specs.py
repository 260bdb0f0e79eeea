"""What one server of a config file is started or reached with: :class:`ServerSpec`, its
``oauth`` block (:class:`OAuthSettings`) and its ``restart`` policy (:class:`RestartPolicy`),
pydantic models whose validation errors name the field. Nothing blocks."""
from __future__ import annotations

import re
from typing import Annotated, Any, Literal, Optional
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .names import normalize_name, tool_name

Transport = Literal["stdio", "http", "sse"]
TRANSPORT_ALIASES = {"stdio": "stdio", "http": "http", "streamable-http": "http",
                     "streamableHttp": "http", "sse": "sse"}


class OAuthSettings(BaseModel):
    """The ``oauth`` block of an http/sse entry (Claude Code's keys, plus ``clientSecret`` and
    ``clientMetadataUrl``). ``scopes`` is a space-separated string or a list."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    client_id: Optional[str] = Field(default=None, alias="clientId", min_length=1)
    client_secret: Optional[str] = Field(default=None, alias="clientSecret", repr=False)
    callback_port: Optional[int] = Field(default=None, alias="callbackPort", gt=0, lt=65536)
    auth_server_metadata_url: Optional[str] = Field(default=None, alias="authServerMetadataUrl")
    scopes: Optional[list[str]] = None
    client_metadata_url: Optional[str] = Field(default=None, alias="clientMetadataUrl")

    @model_validator(mode="before")
    @classmethod
    def _port_of_redirect_uri(cls, data: Any) -> Any:
        # the draft standard mcp.json names the whole redirect URI; only its port is ours
        if not isinstance(data, dict) or "redirectUri" not in data:
            return data
        data = dict(data)
        port = loopback_callback_port(data.pop("redirectUri"))
        if port is None:
            raise ValueError("redirectUri: must be http://localhost:PORT/callback (the "
                             "loopback listener raider_sync runs)")
        data.setdefault("callbackPort", port)
        return data

    @field_validator("scopes", mode="before")
    @classmethod
    def _split_scopes(cls, value: Any) -> Any:
        return value.split() if isinstance(value, str) else value

    @field_validator("auth_server_metadata_url", "client_metadata_url")
    @classmethod
    def _https(cls, url: Optional[str]) -> Optional[str]:
        if url is not None and not re.match(r"^https://[^/\s]+|^http://(localhost|127\.0\.0\.1"
                                            r"|\[::1\])(:\d+)?(/|$)", url):
            raise ValueError("must be an https:// URL (http:// only for localhost)")
        return url


#: the keys an oauth block may have (by name and by alias, and the draft's redirectUri)
OAUTH_FIELDS = frozenset(set(OAuthSettings.model_fields) | {"redirectUri"}
                         | {f.alias for f in OAuthSettings.model_fields.values() if f.alias})


def loopback_callback_port(uri: Any) -> int | None:
    """The port of a redirect URI ``http://localhost:PORT/callback`` (or 127.0.0.1, [::1]),
    else None."""
    if not isinstance(uri, str):
        return None
    parts = urlsplit(uri)
    try:
        port = parts.port
    except ValueError:
        return None
    if (parts.scheme == "http" and parts.hostname in ("localhost", "127.0.0.1", "::1")
            and parts.path == "/callback" and port):
        return port
    return None


class RestartPolicy(BaseModel):
    """An entry's ``restart`` key: restart a crashed server on the next call.

    ``{"maxRestarts": 3, "backoffMs": 1000, "maxBackoffMs": 30000}`` (the defaults; ``true``
    means them all). Restart *n* comes no sooner than ``backoffMs * 2**(n-1)`` ms (at most
    ``maxBackoffMs``) after the crash; after ``maxRestarts`` in a row the server stays failed.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    max_restarts: int = Field(default=3, ge=0, alias="maxRestarts")
    backoff_ms: int = Field(default=1000, ge=0, alias="backoffMs")
    max_backoff_ms: int = Field(default=30000, ge=0, alias="maxBackoffMs")

    def delay(self, restarts: int) -> float:
        """Seconds to wait after a crash before restart number ``restarts + 1``."""
        return min(self.max_backoff_ms, self.backoff_ms * 2 ** min(restarts, 32)) / 1000


class ServerSpec(BaseModel):
    """One entry of ``mcpServers``: what a server is started or reached with.

    ``timeout`` is the call timeout in milliseconds (Claude Code's per-server ``timeout``);
    ``max_message_size`` (``maxMessageSize``) the bound in bytes on one received message.
    ``plugin_root``/``plugin_data`` mark a plugin's server (named ``plugin:NAME:SERVER``).
    ``allowed_tools``/``disabled_tools`` (``allowedTools``/``disabledTools``) are tool names
    or globs that narrow the tools offered (see :mod:`raider_sync.client.filters`).
    ``title`` and ``description`` (the draft standard ``mcp.json``'s) are for people only.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    name: str = Field(min_length=1)
    transport: Transport = "stdio"
    command: Optional[str] = Field(default=None, min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: Optional[str] = None
    url: Optional[str] = None
    headers: dict[str, str] = Field(default_factory=dict)
    headers_helper: Optional[str] = Field(default=None, alias="headersHelper")
    timeout: Optional[int] = Field(default=None, gt=0)
    max_message_size: Optional[int] = Field(default=None, gt=0, alias="maxMessageSize")
    plugin_root: Optional[str] = Field(default=None, alias="pluginRoot")
    plugin_data: Optional[str] = Field(default=None, alias="pluginData")
    project_dir: Optional[str] = Field(default=None, alias="projectDir")
    oauth: Optional[OAuthSettings] = None
    restart: Optional[RestartPolicy] = None
    allowed_tools: Optional[list[Annotated[str, Field(min_length=1)]]] = Field(
        default=None, alias="allowedTools")
    disabled_tools: list[Annotated[str, Field(min_length=1)]] = Field(
        default_factory=list, alias="disabledTools")
    protocol: Optional[str] = None
    title: Optional[str] = None
    description: Optional[str] = None
    tasks: Any = None
    retry: Optional[Literal["safe", "never", "always"]] = None

    @field_validator("tasks")
    @classmethod
    def _tasks_choice(cls, value: Any) -> Any:
        if value is None or value == "auto" or isinstance(value, bool):
            return value
        raise ValueError('must be "auto", true or false')

    @field_validator("protocol")
    @classmethod
    def _known_protocol(cls, value: Optional[str]) -> Optional[str]:
        from ..protocol.revisions import PROTOCOL_CHOICES
        if value is not None and value not in PROTOCOL_CHOICES:
            raise ValueError(f"must be one of {', '.join(PROTOCOL_CHOICES)}")
        return value

    @model_validator(mode="before")
    @classmethod
    def _transport_from_type(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        kind = data.pop("type", None)
        if kind is None:
            kind = "stdio" if "command" in data or "url" not in data else "http"
        if not isinstance(kind, str) or kind not in TRANSPORT_ALIASES:
            raise ValueError(f"type: unknown transport {kind!r} (use stdio, http or sse)")
        data.setdefault("transport", TRANSPORT_ALIASES[kind])
        return data

    @field_validator("timeout", mode="before")
    @classmethod
    def _timeout_is_a_number(cls, value: Any) -> Any:
        # pydantic would read true as 1 and "5000" as 5000; JSON that says so is a mistake
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise ValueError("must be a number of milliseconds")
        return value

    @field_validator("restart", mode="before")
    @classmethod
    def _restart_true_means_defaults(cls, value: Any) -> Any:
        if value is True:
            return {}
        if value is False:
            return None
        return value

    @field_validator("max_message_size", mode="before")
    @classmethod
    def _size_is_a_number(cls, value: Any) -> Any:
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise ValueError("must be a whole number of bytes")
        return value

    @field_validator("url")
    @classmethod
    def _absolute_url(cls, url: Optional[str]) -> Optional[str]:
        if url is not None and not re.match(r"^https?://[^/\s]+", url):
            raise ValueError("must be an absolute http:// or https:// URL")
        return url

    @model_validator(mode="after")
    def _needs_command_or_url(self) -> "ServerSpec":
        if self.transport == "stdio" and not self.command:
            raise ValueError("command: a stdio server needs a command")
        if self.transport in ("http", "sse") and not self.url:
            raise ValueError(f"url: a {self.transport} server needs a url")
        return self

    @property
    def key(self) -> str:
        """The name normalised for tool names: ``plugin:a:b`` keys as ``plugin_a_b``."""
        return normalize_name(self.name)

    @property
    def is_plugin(self) -> bool:
        return self.plugin_root is not None or self.name.startswith("plugin:")

    def tool_name(self, tool: str) -> str:
        return tool_name(self.key, tool)


#: the keys an entry may have: the spec's fields (by name and by alias) and "type"; "name"
#: stays, to be refused as a field given twice
ENTRY_FIELDS = frozenset({"type", "envFile"} | set(ServerSpec.model_fields)
                         | {f.alias for f in ServerSpec.model_fields.values() if f.alias})
