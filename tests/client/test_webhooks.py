"""Webhook delivery of events, end to end: a ToolServer POSTs to a webhook_app served by a
real WSGI server (waitress) on a loopback port; the subscription is verified by its
challenge, refreshed before it lapses, and unsubscribed; the receiver refuses a bad
signature and an old timestamp, and hands a repeated delivery on once."""
from __future__ import annotations

import json
import queue
import threading
import time
import types

import pytest
import requests

from raider_sync import McpError, ToolServer
from raider_sync.client.events import (
    WebhookRejected,
    WebhookSubscription,
    new_secret,
    verify_webhook,
    webhook_app,
)
from raider_sync.protocol.webhooks import secret_key, signed_headers
from raider_sync.serve.events import webhooks as served_webhooks
from raider_sync.serve.wsgi_server import Serving

from client.test_events import served_over_http
from conftest import free_port

WAIT = 30.0


@pytest.fixture
def tools():
    server = ToolServer("local")
    server.event("deploy.done", delivery=("webhook", "poll"),
                 input_schema={"type": "object", "properties": {"env": {"type": "string"}}})
    server.served_events.configure(webhook_loopback=True, webhook_min_ttl=0.5,
                                   webhook_retry_delay=0.05, webhook_timeout=5)
    yield server
    server.close()


@pytest.fixture
def server(tools):
    with served_over_http(tools) as client:
        yield client


class Receiver:
    """A webhook_app on a loopback port, its deliveries in a queue."""

    def __init__(self, secret: str, fail_first: int = 0):
        self.secret = secret
        self.got: "queue.Queue[tuple[dict, dict]]" = queue.Queue()
        self.calls = 0
        self.fail_first = fail_first
        self.app = webhook_app(secret, self.on_event)
        self.serving = Serving(self.app).start()
        self.url = f"{self.serving.url}/hooks/deploys"

    def on_event(self, body: dict, headers: dict) -> None:
        self.calls += 1
        if self.calls <= self.fail_first:
            raise RuntimeError("not kept this time")
        self.got.put((body, headers))

    def next(self, timeout: float = WAIT):
        try:
            return self.got.get(timeout=timeout)
        except queue.Empty:
            return None

    def stop(self) -> None:
        self.serving.stop(10)


@pytest.fixture
def receiver():
    made = Receiver(new_secret())
    yield made
    made.stop()


def test_a_published_event_is_posted_signed_to_the_webhook(server, tools, receiver):
    with WebhookSubscription(server, "deploy.done", receiver.url, secret=receiver.secret,
                             arguments={"env": "prod"}) as hook:
        assert hook.id.startswith("sub_") and hook.refresh_before.endswith("Z")
        assert hook.delivery_status["active"] is True
        tools.publish("deploy.done", {"ok": True}, arguments_match={"env": "prod"},
                      event_id="evt_up_1")
        tools.publish("deploy.done", {"ok": False}, arguments_match={"env": "dev"})
        body, headers = receiver.next()
        assert body["eventId"] == "evt_up_1" and body["data"] == {"ok": True}
        assert body["name"] == "deploy.done" and body["cursor"]
        assert headers["webhook-id"] == "evt_up_1"
        assert headers["x-mcp-subscription-id"] == hook.id
        assert receiver.next(0.5) is None, "the dev event did not reach the prod subscription"
    tools.publish("deploy.done", {"ok": True})
    assert receiver.next(0.5) is None, "after unsubscribe nothing is delivered"


def test_a_failed_delivery_is_tried_again_and_kept_once(server, tools):
    flaky = Receiver(new_secret(), fail_first=1)
    try:
        with WebhookSubscription(server, "deploy.done", flaky.url, secret=flaky.secret):
            tools.publish("deploy.done", {"n": 1})
            body, _ = flaky.next()
            assert body["data"] == {"n": 1} and flaky.calls == 2
            assert flaky.next(0.3) is None
    finally:
        flaky.stop()


def test_a_subscription_is_refreshed_before_it_lapses(server, tools, receiver):
    with WebhookSubscription(server, "deploy.done", receiver.url, secret=receiver.secret,
                             ttl=1.0) as hook:
        first = hook.refresh_before
        deadline = time.monotonic() + WAIT
        while hook.refreshes < 2 and time.monotonic() < deadline:
            time.sleep(0.05)  # a bounded poll of a counter the refresh thread moves
        assert hook.refreshes >= 2 and hook.refresh_before > first
        tools.publish("deploy.done", {"still": "alive"})
        assert receiver.next()[0]["data"] == {"still": "alive"}


def test_a_lapsed_subscription_gets_nothing(server, tools, receiver, monkeypatch):
    hook = WebhookSubscription(server, "deploy.done", receiver.url, secret=receiver.secret,
                               ttl=0.5)
    hook.close()  # no refresh: it lapses half a second from now, on the server's clock
    tools.publish("deploy.done", {"live": True})
    assert receiver.next()[0]["data"] == {"live": True}
    later = types.SimpleNamespace(time=lambda: time.time() + 0.6)  # the served registry's clock
    monkeypatch.setattr(served_webhooks, "time", later)
    tools.publish("deploy.done", {"late": True})
    assert receiver.next(0.5) is None


def test_an_endpoint_that_does_not_echo_the_challenge_is_refused(server):
    wrong = Receiver(new_secret())  # verifies with another secret: answers 401
    silent = Serving(lambda environ, start: (start("200 OK", []), [b"{}"])[1]).start()
    try:
        for url in (wrong.url, f"{silent.url}/hook"):
            with pytest.raises(McpError) as caught:
                WebhookSubscription(server, "deploy.done", url)
            assert caught.value.code == -32027
            assert caught.value.data == {"reason": "challenge_failed"}
        assert wrong.calls == 0
    finally:
        wrong.stop()
        silent.stop(10)


@pytest.mark.parametrize("url,loopback", [("http://example.com/hook", True),
                                          ("http://127.0.0.1:9/hook", False),
                                          ("ftp://127.0.0.1/hook", True)])
def test_only_https_or_allowed_loopback_urls(server, tools, url, loopback):
    tools.served_events.configure(webhook_loopback=loopback)
    with pytest.raises(McpError) as caught:
        WebhookSubscription(server, "deploy.done", url)
    assert caught.value.code == -32602 and "https" in caught.value.message


def test_an_unreachable_endpoint_is_named(server):
    port = free_port()  # a port that was free a moment ago: nobody listens
    with pytest.raises(McpError) as caught:
        WebhookSubscription(server, "deploy.done", f"http://127.0.0.1:{port}/hook")
    assert caught.value.data == {"reason": "connection_refused"}


# -- the receiver alone --------------------------------------------------------------------

def signed(secret: str, message_id: str, body: dict, now: float | None = None):
    data = json.dumps(body).encode()
    return signed_headers(secret_key(secret), message_id, data, now=now), data


def test_the_receiver_refuses_a_bad_signature_and_an_old_timestamp(receiver):
    for headers, data in (signed(new_secret(), "evt_1", {"data": 1}),
                          signed(receiver.secret, "evt_2", {"data": 2}, now=time.time() - 600)):
        answer = requests.post(receiver.url, data=data, headers=headers, timeout=WAIT)
        assert answer.status_code == 401
    assert receiver.calls == 0 and receiver.app.rejected == 2


def test_the_receiver_echoes_a_challenge_and_drops_a_repeat(receiver):
    headers, data = signed(receiver.secret, "msg_verification_1",
                           {"type": "verification", "challenge": "abc"})
    answer = requests.post(receiver.url, data=data, headers=headers, timeout=WAIT)
    assert answer.status_code == 200 and answer.json() == {"challenge": "abc"}
    headers, data = signed(receiver.secret, "evt_9", {"eventId": "evt_9", "data": 9})
    for _ in range(2):
        answer = requests.post(receiver.url, data=data, headers=headers, timeout=WAIT)
        assert answer.status_code == 200
    assert receiver.calls == 1 and receiver.next()[0]["data"] == 9


def test_verify_webhook_returns_the_body_or_says_why():
    secret = new_secret()
    headers, data = signed(secret, "evt_1", {"eventId": "evt_1"})
    assert verify_webhook(headers, data, secret) == {"eventId": "evt_1"}
    with pytest.raises(WebhookRejected, match="no signature matches"):
        verify_webhook(headers, data + b" ", secret)
    with pytest.raises(WebhookRejected, match="more than 1 s"):
        verify_webhook(signed(secret, "e", {}, now=time.time() - 5)[0], b"{}", secret,
                       tolerance=1)
    with pytest.raises(ValueError, match="whsec_"):
        webhook_app("plain", lambda body, headers: None)


def test_closing_the_tool_server_ends_its_delivery_thread(server, tools, receiver):
    with WebhookSubscription(server, "deploy.done", receiver.url, secret=receiver.secret):
        tools.publish("deploy.done", {})
        assert receiver.next() is not None
    tools.close()
    assert not [t for t in threading.enumerate() if t.name.endswith("-webhooks")]
