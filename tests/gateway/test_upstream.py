"""The relay's upstream client: keep-alive connections reused only when that is safe, and bodies
that end early told apart from complete ones."""
from __future__ import annotations

import http.client

import pytest

from raider_sync.gateway.upstream import Upstream

from gateway.support import count_sends, wait_until

JSON = {"Content-Type": "application/json"}


def call(pool: Upstream, url: str) -> bytes:
    answer = pool.send("POST", url, dict(JSON), b"{}", connect=5, read=10)
    try:
        assert answer.status == 200 and answer.length is not None
        return answer.read()
    finally:
        answer.close()


def test_a_connection_is_kept_alive_and_reused(upstream):
    with_pool = Upstream(pool_size=4)
    try:
        for _ in range(5):
            assert b'"method": "POST"' in call(with_pool, f"{upstream.url}/echo")
        assert len(upstream.requests) == 5
        assert len(upstream.connections) == 1  # one keep-alive connection served all five
    finally:
        with_pool.close()
    assert wait_until(lambda: not upstream.connections)  # close() ended it


def test_a_connection_the_upstream_closed_is_not_reused(upstream):
    pool = Upstream(pool_size=4)
    try:
        call(pool, f"{upstream.url}/echo")
        upstream.close_connections()  # the upstream ends its idle keep-alive connection
        assert wait_until(lambda: not upstream.connections)
        assert b'"method": "POST"' in call(pool, f"{upstream.url}/echo")  # on a new one
    finally:
        pool.close()


def test_an_answer_not_read_to_its_end_does_not_go_back_to_the_pool(upstream):
    pool = Upstream(pool_size=4)
    try:
        answer = pool.send("GET", f"{upstream.url}/big", {}, None, connect=5, read=10)
        next(answer.chunks(1024))
        answer.close()
        assert wait_until(lambda: not upstream.connections)  # closed, not pooled half-read
        assert b'"method": "POST"' in call(pool, f"{upstream.url}/echo")
    finally:
        pool.close()


@pytest.mark.parametrize("mode", ["sse-cut", "sse-truncated"])
def test_a_body_that_ends_early_raises_incomplete_read(upstream, mode):
    pool = Upstream(pool_size=4)
    try:
        answer = pool.send("GET", f"{upstream.url}/{mode}", {}, None, connect=5, read=10)
        received = []
        with pytest.raises(http.client.IncompleteRead):
            for chunk in answer.chunks(1024):
                received.append(chunk)
        answer.close()
        assert b"data: one" in b"".join(received)
    finally:
        pool.close()


def test_a_short_buffered_body_raises_incomplete_read(upstream):
    pool = Upstream(pool_size=4)
    try:
        answer = pool.send("POST", f"{upstream.url}/broken", dict(JSON), b"{}", connect=5, read=10)
        with pytest.raises(http.client.IncompleteRead):
            answer.read()
        answer.close()
    finally:
        pool.close()


def test_a_small_body_goes_out_with_the_head_in_one_send(upstream, monkeypatch):
    sent = count_sends(monkeypatch)
    pool = Upstream(pool_size=4)
    try:
        assert b'"method": "POST"' in call(pool, f"{upstream.url}/echo")
        assert len(sent) == 1 and sent[0].startswith(b"POST /echo HTTP/1.1\r\n")
        assert sent[0].endswith(b"\r\n\r\n{}") and upstream.requests[-1]["body"] == "{}"
        sent.clear()
        large = b"[" + b"0," * (40 * 1024) + b"0]"  # over JOIN_LIMIT: not copied to the head
        answer = pool.send("POST", f"{upstream.url}/echo", dict(JSON), large, connect=5, read=10)
        answer.read()
        answer.close()
        assert len(sent) == 2 and sent[0].endswith(b"\r\n\r\n") and sent[1] == large
        assert upstream.requests[-1]["body"] == large.decode()
    finally:
        pool.close()
