"""The gateway's wire rules, function by function, with the seed's examples."""
from __future__ import annotations

import posixpath
import unicodedata
from urllib.parse import unquote, urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raider_sync.gateway import protocol
from raider_sync.gateway.config import GatewayServer

CREDENTIALS = ["Authorization", "Proxy-Authorization", "X-Api-Key", "Cookie"]
HOP_BY_HOP = ["Connection", "Keep-Alive", "Proxy-Connection", "TE", "Trailer", "Transfer-Encoding",
              "Upgrade", "Host", "Content-Length"]


# -- response_header_allowed ---------------------------------------------------------------

@pytest.mark.parametrize("name", ["Content-Type", "content-type", "CACHE-CONTROL", "Retry-After",
                                  "Mcp-Session-Id", "mcp-protocol-version", "MCP-Whatever-Next",
                                  "Content-Encoding"])
def test_response_headers_on_the_allowlist_pass(name):
    assert protocol.response_header_allowed(name) is True


@pytest.mark.parametrize("name", ["Set-Cookie", "Server", "X-Powered-By", "Content-Length",
                                  "Transfer-Encoding", "Connection", "WWW-Authenticate", "Location",
                                  "Mcp-", "Mcpx-Session", "X-Mcp-Session-Id",
                                  "", None, 42])
def test_response_headers_off_the_allowlist_do_not(name):
    assert protocol.response_header_allowed(name) is False


# -- transports ----------------------------------------------------------------------------

def test_transports_are_sorted_and_the_default_is_streamable_http():
    assert protocol.transports() == ("stdio", "streamable-http")
    assert list(protocol.transports()) == sorted(protocol.transports())
    assert protocol.default_transport() == "streamable-http"
    assert protocol.is_transport(protocol.default_transport())


@pytest.mark.parametrize("name,known,relayed", [
    ("streamable-http", True, True), ("stdio", True, False), ("http", False, False),
    ("sse", False, False), ("STDIO", False, False), ("", False, False), (None, False, False)])
def test_is_transport_and_is_relayed(name, known, relayed):
    assert protocol.is_transport(name) is known
    assert protocol.is_relayed(name) is relayed


def test_listing_path_and_endpoint():
    assert protocol.listing_path() == "/v1/mcp/servers"
    assert protocol.endpoint("bookrag") == "/mcp/bookrag"


# -- name_problem --------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["bookrag", "files", "a", "0", "my.server_v2-beta", "A" * 64,
                                  "a..b"])
def test_good_names_have_no_problem(name):
    assert protocol.name_problem(name) is None


@pytest.mark.parametrize("name,says", [
    ("", "non-empty"), (None, "non-empty"), (7, "non-empty"), ("a" * 65, "at most 64"),
    (".hidden", "starts with"), ("-x", "starts with"), ("_x", "starts with"), ("..", "starts with"),
    ("a/b", "only letters"), ("a b", "only letters"), ("a%2e", "only letters"),
    ("über", "starts with"), ("aé", "only letters"), ("a\\b", "only letters"),
    ("a\n", "only letters")])
def test_bad_names_say_what_is_wrong(name, says):
    assert says in protocol.name_problem(name)


# -- url_problem ---------------------------------------------------------------------------

@pytest.mark.parametrize("url", ["http://127.0.0.1:3001/mcp", "https://llm.example.com",
                                 "https://up.example/mcp?tenant=a", "HTTP://EXAMPLE.COM/",
                                 "http://[::1]:8080/mcp"])
def test_good_urls_have_no_problem(url):
    assert protocol.url_problem(url) is None


@pytest.mark.parametrize("url,says", [
    ("", "non-empty"), (None, "non-empty"), ("/mcp", "absolute"), ("ftp://x.example/", "absolute"),
    ("file:///etc/passwd", "absolute"), ("mcp.example.com/mcp", "absolute"),
    ("https://alice:s3cret@up.example/mcp", "credentials"), ("https://token@up.example/", "credentials"),
    ("http:///nohost", "no host"), ("http://h:99999/", "port"), ("http://h:port/", "port"),
    ("http://up.example/a b", "whitespace"), ("http://up.example/\r\nX: y", "control")])
def test_bad_urls_say_what_is_wrong_without_repeating_the_url(url, says):
    problem = protocol.url_problem(url)
    assert says in problem
    for secret in ("s3cret", "alice", "token", "up.example", "nohost", "passwd", "x.example"):
        if isinstance(url, str) and secret in url:
            assert secret not in problem


# -- config_header_problem -----------------------------------------------------------------

@pytest.mark.parametrize("name", ["X-Team", "X-Tenant", "User-Agent", "Traceparent", "Origin"])
def test_static_headers_may_be_set(name):
    assert protocol.config_header_problem(name) is None


@pytest.mark.parametrize("name,says", [
    *[(n, "credential") for n in CREDENTIALS], ("authorization", "credential"),
    ("COOKIE", "credential"),
    ("Content-Type", "from the client"), ("Accept", "from the client"),
    ("Last-Event-ID", "from the client"), ("Mcp-Session-Id", "from the client"),
    ("mcp-protocol-version", "from the client"),
    *[(n, "connection") for n in HOP_BY_HOP],
    ("", "token"), ("X Team", "token"), ("X-Team\r\n", "token"), (None, "token")])
def test_refused_static_headers_say_why(name, says):
    assert says in protocol.config_header_problem(name)


# -- request_headers -----------------------------------------------------------------------

def test_request_headers_keep_only_the_allowlist_by_the_clients_name():
    headers = {"Content-Type": "application/json", "accept": "application/json, text/event-stream",
               "Last-Event-ID": "7", "Mcp-Session-Id": "s1", "MCP-Protocol-Version": "2025-06-18",
               "Authorization": "Bearer client", "X-Api-Key": "k", "Cookie": "a=b",
               "Proxy-Authorization": "Basic x", "X-Forwarded-For": "1.2.3.4", "Forwarded": "for=x",
               "Host": "evil", "Connection": "close", "Transfer-Encoding": "chunked",
               "User-Agent": "ua", "Origin": "http://evil"}
    assert protocol.request_headers(headers) == {
        "Content-Type": "application/json", "accept": "application/json, text/event-stream",
        "Last-Event-ID": "7", "Mcp-Session-Id": "s1", "MCP-Protocol-Version": "2025-06-18"}


def test_request_headers_take_pairs_and_drop_values_that_would_split_a_header():
    pairs = [("Accept", "text/event-stream"), ("Mcp-Session-Id", "a\r\nAuthorization: x"),
             ("Mcp-Other", b"bytes"), ("Mcp-", "empty suffix"), ("Mcp Bad", "v"), (None, "v")]
    assert protocol.request_headers(pairs) == {"Accept": "text/event-stream",
                                               "Mcp-Other": "bytes"}
    assert protocol.request_headers(None) == {}


_ANY_CASE = st.sampled_from(CREDENTIALS + HOP_BY_HOP + ["X-Forwarded-For", "Forwarded", "Origin"]) \
    .flatmap(lambda n: st.lists(st.booleans(), min_size=len(n), max_size=len(n)).map(
        lambda flips: "".join(c.upper() if f else c.lower() for c, f in zip(n, flips, strict=True))))


@settings(deadline=None)
@given(st.lists(st.tuples(st.one_of(_ANY_CASE, st.text(min_size=1, max_size=20)),
                          st.text(max_size=30)), max_size=12))
def test_request_headers_never_yield_a_credential_or_hop_by_hop_header(pairs):
    out = protocol.request_headers(pairs)
    forbidden = {n.lower() for n in CREDENTIALS + HOP_BY_HOP}
    for name, value in out.items():
        assert name.lower() not in forbidden
        assert name.lower() in ("content-type", "accept", "last-event-id") or \
            name.lower().startswith("mcp-")
        assert not any(ch in value for ch in "\r\n\0")


# -- upstream_url --------------------------------------------------------------------------

@pytest.mark.parametrize("url,rest,query,expected", [
    ("https://up.example/mcp", "a/b", "x=1", "https://up.example/mcp/a/b?x=1"),   # API.md
    ("https://up.example/mcp", None, None, "https://up.example/mcp"),
    ("https://up.example/mcp", "", "", "https://up.example/mcp"),
    ("https://up.example/mcp/", "a", None, "https://up.example/mcp/a"),
    ("https://up.example", "a", None, "https://up.example/a"),
    ("https://up.example/mcp?tenant=t", None, "x=1&y=2", "https://up.example/mcp?tenant=t&x=1&y=2"),
    ("https://up.example/mcp?tenant=t", "s", None, "https://up.example/mcp/s?tenant=t"),
    ("https://up.example/mcp", "a b/ü", None, "https://up.example/mcp/a%20b/%C3%BC"),
    ("https://up.example/mcp", "q?x#y", None, "https://up.example/mcp/q%3Fx%23y"),
    ("https://up.example/mcp", "100%", None, "https://up.example/mcp/100%25"),
    ("https://up.example/mcp", "a...b/.x/x.", None, "https://up.example/mcp/a...b/.x/x."),
    ("https://up.example/mcp", None, {"x": "1", "l": ["a", "b"]}, "https://up.example/mcp?x=1&l=a&l=b"),
    ("https://up.example/mcp", None, [("k", "a b")], "https://up.example/mcp?k=a%20b"),
    ("https://up.example/mcp", None, "flag&e=", "https://up.example/mcp?flag=&e="),
])
def test_upstream_url_appends_segments_and_merges_the_query(url, rest, query, expected):
    assert protocol.upstream_url(url, rest, query) == expected


@pytest.mark.parametrize("rest", [
    ".", "..", "../admin", "a/../../b", "a/./b", "a/..", "./a", "a\\b", "..\\x", "\\",
    "a//b", "/a", "a/", "//", "%2e%2e", "%2E%2e/x", "a%2fb", "a%2Fb", "%5c", "a/%2e/b"])
def test_upstream_url_refuses_climbing_out(rest):
    assert protocol.upstream_url("https://up.example/mcp", rest, None) is None


@pytest.mark.parametrize("rest", [
    # path parameters: servlet containers and Spring drop ";..." before resolving dot segments
    "..;", "..;x/admin", ".;a", "a/..;jsessionid=1/b", ";x",
    # a NUL or another control character: C upstreams stop at the NUL, logs split at a newline
    "..\x00", "a\x00/b", "a\nb", "a\rb", "a\x7fb",
    # compatibility forms that NFKC (or a "best fit" code page) turns into dots and slashes
    "\uff0e\uff0e", "\uff0e", "a\uff0fb", "\uff3c", "\u2025"])
def test_upstream_url_refuses_what_an_upstream_could_read_as_climbing_out(rest):
    assert protocol.upstream_url("https://up.example/mcp", rest, None) is None


def test_upstream_url_keeps_harmless_semicolons_and_unicode():
    assert protocol.upstream_url("https://up.example/mcp", "a;v=1/\u00fc", None) == \
        "https://up.example/mcp/a;v=1/%C3%BC"


@pytest.mark.parametrize("query", ["tenant=other", "x=1&tenant=other", "TENANT=x&tenant=", "tenant",
                                   {"tenant": "other"}, [("tenant", "other")]])
def test_upstream_url_refuses_a_query_that_names_a_configured_parameter(query):
    # many servers read the last of repeated parameters: the client would pick the tenant
    assert protocol.upstream_url("https://up.example/mcp?tenant=t", None, query) is None
    assert protocol.upstream_url("https://up.example/mcp?tenant=t", None, "tenants=x") == \
        "https://up.example/mcp?tenant=t&tenants=x"


@pytest.mark.parametrize("query", ["Tenant=evil", "TENANT=evil", "tenant%20=evil", "%20tenant=evil",
                                   "tenant+=evil", "tenant%09=evil", "%EF%BD%94enant=evil",
                                   {"Tenant ": "evil"}])
def test_upstream_url_refuses_case_and_whitespace_variants_of_a_configured_parameter(query):
    # a lenient server folds case or trims names: the variant would still choose the tenant
    assert protocol.upstream_url("https://up.example/mcp?tenant=t", None, query) is None


@pytest.mark.parametrize("query", [
    "tenant[]=evil", "tenant[0]=evil", "tenant[x]=evil", "tenant[x][y]=evil", "tenant[x=evil",
    "tenant%5B%5D=evil", "Tenant%5B0%5D=evil", "tenant%EF%BC%BB%EF%BC%BD=evil",  # fullwidth [ ]
    "tenant.x=evil", "tenant%2Ex=evil",             # qs with allowDots: an object named tenant
    "tenant%255B%255D=evil", "tenant%25255B%25255D=evil", "%2574enant=evil",  # encoded again
    "tenant%2B=evil", "tenant%252B=evil", "+tenant=evil",  # '+' is a space to a second decoder
    "tenant%00x=evil",                              # a C server stops at the NUL
    {"tenant[]": "evil"}, [("TENANT[0]", "evil")]])
def test_upstream_url_refuses_bracket_dot_and_encoded_variants_of_a_configured_parameter(query):
    # Express (qs) reads tenant=t&tenant[]=evil as ["t", "evil"], PHP as "evil"
    assert protocol.upstream_url("https://up.example/mcp?tenant=t", None, query) is None


@pytest.mark.parametrize("query", ["ten_ant=evil", "ten+ant=evil", "ten%20ant=evil", "ten.ant=evil",
                                   "ten[ant=evil", " ten.ant=evil", "TEN.ANT=evil"])
def test_upstream_url_refuses_what_php_reads_as_a_configured_parameter(query):
    # PHP turns spaces, dots and an unclosed bracket in a name into underscores
    assert protocol.upstream_url("https://up.example/mcp?ten_ant=t", None, query) is None
    assert protocol.upstream_url("https://up.example/mcp?ten.ant=t", None, query) is None


@pytest.mark.parametrize("query", ["tenants=x", "x[tenant]=1", "tenant_id=1", "ten ant=1", "a.b=1",
                                   "%5B%5D=1", "=1", "x=tenant[]"])
def test_upstream_url_relays_parameters_no_server_reads_as_a_configured_one(query):
    url = protocol.upstream_url("https://up.example/mcp?tenant=t", None, query)
    assert url is not None and url.startswith("https://up.example/mcp?tenant=t&")


@pytest.mark.parametrize("call", [
    lambda: protocol.request_headers(5), lambda: protocol.request_headers([("a",)]),
    lambda: protocol.request_headers([("Accept", "x", "y"), 7, None]),
    lambda: protocol.request_headers("Accept: x"),
    lambda: protocol.upstream_url("https://up.example/mcp", "a", 5),
    lambda: protocol.upstream_url("https://up.example/mcp", 5, None),
    lambda: protocol.upstream_url("https://up.example/mcp", "a", object()),
    lambda: protocol.listing_entry({"name": "x", "transport": "stdio", "args": 5}, "x"),
    lambda: protocol.listing_entry({"name": "x", "transport": "stdio", "env": 5}, "x"),
    lambda: protocol.listing_entry({"name": "x", "transport": "stdio", "env": [1]}, "x"),
])
def test_the_wire_functions_never_raise_for_bad_input(call):
    call()  # documented: answers None, an empty result or a partial entry, never an exception


def test_bad_input_gets_an_empty_or_refused_answer():
    assert protocol.request_headers(5) == {}
    assert protocol.request_headers([("a",), ("Accept", "x")]) == {"Accept": "x"}
    assert protocol.upstream_url("https://up.example/mcp", "a", 5) is None
    entry = protocol.listing_entry({"name": "x", "transport": "stdio", "command": "c", "args": 5}, "b")
    assert entry["args"] == [] and entry["command"] == "c"


def test_upstream_url_refuses_a_bad_configured_url():
    assert protocol.upstream_url("ftp://up.example/mcp", "a", None) is None
    assert protocol.upstream_url("https://u:p@up.example/mcp", None, None) is None


_SEGMENT = st.text(alphabet=st.sampled_from(list("ab.%/\\?#;:@ 2eEfF5cC~_-")
                                           + ["ü", "\x00", "\uff0e", "\uff0f", "\u2025"]),
                   max_size=24)


@settings(max_examples=300, deadline=None)
@given(prefix=st.sampled_from(["/mcp", "/mcp/", "", "/a/b/c", "/deep/mcp/v1"]),
       rest=st.one_of(st.none(), _SEGMENT), query=st.one_of(st.none(), st.text(max_size=20)))
def test_upstream_url_never_escapes_the_configured_path_prefix(prefix, rest, query):
    base = f"https://up.example:8443{prefix}?tenant=t"
    out = protocol.upstream_url(base, rest, query)
    if out is None:
        return
    parts = urlsplit(out)
    assert (parts.scheme, parts.netloc) == ("https", "up.example:8443")
    assert parts.fragment == ""
    assert parts.query.startswith("tenant=t")
    root = prefix.rstrip("/")
    assert parts.path == root or parts.path == prefix or parts.path.startswith(root + "/")
    # decoded once or twice, with or without path parameters, cut at a NUL or NFKC-folded,
    # the path still resolves inside the prefix
    for decoded in (unquote(parts.path), unquote(unquote(parts.path))):
        for seen in (decoded, _servlet(decoded), decoded.split("\x00")[0],
                     unicodedata.normalize("NFKC", decoded)):
            resolved = posixpath.normpath(seen.replace("\\", "/") or "/")
            assert resolved == (root or "/") or resolved.startswith(root + "/")


def _servlet(path):
    """The path as a servlet container resolves it: each segment without its ``;`` params."""
    return "/".join(segment.split(";", 1)[0] for segment in path.split("/"))


# -- listing_entry -------------------------------------------------------------------------

RELAYED = {"name": "bookrag", "url": "http://10.0.0.5:9000/secret-path", "description": "books",
           "headers": {"X-Team": "blue"},
           "credential": {"header": "Authorization", "scheme": "Bearer", "env": "BOOKRAG_TOKEN"}}
STDIO = {"name": "files", "transport": "stdio", "command": "mcp-files",
         "args": ["--root", "/srv/data"], "env": {}, "description": "local files"}


def test_listing_entry_of_a_relayed_server_is_the_public_url_and_nothing_upstream():
    entry = protocol.listing_entry(RELAYED, "https://llm.example.com")
    assert entry == {"name": "bookrag", "transport": "streamable-http",
                     "url": "https://llm.example.com/mcp/bookrag", "description": "books"}
    text = repr(entry)
    for secret in ("10.0.0.5", "secret-path", "BOOKRAG_TOKEN", "X-Team", "blue", "Bearer"):
        assert secret not in text


def test_listing_entry_of_a_stdio_server_is_a_hint_to_run_it():
    assert protocol.listing_entry(STDIO, "https://llm.example.com/") == {
        "name": "files", "transport": "stdio", "command": "mcp-files",
        "args": ["--root", "/srv/data"], "env": {}, "description": "local files"}


def test_listing_entry_takes_the_config_model_and_a_base_with_a_path():
    model = GatewayServer(**RELAYED)
    entry = protocol.listing_entry(model, "https://llm.example.com/gw/")
    assert entry == {"name": "bookrag", "transport": "streamable-http",
                     "url": "https://llm.example.com/gw/mcp/bookrag", "description": "books"}
    assert protocol.listing_entry({"name": "x", "url": "http://u/"}, "http://g")["description"] is None


# -- is_event_stream -----------------------------------------------------------------------

@pytest.mark.parametrize("content_type,stream", [
    ("text/event-stream", True), ("text/event-stream; charset=utf-8", True),
    ("TEXT/Event-Stream", True), (" text/event-stream ;x=y", True), (b"text/event-stream", True),
    ("application/json", False), ("text/event-streams", False), ("text/plain", False),
    ("", False), (None, False)])
def test_is_event_stream_by_media_type(content_type, stream):
    assert protocol.is_event_stream(content_type) is stream


def test_client_headers_are_those_the_relay_may_pass_on():
    environ = {"HTTP_ACCEPT": "application/json", "HTTP_MCP_SESSION_ID": "s-1",
               "HTTP_LAST_EVENT_ID": "7", "HTTP_AUTHORIZATION": "Bearer k", "HTTP_COOKIE": "c=1",
               "CONTENT_TYPE": "application/json", "PATH_INFO": "/mcp/x"}
    assert sorted(protocol.client_headers(environ)) == [
        ("Accept", "application/json"), ("Content-Type", "application/json"),
        ("Last-Event-Id", "7"), ("Mcp-Session-Id", "s-1")]


def test_the_request_base_is_the_gateways_url_as_the_client_reached_it():
    assert protocol.request_base({"wsgi.url_scheme": "https", "HTTP_HOST": "gw.example",
                                  "SCRIPT_NAME": "/llm"}) == "https://gw.example/llm"
    assert protocol.request_base({"SERVER_NAME": "10.0.0.1", "SERVER_PORT": "8080"}) \
        == "http://10.0.0.1:8080"
