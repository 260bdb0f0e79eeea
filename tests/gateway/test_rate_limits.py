"""Rate limits per key (raider_sync.gateway.rate_limits): the token buckets' arithmetic on an
injected clock, in the process and in a real Redis; 429 with Retry-After through the relay in
front of server-everything, tool calls counted apart from other requests; and two relays that
count on their own, or together through one redis-server."""
from __future__ import annotations

import json
import logging
import shutil

import pytest
import requests

from raider_sync.errors import ConfigError
from raider_sync.gateway.config import GatewayConfig
from raider_sync.gateway.rate_limits import (
    Bucket,
    LocalBuckets,
    RateLimiter,
    RateLimitSettings,
    Rates,
    RedisBuckets,
    RedisSettings,
    Refused,
    refusal,
    tool_calls,
)
from raider_sync.protocol.codes import RATE_LIMITED

from conftest import free_port, missing_peer
from gateway.support import ACCEPT, ALICE, AUTH, BOB, Mcp, spawn, stop


class Clock:
    """A clock the test moves by hand (seconds)."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory):
    """A redis-server of this worker's own on a free port, its files in a temporary folder:
    its URL, or None when the binary is missing."""
    binary = shutil.which("redis-server")
    if binary is None:
        yield None
        return
    folder = tmp_path_factory.mktemp("redis")
    proc, port = spawn([binary, "--port", "{port}", "--bind", "127.0.0.1", "--dir", str(folder),
                        "--save", "", "--appendonly", "no", "--logfile", ""])
    yield f"redis://127.0.0.1:{port}/0"
    stop(proc)


def needs(url):
    """``url``, or skip (fail under CI) without redis-server, as for the other real peers."""
    if url is None:
        missing_peer("redis-server is not installed (apt-get install redis-server)")
    return url


@pytest.fixture
def redis_url(redis_server):
    return needs(redis_server)


@pytest.fixture(params=["local", "redis"])
def buckets(request, redis_server, tmp_path):
    """A store on an injected clock: in the process, and in Redis (each test its own prefix)."""
    clock = Clock()
    if request.param == "local":
        yield LocalBuckets(clock), clock
        return
    settings = RedisSettings(url=needs(redis_server), prefix=f"test-{tmp_path.name}")
    store = RedisBuckets(settings, clock=clock)
    yield store, clock
    store.close()


# -- the arithmetic --------------------------------------------------------------------------

def test_a_bucket_holds_a_minute_and_refills_one_token_per_share_of_it(buckets):
    store, clock = buckets
    three = [Bucket("requests_per_minute", 3, 1)]
    assert [store.take("alice", three) for _ in range(3)] == [None, None, None]
    assert store.take("alice", three) == Refused("requests_per_minute", 20)  # one per 20 s
    clock.now += 19.5
    assert store.take("alice", three) == Refused("requests_per_minute", 1)   # 0.5 s, rounded up
    clock.now += 0.5
    assert store.take("alice", three) is None                                # exactly 20 s
    assert store.take("alice", three) == Refused("requests_per_minute", 20)
    assert store.take("bob", three) is None                                  # a bucket per key


def test_a_bucket_never_holds_more_than_a_minute(buckets):
    store, clock = buckets
    two = [Bucket("requests_per_minute", 2, 1)]
    store.take("alice", two)
    clock.now += 3600  # an idle hour refills to the brim, no further
    assert [store.take("alice", two) for _ in range(3)] == [None, None,
                                                            Refused("requests_per_minute", 30)]


def test_a_rate_that_does_not_divide_a_minute_is_exact(buckets):
    store, clock = buckets
    seven = [Bucket("requests_per_minute", 7, 1)]
    for _ in range(7):
        assert store.take("alice", seven) is None
    # a token every 60/7 = 8.571... s: wait 8.572 s (the millisecond rounded up), said as 9
    assert store.take("alice", seven) == Refused("requests_per_minute", 9)
    clock.now += 8.571
    assert store.take("alice", seven) == Refused("requests_per_minute", 1)
    clock.now += 0.001
    assert store.take("alice", seven) is None


def test_a_request_takes_from_every_bucket_or_from_none(buckets):
    store, clock = buckets
    requests_ = Bucket("requests_per_minute", 10, 1)
    calls = Bucket("tool_calls_per_minute", 2, 2)
    assert store.take("alice", [requests_, calls]) is None   # a batch of two calls
    assert store.take("alice", [requests_, calls]) == Refused("tool_calls_per_minute", 60)
    # the refused request took no request token: nine are left of ten
    assert [store.take("alice", [requests_]) for _ in range(10)][-2:] == [
        None, Refused("requests_per_minute", 6)]
    clock.now += 30
    # both short: the one that waits longest is named
    assert store.take("alice", [requests_, Bucket("tool_calls_per_minute", 2, 2)]) == \
        Refused("tool_calls_per_minute", 30)


def test_redis_loads_the_script_again_after_a_flush(redis_url, tmp_path):
    import redis
    clock = Clock()
    store = RedisBuckets(RedisSettings(url=redis_url, prefix=f"flush-{tmp_path.name}"), clock)
    try:
        one = [Bucket("requests_per_minute", 1, 1)]
        assert store.take("alice", one) is None
        with redis.Redis.from_url(redis_url) as admin:
            admin.script_flush()
            assert admin.exists(f"flush-{tmp_path.name}:{{alice}}:requests_per_minute") == 1
            assert 0 < admin.pttl(f"flush-{tmp_path.name}:{{alice}}:requests_per_minute") <= 60_000
        assert store.take("alice", one) == Refused("requests_per_minute", 60)
    finally:
        store.close()


# -- what a request costs, and the answer -----------------------------------------------------

def test_tool_calls_are_counted_in_a_request_and_in_a_batch():
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo"}}
    assert tool_calls(json.dumps(call).encode()) == 1
    assert tool_calls(json.dumps([call, {**call, "id": 2}, {"jsonrpc": "2.0", "id": 3,
                                                            "method": "tools/list"}]).encode()) == 2
    # JSON may escape the method's letters: the parse sees through it, a byte search would not
    assert tool_calls(b'{"jsonrpc":"2.0","id":1,"method":"\\u0074ools\\/call"}') == 1
    assert tool_calls(b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}') == 0
    assert tool_calls(b"") == 0
    assert tool_calls(b"[" * 100_000) == 1  # unreadable here, maybe not upstream: counted


def test_a_key_s_own_rates_go_over_the_default():
    settings = RateLimitSettings(requests_per_minute=60, tool_calls_per_minute=6)
    limiter = RateLimiter(settings, {"alice": Rates(tool_calls_per_minute=600)})
    assert limiter.rates("alice") == Rates(requests_per_minute=60, tool_calls_per_minute=600)
    assert limiter.rates("bob") == Rates(requests_per_minute=60, tool_calls_per_minute=6)
    assert not limiter.shared
    limiter.update(None, {})
    assert limiter.rates("alice") == Rates()  # no limit at all
    assert limiter.admit("alice", b"") is None


def test_a_batch_larger_than_a_minute_of_tool_calls_is_refused_outright():
    limiter = RateLimiter(RateLimitSettings(tool_calls_per_minute=2), {})
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo"}}
    assert limiter.admit("alice", json.dumps([call] * 3).encode()) == \
        Refused("tool_calls_per_minute", 60)
    assert limiter.admit("alice", json.dumps([call] * 2).encode()) is None  # nothing was taken


def test_the_refusal_is_a_json_rpc_error_with_the_request_s_id():
    body = json.loads(refusal(b'{"jsonrpc":"2.0","id":7,"method":"tools/call"}',
                              Refused("tool_calls_per_minute", 12)))
    assert body["id"] == 7 and body["error"]["code"] == RATE_LIMITED
    assert body["error"]["data"] == {"type": "rate_limited", "limit": "tool_calls_per_minute",
                                     "retry_after": 12}
    assert json.loads(refusal(b"", Refused("requests_per_minute", 1)))["id"] is None


def test_without_redis_a_process_counts_on_its_own_and_says_so(caplog):
    url = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    limiter = RateLimiter(RateLimitSettings(requests_per_minute=2,
                                            redis=RedisSettings(url=url, timeout=0.2)), {})
    try:
        assert limiter.shared
        with caplog.at_level(logging.WARNING, "raider_sync.gateway"):
            assert [limiter.admit("alice", b"") for _ in range(3)] == [
                None, None, Refused("requests_per_minute", 30)]
        assert sum("counts on its own" in r.getMessage() for r in caplog.records) == 1
    finally:
        limiter.close()


def test_bad_rate_limits_are_named_by_field():
    with pytest.raises(ConfigError) as caught:
        GatewayConfig.from_dict({
            "servers": [{"name": "a", "url": "http://127.0.0.1:1/mcp"}],
            "keys": [{"id": "alice", "sha256": "0" * 64, "servers": ["a"],
                      "rate_limits": {"tool_calls_per_minute": 0}}],
            "rate_limits": {"requests_per_minute": "many", "burst": 3, "redis": {}}})
    problems = caught.value.problems
    assert any(p.startswith("keys[0] (alice).rate_limits.tool_calls_per_minute:") for p in problems)
    assert any(p.startswith("rate_limits.requests_per_minute:") for p in problems)
    assert "rate_limits.burst: unknown field" in problems
    assert any(p.startswith("rate_limits.redis.url:") for p in problems)


# -- through the relay --------------------------------------------------------------------------

def test_429_with_retry_after_in_front_of_server_everything(make_gateway, everything_http):
    gw = make_gateway(
        [{"name": "everything", "url": everything_http}],
        keys=[{"id": "alice", "env": "ALICE", "servers": ["everything"],
               "rate_limits": {"tool_calls_per_minute": 2}},
              {"id": "bob", "env": "BOB", "servers": ["everything"]}],
        rate_limits={"requests_per_minute": 5})
    alice = Mcp(f"{gw.url}/mcp/everything")
    try:
        alice.initialize()  # two requests: initialize, notifications/initialized
        for n in range(2):
            assert alice.request("tools/call", {"name": "echo", "arguments": {
                "message": f"m{n}"}})["result"]["content"][0]["text"] == f"Echo: m{n}"
        refused = alice.post({"jsonrpc": "2.0", "id": 99, "method": "tools/call",
                              "params": {"name": "echo", "arguments": {"message": "m2"}}})
        assert refused.status_code == 429
        assert refused.headers["Retry-After"] == "30"   # 2 a minute: the next in 30 s
        assert refused.json()["id"] == 99
        assert refused.json()["error"]["code"] == RATE_LIMITED
        assert refused.json()["error"]["data"]["limit"] == "tool_calls_per_minute"
        # tool calls are counted apart: other requests go on, up to the default of 5
        assert "tools" in alice.request("tools/list")["result"]
        refused = alice.post({"jsonrpc": "2.0", "id": 100, "method": "tools/list"})
        assert refused.status_code == 429
        assert refused.headers["Retry-After"] == "12"   # 5 a minute: one every 12 s
        assert refused.json()["error"]["data"]["limit"] == "requests_per_minute"
        # another key has buckets of its own
        listing = requests.post(f"{gw.url}/mcp/everything", timeout=20, headers={
            "Authorization": f"Bearer {BOB}", "Accept": ACCEPT, "Content-Type": "application/json"},
            data=json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}}))
        assert listing.status_code == 200
    finally:
        alice.close()
    events = gw.wait_events(8)
    limited = [(e["rpc"], e["limit"]) for e in events if e["status"] == 429]
    assert limited == [("tools/call", "tool_calls_per_minute"),
                       ("tools/list", "requests_per_minute")]


def _post(gw, n: int) -> requests.Response:
    return requests.post(f"{gw.url}/mcp/fake/echo", headers={**AUTH, "Accept": ACCEPT},
                         json={"jsonrpc": "2.0", "id": n, "method": "ping"}, timeout=20)


def test_two_relays_without_a_store_each_count_on_their_own(make_gateway, upstream):
    relays = [make_gateway([{"name": "fake", "url": upstream.url}],
                           rate_limits={"requests_per_minute": 2}) for _ in range(2)]
    statuses = [_post(gw, n).status_code for n in range(3) for gw in relays]
    assert statuses == [200, 200, 200, 200, 429, 429]   # twice the rate across two processes
    assert len(upstream.requests) == 4


def test_two_relays_sharing_one_redis_share_the_buckets(make_gateway, upstream, redis_url,
                                                        tmp_path):
    store = {"url": redis_url, "prefix": f"shared-{tmp_path.name}"}
    relays = [make_gateway([{"name": "fake", "url": upstream.url}],
                           rate_limits={"requests_per_minute": 2, "redis": store})
              for _ in range(2)]
    assert all(gw.relay._rates.shared for gw in relays)
    statuses = [_post(gw, n).status_code for n in range(2) for gw in relays]
    assert statuses == [200, 200, 429, 429]             # the rate once, whichever relay
    assert len(upstream.requests) == 2
    retry = _post(relays[0], 9).headers["Retry-After"]
    assert 1 <= int(retry) <= 30                        # by the Redis server's clock


def test_many_threads_at_one_shared_bucket_take_exactly_its_tokens(redis_url, tmp_path):
    """EVALSHA runs the refill and the take as one step: concurrent takes through two stores
    (two processes' worth of connections) never let more through than the bucket held."""
    from conftest import answers_from_threads

    clock = Clock()  # stopped: no token comes back while the threads race
    settings = RedisSettings(url=redis_url, prefix=f"race-{tmp_path.name}")
    stores = [RedisBuckets(settings, clock), RedisBuckets(settings, clock)]
    bucket = [Bucket("requests_per_minute", 25, 1)]
    try:
        answers = answers_from_threads(
            8, 10, lambda m: repr(stores[len(m) % 2].take(ALICE, bucket)))
    finally:
        for store in stores:
            store.close()
    assert len(answers) == 80
    assert sum(a == "None" for a in answers.values()) == 25


def test_reloading_the_keys_reloads_their_rates(tmp_path):
    from raider_sync.gateway.relay import Relay

    path = tmp_path / "gateway.json"

    def write(per_minute: int) -> None:
        path.write_text(json.dumps({
            "servers": [{"name": "a", "url": "http://127.0.0.1:1/mcp"}],
            "keys": [{"id": "alice", "env": "ALICE", "servers": ["a"],
                      "rate_limits": {"tool_calls_per_minute": per_minute}}],
            "rate_limits": {"requests_per_minute": 100}}))

    write(5)
    with Relay(GatewayConfig.load(path, env={"ALICE": ALICE})) as relay:
        assert relay._rates.rates("alice") == Rates(requests_per_minute=100,
                                                    tool_calls_per_minute=5)
        write(7)
        assert relay.reload_keys()
        assert relay._rates.rates("alice").tool_calls_per_minute == 7
