"""The pure parts of discovery: challenges, candidate URLs, the resource and issuer rules."""
from __future__ import annotations

import pytest

from raider_sync.auth import AuthError
from raider_sync.auth.discovery import as_candidates, check_resource, prm_candidates
from raider_sync.auth.grants import check_redirect, pkce_pair
from raider_sync.auth.wire import parse_challenges


def test_challenges_quoted_bare_and_several_schemes():
    (bearer,) = parse_challenges('Bearer error="invalid_token", error_description="a, b", '
                                 'scope="mcp:basic mcp:write", resource_metadata="https://x/p"')
    assert bearer.scheme == "bearer" and bearer.error == "invalid_token"
    assert bearer.scope == "mcp:basic mcp:write" and bearer.resource_metadata == "https://x/p"
    dpop, basic = parse_challenges('DPoP error=use_dpop_nonce, algs="ES256", Basic realm="r"')
    assert (dpop.scheme, dpop.error, dpop.params["algs"]) == ("dpop", "use_dpop_nonce", "ES256")
    assert (basic.scheme, basic.params) == ("basic", {"realm": "r"})
    assert parse_challenges('Bearer ERROR="insufficient_scope"')[0].error == "insufficient_scope"
    assert parse_challenges(None) == [] and parse_challenges("Bearer")[0].params == {}


def test_protected_resource_candidates_in_the_spec_order():
    assert prm_candidates("https://h/a/mcp", "https://h/meta") == [
        "https://h/meta", "https://h/.well-known/oauth-protected-resource/a/mcp",
        "https://h/.well-known/oauth-protected-resource"]
    assert prm_candidates("https://h/", None) == ["https://h/.well-known/oauth-protected-resource"]


def test_authorization_server_candidates_insert_the_path_and_skip_the_root():
    assert as_candidates("https://as/tenant1") == [
        "https://as/.well-known/oauth-authorization-server/tenant1",
        "https://as/.well-known/openid-configuration/tenant1",
        "https://as/tenant1/.well-known/openid-configuration"]
    assert as_candidates("https://as") == ["https://as/.well-known/oauth-authorization-server",
                                           "https://as/.well-known/openid-configuration"]


@pytest.mark.parametrize("resource,ok", [
    ("https://h/mcp", True), ("https://h", True), ("https://h/", True), ("https://H/mcp", True),
    ("https://h/mc", False), ("https://evil.example/mcp", False), ("http://h/mcp", False),
    ("https://h/mcp/deeper", False), ("", False)])
def test_the_resource_must_cover_the_server_url(resource, ok):
    if ok:
        check_resource(resource, "https://h/mcp")
    else:
        with pytest.raises(AuthError) as caught:
            check_resource(resource, "https://h/mcp")
        assert caught.value.step == "discovery"


def test_pkce_is_s256_of_a_long_verifier():
    import base64
    import hashlib
    verifier, challenge = pkce_pair()
    assert 43 <= len(verifier) <= 128
    digest = hashlib.sha256(verifier.encode()).digest()
    assert challenge == base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
    assert pkce_pair()[0] != verifier


@pytest.mark.parametrize("landed,meta,error", [
    ("http://l/cb?code=c&state=s&iss=https%3A%2F%2Fas", {}, None),
    ("http://l/cb?code=c&state=s", {}, None),
    ("http://l/cb?code=c&state=s", {"authorization_response_iss_parameter_supported": True},
     "invalid_issuer"),
    ("http://l/cb?code=c&state=s&iss=https%3A%2F%2Fas%2F", {}, "invalid_issuer"),
    ("http://l/cb?code=c&state=t&iss=https%3A%2F%2Fas", {}, "invalid_state"),
    ("http://l/cb?error=access_denied&error_description=no&state=s", {}, "access_denied"),
])
def test_the_redirect_is_checked_before_the_code_is_used(landed, meta, error):
    if error is None:
        assert check_redirect(landed, "s", "https://as", meta) == "c"
    else:
        with pytest.raises(AuthError) as caught:
            check_redirect(landed, "s", "https://as", meta)
        assert (caught.value.step, caught.value.error) == ("consent", error)
