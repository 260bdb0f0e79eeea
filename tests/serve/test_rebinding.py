"""The Host and Origin rules a served app keeps against DNS rebinding (the app itself is
tested in test_serving_http_checks.py)."""
from __future__ import annotations

import pytest

from raider_sync.serve.rebinding import HostCheck, is_loopback, split_host


def test_host_values_split_into_name_and_port():
    assert split_host("Example.COM:8080") == ("example.com", "8080")
    assert split_host("example.com") == ("example.com", None)
    assert split_host("[::1]:3000") == ("[::1]", "3000")
    assert split_host("[::1]") == ("[::1]", None)
    assert split_host("::1") == ("::1", None), "a bare IPv6 address is no valid Host"


@pytest.mark.parametrize("host,loopback", [
    ("127.0.0.1", True), ("127.8.9.10", True), ("::1", True), ("[::1]", True),
    ("localhost", True), ("LOCALHOST", True), ("0.0.0.0", False), ("::", False), ("", False),
    ("10.0.0.5", False), ("example.com", False)])
def test_loopback_addresses(host, loopback):
    assert is_loopback(host) is loopback


def test_by_default_only_loopback_names_and_their_origins():
    check = HostCheck()
    for host in ("localhost", "localhost:1", "127.0.0.1:8080", "[::1]:9", "LocalHost"):
        assert check.host_allowed(host), host
    for host in ("evil.example.com", "evil.example.com:8080", "127.0.0.2", "localhost.evil.com",
                 "[::2]"):
        assert not check.host_allowed(host), host
    for origin in ("http://localhost:3000", "https://127.0.0.1", "http://[::1]:8080/"):
        assert check.origin_allowed(origin), origin
    for origin in ("http://evil.example.com", "null", "file://", "http://localhost:x",
                   "ftp://localhost"):
        assert not check.origin_allowed(origin), origin


def test_named_hosts_with_and_without_a_port():
    check = HostCheck(["mcp.example.com", "10.0.0.5:8080", "[fd00::1]"])
    assert check.host_allowed("mcp.example.com:443") and check.host_allowed("MCP.example.com")
    assert check.host_allowed("10.0.0.5:8080") and not check.host_allowed("10.0.0.5:8081")
    assert not check.host_allowed("10.0.0.5"), "that entry allows one port only"
    assert check.host_allowed("[fd00::1]:7") and check.host_allowed("localhost")
    assert check.origin_allowed("https://mcp.example.com")
    assert check.origin_allowed("http://10.0.0.5:8080") and not check.origin_allowed(
        "http://10.0.0.5"), "an origin's default port counts"
    assert HostCheck(["*"]).host_allowed("anything") and HostCheck(["*"]).origin_allowed(
        "https://anything.example")


def test_named_origins_replace_the_default_ones():
    check = HostCheck(allowed_origins=["https://App.example.com/"])
    assert check.origin_allowed("https://app.example.com")
    assert not check.origin_allowed("http://localhost:3000")
    assert HostCheck(allowed_origins=["*"]).origin_allowed("null")


def test_a_request_is_judged_by_host_then_origin():
    check = HostCheck()
    assert check.problem({}) is None, "no Host (HTTP/1.0), no Origin: not a browser's"
    assert check.problem({"HTTP_HOST": "localhost:80"}) is None
    assert "Host 'evil.example.com'" in check.problem({"HTTP_HOST": "evil.example.com"})
    assert "Origin 'https://evil.example.com'" in check.problem({
        "HTTP_HOST": "localhost", "HTTP_ORIGIN": "https://evil.example.com"})


@pytest.mark.parametrize("hosts,origins,message", [
    (["ok", ""], None, r"allowed_hosts\[1\]: ''"),
    (["a b"], None, r"allowed_hosts\[0\]: 'a b'"),
    (["x/y"], None, r"allowed_hosts\[0\]: 'x/y'"),
    (["host:port"], None, r"allowed_hosts\[0\]: 'host:port'"),
    ([1], None, r"allowed_hosts\[0\]: 1"),
    ("localhost", None, "allowed_hosts must be a list"),
    (None, ["app.example.com"], r"allowed_origins\[0\]: 'app.example.com'"),
    (None, ["https://app.example.com/path"], r"allowed_origins\[0\]"),
])
def test_malformed_entries_are_named(hosts, origins, message):
    with pytest.raises(ValueError, match=message):
        HostCheck(hosts, origins)
