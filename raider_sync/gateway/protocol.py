"""The MCP gateway's wire: relayed headers, upstream URLs and the server listing.

The gateway relays MCP's Streamable HTTP transport to the MCP servers a customer key was
assigned: ``POST``, ``GET`` and ``DELETE`` on ``/mcp/<name>``, and a listing of a key's servers
on ``/v1/mcp/servers``. It does not read MCP -- no JSON-RPC, no tool list, no session state.
What it has to know of the wire is small and is all here, as plain functions that never block
and never raise for bad input (they answer ``None``/``False`` or a problem text instead):
which transports a server entry may name, which request headers travel upstream, how a sub-path
becomes an upstream URL, and what a listing entry looks like::

    {"object": "list", "data": [
      {"name": "bookrag", "transport": "streamable-http",
       "url": "https://llm.example.com/mcp/bookrag", "description": "..."},
      {"name": "files", "transport": "stdio", "command": "mcp-files",
       "args": ["--root", "/srv/data"], "env": {}, "description": "..."}]}

Every rule is an allowlist, not a filter: a header or a path form nobody named here does not
pass. Percent-encoded dots, slashes and backslashes (``%2e``, ``%2f``, ``%5c``, any case) are
refused in a sub-path, never decoded and re-checked: the relay refuses them in the raw request
path, and :func:`upstream_url` refuses a decoded sub-path that still carries them (double
encoding), so no upstream that decodes once more can be walked out of its configured path.
"""
from __future__ import annotations

import functools
import json
import re
import unicodedata
from typing import Any, Iterable, Mapping, Optional, Sequence, Union
from urllib.parse import parse_qsl, quote, unquote_plus, urlencode, urlsplit, urlunsplit

_TRANSPORTS = ("stdio", "streamable-http")
_DEFAULT_TRANSPORT = "streamable-http"
_RELAYED = frozenset({"streamable-http"})
_LISTING_PATH = "/v1/mcp/servers"
_RPC_BODY_LIMIT = 1024 * 1024

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")
_NAME_MAX = 64
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+\Z")  # an HTTP field name (RFC 9110 token)
_ENCODED_SEPARATOR = re.compile(r"%(2e|2f|5c)", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_NESTED = re.compile(r"[\[.]")   # where qs (Express) starts a nested name: tenant[x], tenant.x
_PHP_UNDERSCORE = re.compile(r"[ .\[]")  # what PHP turns into '_' in a parameter's name
_DECODINGS = 3                   # a name decoded this many more times still counts as itself
# RFC 3986 pchar minus the percent sign: everything else in a segment is percent-encoded
_SEGMENT_SAFE = "!$&'()*+,;=:@-._~"

_RESPONSE_HEADERS = frozenset({"content-type", "content-encoding", "cache-control", "retry-after"})
_REQUEST_HEADERS = frozenset({"content-type", "accept", "last-event-id"})
_CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "x-api-key", "cookie"})
# hop-by-hop (RFC 9110 7.6.1) and the headers that frame the message on one connection
_CONNECTION_HEADERS = frozenset({
    "connection", "keep-alive", "proxy-connection", "te", "trailer", "trailers",
    "transfer-encoding", "upgrade", "host", "content-length", "expect",
})

Headers = Union[Mapping[str, Any], Iterable[tuple[str, Any]]]
Query = Union[str, bytes, Mapping[str, Any], Iterable[tuple[str, Any]], None]


def _is_mcp_header(lowered: str) -> bool:
    return lowered.startswith("mcp-") and len(lowered) > 4


def response_header_allowed(name: Any) -> bool:
    """Whether a response header of the MCP server is relayed to the client: Content-Type,
    Content-Encoding (the relay passes a compressed body on unopened), Cache-Control,
    Retry-After and every ``Mcp-*`` header, in any casing. A header the server
    adds tomorrow does not reach the client until it is named here."""
    if not isinstance(name, str):
        return False
    lowered = name.lower()
    return lowered in _RESPONSE_HEADERS or (_is_mcp_header(lowered) and bool(_TOKEN.match(name)))


def transports() -> tuple[str, ...]:
    """The transports a server entry may name, sorted: ``('stdio', 'streamable-http')``."""
    return _TRANSPORTS


def default_transport() -> str:
    """The transport of an entry that names none: ``streamable-http``."""
    return _DEFAULT_TRANSPORT


def is_transport(name: Any) -> bool:
    """Whether a server entry may name this transport."""
    return isinstance(name, str) and name in _TRANSPORTS


def is_relayed(transport: Any) -> bool:
    """Whether the gateway relays a server of this transport: true for streamable-http. A stdio
    server runs on the customer's machine; its entry is a hint in the listing and nothing else."""
    return isinstance(transport, str) and transport in _RELAYED


def listing_path() -> str:
    """The client path of the listing: ``/v1/mcp/servers``."""
    return _LISTING_PATH


def endpoint(name: str) -> str:
    """The client path of a server (``/mcp/bookrag``), which is also the endpoint its usage
    events carry -- whatever sub-path a request named."""
    return f"/mcp/{name}"


def name_problem(name: Any) -> Optional[str]:
    """What is wrong with a server name, or ``None`` when it is fine. A name is one segment of a
    URL path and a part of a usage event's endpoint: it starts with a letter or digit and holds
    only letters, digits, ``.``, ``_`` and ``-``, at most 64 characters (ASCII only)."""
    if not isinstance(name, str) or not name:
        return "a server name must be a non-empty string"
    if len(name) > _NAME_MAX:
        return f"a server name is at most {_NAME_MAX} characters (this one has {len(name)})"
    if not (name[0].isascii() and name[0].isalnum()):
        return "a server name starts with a letter or a digit"
    if not _NAME.match(name):
        return "a server name holds only letters, digits, '.', '_' and '-'"
    return None


def url_problem(url: Any) -> Optional[str]:
    """What is wrong with a configured URL (a server's ``url`` or the ``public_url``), or
    ``None``: it has to be an absolute http or https URL with a host, and it may not carry
    credentials (``user:password@``), which would be a secret in the config. The message never
    repeats the URL."""
    if not isinstance(url, str) or not url:
        return "a URL must be a non-empty string"
    return _split_url(url)[0]


@functools.lru_cache(maxsize=256)
def _split_url(url: str) -> tuple[Optional[str], Any]:
    """(problem, urlsplit parts) of a URL string; cached, as the relay asks per request about
    the few URLs of its config."""
    if any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in url):
        return "a URL may not contain whitespace or control characters", None
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises for a port that is not a number in range
    except ValueError:
        return "the URL cannot be parsed (check the host and the port)", None
    if parts.scheme.lower() not in ("http", "https"):
        return "the URL has to be an absolute http:// or https:// URL", None
    if "@" in parts.netloc:
        return ("the URL may not carry credentials (user:password@); configure a credential "
                "instead"), None
    if not parts.hostname:
        return "the URL has no host", None
    return None, parts


def config_header_problem(name: Any) -> Optional[str]:
    """Why a header may not be among a server's static headers, or ``None`` when it may.
    Refused are the credential headers (Authorization, Proxy-Authorization, X-Api-Key, Cookie:
    the server's credential has its own setting), the headers :func:`request_headers` passes on
    from the client, and the ones that belong to the connection."""
    if not isinstance(name, str) or not _TOKEN.match(name):
        return "a header name must be a non-empty HTTP token (letters, digits, '-', ...)"
    lowered = name.lower()
    if lowered in _CREDENTIAL_HEADERS:
        return f"{name} is a credential header: configure it as the server's credential"
    if lowered in _REQUEST_HEADERS or _is_mcp_header(lowered):
        return f"{name} is passed on from the client; it cannot be fixed in the config"
    if lowered in _CONNECTION_HEADERS:
        return f"{name} belongs to the connection; the relay sets it"
    return None


def _header_items(headers: Headers) -> Iterable[Sequence[Any]]:
    """The ``(name, value)`` pairs of a mapping or a sequence of pairs; anything else (a
    number, a string, an entry that is not a pair) yields nothing for it, never an error."""
    if headers is None or isinstance(headers, (str, bytes)):
        return ()
    items = getattr(headers, "items", None)
    try:
        pairs = list(items()) if callable(items) else list(headers)
    except Exception:  # not iterable, or a mapping whose items() fails
        return ()
    return [pair for pair in pairs
            if isinstance(pair, (tuple, list)) and len(pair) == 2]


def request_base(environ: dict) -> str:
    """The gateway's URL as the WSGI request in ``environ`` reached it: scheme, ``Host`` (else
    the server's name and port) and the app's mount point."""
    scheme = environ.get("wsgi.url_scheme", "http")
    host = environ.get("HTTP_HOST") or \
        f"{environ.get('SERVER_NAME', 'localhost')}:{environ.get('SERVER_PORT', '80')}"
    return f"{scheme}://{host}{environ.get('SCRIPT_NAME', '')}"


# the environ keys of the client headers request_headers may pass on (besides Mcp-*)
_PASSED = frozenset({"HTTP_ACCEPT", "HTTP_LAST_EVENT_ID", "HTTP_CONTENT_TYPE"})


def client_headers(environ: dict) -> list[tuple[str, str]]:
    """The headers of the WSGI request in ``environ`` that :func:`request_headers` may pass
    on: ``Accept``, ``Last-Event-ID``, ``Content-Type`` and every ``Mcp-*``."""
    client = [(k[5:].replace("_", "-").title(), v) for k, v in environ.items()
              if k in _PASSED or k.startswith("HTTP_MCP_")]
    if environ.get("CONTENT_TYPE"):
        client.append(("Content-Type", environ["CONTENT_TYPE"]))
    return client


def request_headers(headers: Headers) -> dict[str, str]:
    """The client's headers that go upstream, by the name the client used: Content-Type,
    Accept, Last-Event-ID and every header whose name starts with ``Mcp-`` (Mcp-Session-Id,
    Mcp-Protocol-Version, whatever the protocol adds there). ``headers`` is a mapping or a
    sequence of ``(name, value)`` pairs. An allowlist: the client's Authorization, X-Api-Key,
    cookies, forwarding and connection headers are not on it. A value with a line break or a
    NUL is dropped rather than relayed."""
    out: dict[str, str] = {}
    for name, value in _header_items(headers):
        if not isinstance(name, str) or not _TOKEN.match(name):
            continue
        lowered = name.lower()
        if not (lowered in _REQUEST_HEADERS or _is_mcp_header(lowered)):
            continue
        if isinstance(value, bytes):
            value = value.decode("latin-1")
        if not isinstance(value, str) or any(ch in value for ch in "\r\n\0"):
            continue
        out[name] = value
    return out


def _query_pairs(query: Query) -> Optional[list[tuple[str, str]]]:
    """The pairs of a query string, mapping or sequence of pairs; ``None`` for anything else."""
    if query is None:
        return []
    if isinstance(query, bytes):
        query = query.decode("latin-1")
    if isinstance(query, str):
        return parse_qsl(query, keep_blank_values=True)
    if not isinstance(query, (Mapping, list, tuple)):
        return None
    pairs: list[tuple[str, str]] = []
    for key, value in _header_items(query):
        values = value if isinstance(value, (list, tuple)) else [value]
        pairs.extend((str(key), "" if v is None else str(v)) for v in values)
    return pairs


def upstream_url(url: str, rest: Optional[str] = None, query: Query = None) -> Optional[str]:
    """The URL a request is relayed to: the server's configured ``url`` with the sub-path the
    client named after ``/mcp/<name>/`` appended to its path segment by segment, and the
    client's query parameters appended to its query.

    ``rest`` is the decoded sub-path, or ``None``/``""`` for none; ``query`` is the client's
    query string (or a mapping / pairs). Returns ``None`` -- a refusal, never a normalisation --
    for a sub-path with a ``.`` or ``..`` segment, an empty segment (``//``, a leading or
    trailing ``/``), a backslash, a control character, or a percent-encoded dot, slash or
    backslash left in it -- judged as written, with each segment's ``;`` parameters dropped
    (``..;x``) and in Unicode's NFKC form (fullwidth dots and slashes): a
    customer key must not climb out of the path the operator configured, whatever the
    upstream's own idea of path normalisation is. Also ``None`` for a query that names a
    parameter the configured URL fixes (``?tenant=t``), also in any name a lenient server may
    read as it (see :func:`_query_readings`): another case, whitespace around it
    (``Tenant``, ``tenant%20``), a bracket or dot suffix (``tenant[]``, ``tenant[0]``,
    ``tenant.x``: Express reads an array or object that holds both values, PHP the client's),
    PHP's underscores for spaces and dots, or encoded once more (``tenant%255B%255D``). Many
    servers read the last of repeated parameters, so the client would choose it. And
    ``None`` for a ``url`` that :func:`url_problem` refuses, or a ``rest``/``query`` of a type
    it does not take (a number, say).

    The relay refuses ``/mcp/<name>/`` (a trailing slash with nothing after it) before it
    asks here: that is an empty segment, as ``/mcp/<name>/a/`` is."""
    if not isinstance(url, str) or not url:
        return None
    problem, base = _split_url(url)
    if problem is not None:
        return None
    path = base.path
    if rest is not None and not isinstance(rest, str):
        return None
    if rest:
        if _sub_path_problem(rest):
            return None
        folded = unicodedata.normalize("NFKC", rest)
        if folded.count("/") != rest.count("/") or _sub_path_problem(folded):
            return None
        segments = rest.split("/")
        encoded = "/".join(quote(seg, safe=_SEGMENT_SAFE) for seg in segments)
        path = path.rstrip("/") + "/" + encoded
    pairs = _query_pairs(query)
    if pairs is None:
        return None
    merged = base.query
    if pairs and merged:
        fixed = _fixed_readings(merged)
        if any(not fixed.isdisjoint(_query_readings(key)) for key, _ in pairs):
            return None
    if pairs:
        extra = urlencode(pairs, quote_via=quote)
        merged = f"{merged}&{extra}" if merged else extra
    return urlunsplit((base.scheme, base.netloc, path, merged, ""))


@functools.lru_cache(maxsize=64)
def _fixed_readings(query: str) -> frozenset[str]:
    """Every reading of every parameter name in a configured URL's query (cached: the relay
    asks per request about the few URLs of its config)."""
    return frozenset().union(*(_query_readings(key)
                               for key, _ in parse_qsl(query, keep_blank_values=True)))


@functools.lru_cache(maxsize=1024)
def _query_readings(name: str) -> frozenset[str]:
    """The names a lenient server may take a query parameter's (once decoded) name for. The
    name as it came and decoded again, up to three times (``%255B``, ``%2B``: a server that
    decodes twice), each in NFKC and case folded; of each: without its control characters, or
    cut at the first one (a C server stops at a NUL); before a bracket or dot suffix (qs, as
    Express uses it, reads ``tenant[]``, ``tenant[0]``, ``tenant[x]`` and, with allowDots,
    ``tenant.x`` as ``tenant``); and as PHP reads it, with spaces, dots and an opening bracket
    as underscores (``ten ant``, ``ten.ant`` are ``ten_ant``). All without surrounding
    whitespace; never the empty name."""
    stages = [name]
    for _ in range(_DECODINGS):
        decoded = unquote_plus(stages[-1])
        if decoded == stages[-1]:
            break
        stages.append(decoded)
    readings: set[str] = set()
    for stage in stages:
        folded = unicodedata.normalize("NFKC", stage).casefold()
        for form in (_CONTROL.sub("", folded), _CONTROL.split(folded, 1)[0]):
            readings.update((form, _NESTED.split(form, 1)[0],
                             _PHP_UNDERSCORE.sub("_", form.lstrip())))
    return frozenset(r for r in (reading.strip() for reading in readings) if r)


def _sub_path_problem(rest: str) -> bool:
    """Whether a decoded sub-path could climb out of its prefix upstream: a backslash, an
    encoded dot, slash or backslash, a control character (a NUL ends the path for a C
    upstream), or a segment that is empty, ``.`` or ``..`` -- also once its ``;`` path
    parameters are dropped, as servlet containers do (``..;x`` is ``..`` there)."""
    if "\\" in rest or _ENCODED_SEPARATOR.search(rest) or _CONTROL.search(rest):
        return True
    return any(seg.split(";", 1)[0] in ("", ".", "..") for seg in rest.split("/"))


def _field(server: Any, key: str, default: Any = None) -> Any:
    if isinstance(server, Mapping):
        value = server.get(key, default)
    else:
        value = getattr(server, key, default)
    return default if value is None else value


def listing_entry(server: Any, base: str) -> dict[str, Any]:
    """What the listing says about one configured server (a mapping with the config's keys, or
    the config model): ``name``, ``transport`` and ``description`` always; for a relayed server
    its public ``url``, ``{base}/mcp/{name}``; for a stdio one ``command``, ``args`` and
    ``env``. Never the upstream URL, the key reference, a variable name or the static
    headers."""
    name = _field(server, "name")
    transport = _field(server, "transport", _DEFAULT_TRANSPORT)
    entry: dict[str, Any] = {"name": name, "transport": transport,
                             "description": _field(server, "description")}
    if is_relayed(transport):
        entry["url"] = str(base).rstrip("/") + endpoint(name)
    else:
        args, env = _field(server, "args", []), _field(server, "env", {})
        entry["command"] = _field(server, "command")
        entry["args"] = [str(a) for a in args] if isinstance(args, (list, tuple)) else []
        entry["env"] = {str(k): str(v) for k, v in _header_items(env)} \
            if isinstance(env, Mapping) else {}
    return entry


def is_event_stream(content_type: Any) -> bool:
    """Whether an answer is a Server-Sent Events stream, by its media type
    (``text/event-stream``, parameters and case ignored). Such an answer has no end the gateway
    could check without reading MCP, so however it ends is how it ends."""
    if isinstance(content_type, bytes):
        content_type = content_type.decode("latin-1")
    if not isinstance(content_type, str):
        return False
    return content_type.split(";", 1)[0].strip().lower() == "text/event-stream"


def parse_message(body: Any) -> Any:
    """The JSON of a request body, or None for one that is empty or not JSON. Never raises."""
    if not isinstance(body, (bytes, str)) or not body:
        return None
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None


def rpc_call(body: Any) -> tuple[Optional[str], Optional[str]]:
    """``(JSON-RPC method, tool name)`` of a request body, for usage events: ``("tools/call",
    "echo")``, ``("initialize", None)``; ``(None, None)`` for a body that is not one JSON-RPC
    request object (a batch, a response, not JSON, over 1 MiB). Reads nothing else of MCP."""
    if not isinstance(body, (bytes, str)) or not body or len(body) > _RPC_BODY_LIMIT:
        return None, None
    return rpc_of(parse_message(body), body)


def rpc_of(message: Any, body: Any) -> tuple[Optional[str], Optional[str]]:
    """:func:`rpc_call` of a body already parsed into ``message``."""
    if not isinstance(body, (bytes, str)) or len(body) > _RPC_BODY_LIMIT:
        return None, None
    method = message.get("method") if isinstance(message, dict) else None
    if not isinstance(method, str):
        return None, None
    params = message.get("params")
    tool = params.get("name") if method == "tools/call" and isinstance(params, dict) else None
    return method, tool if isinstance(tool, str) else None
