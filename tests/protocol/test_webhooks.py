"""The signature of webhook deliveries (the Standard Webhooks profile of the events draft):
the reference vector, secrets, and what a receiver refuses."""
from __future__ import annotations

import time

import pytest

from raider_sync.client.events import new_secret
from raider_sync.protocol.webhooks import (
    secret_key,
    signature,
    signature_problem,
    signed_headers,
)

#: the example of the Standard Webhooks specification (and of its reference libraries)
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
MESSAGE_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
STAMP = 1614265330
BODY = b'{"test": 2432232314}'
EXPECTED = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


def test_the_signature_is_the_standard_webhooks_one():
    assert signature(secret_key(SECRET), MESSAGE_ID, STAMP, BODY) == EXPECTED


def test_a_delivery_verifies_with_its_secret_only():
    key = secret_key(new_secret())
    headers = signed_headers(key, "evt_1", b'{"a":1}', subscription_id="sub_1")
    assert headers["X-MCP-Subscription-Id"] == "sub_1"
    assert signature_problem(headers, b'{"a":1}', key, now=time.time()) is None
    other = secret_key(new_secret())
    assert signature_problem(headers, b'{"a":1}', other, now=time.time()) == "no signature matches"
    assert signature_problem(headers, b'{"a":2}', key, now=time.time()) == "no signature matches"


def test_an_old_or_future_timestamp_is_refused():
    key = secret_key(SECRET)
    headers = {"webhook-id": MESSAGE_ID, "webhook-timestamp": str(STAMP),
               "webhook-signature": EXPECTED}
    assert signature_problem(headers, BODY, key, now=STAMP + 10) is None
    assert "more than 300 s" in signature_problem(headers, BODY, key, now=STAMP + 301)
    assert "more than 300 s" in signature_problem(headers, BODY, key, now=STAMP - 301)


def test_one_of_several_signatures_is_enough_and_headers_are_case_blind():
    key = secret_key(SECRET)
    headers = {"Webhook-Id": MESSAGE_ID, "WEBHOOK-TIMESTAMP": str(STAMP),
               "webhook-signature": f"v1,bm90IGl0 {EXPECTED}"}
    assert signature_problem(headers, BODY, key, now=STAMP) is None


def test_a_missing_header_is_named():
    problem = signature_problem({"webhook-id": "x"}, BODY, secret_key(SECRET), now=STAMP)
    assert problem == "missing header webhook-timestamp, webhook-signature"


@pytest.mark.parametrize("secret,message", [
    ("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "beginning with whsec_"),
    ("whsec_not base64!", "not base64"),
    ("whsec_c2hvcnQ=", "24 to 64 bytes"),
    (None, "beginning with whsec_"),
])
def test_a_malformed_secret_is_refused(secret, message):
    with pytest.raises(ValueError, match=message):
        secret_key(secret)


def test_new_secrets_are_fresh_and_well_formed():
    first, second = new_secret(), new_secret()
    assert first != second and len(secret_key(first)) == 32
    with pytest.raises(ValueError):
        new_secret(8)
