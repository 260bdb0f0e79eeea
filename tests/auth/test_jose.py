"""DPoP proofs and private_key_jwt assertions verify with PyJWT's public-key side."""
from __future__ import annotations

import base64
import hashlib

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from raider_sync.auth import AuthError
from raider_sync.auth.jose import DPoPKey, client_assertion


def test_a_dpop_proof_is_fresh_signed_and_bound_to_the_token():
    key = DPoPKey()
    proof = key.proof("post", "https://h/mcp?x=1#f", access_token="tok", nonce="n1")
    header = jwt.get_unverified_header(proof)
    assert header["typ"] == "dpop+jwt" and header["alg"] == "ES256" and "d" not in header["jwk"]
    public = jwt.algorithms.ECAlgorithm.from_jwk(header["jwk"])
    claims = jwt.decode(proof, public, algorithms=["ES256"])
    assert (claims["htm"], claims["htu"], claims["nonce"]) == ("POST", "https://h/mcp", "n1")
    digest = base64.urlsafe_b64encode(hashlib.sha256(b"tok").digest()).rstrip(b"=").decode()
    assert claims["ath"] == digest
    again = jwt.decode(key.proof("POST", "https://h/mcp"), public, algorithms=["ES256"])
    assert again["jti"] != claims["jti"] and "ath" not in again
    assert repr(key) == "<DPoPKey ES256>"


def test_a_client_assertion_names_the_client_and_the_issuer():
    private = ec.generate_private_key(ec.SECP256R1())
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    token = client_assertion("bot", pem, "https://as.example")
    claims = jwt.decode(token, private.public_key(), algorithms=["ES256"],
                        audience="https://as.example")
    assert claims["iss"] == claims["sub"] == "bot" and claims["exp"] > claims["iat"]
    with pytest.raises(AuthError, match="cannot sign the client assertion") as caught:
        client_assertion("bot", "not a key", "https://as.example")
    assert caught.value.step == "token"
