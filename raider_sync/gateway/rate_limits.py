"""Rate limits per key: requests and tool calls per minute, each a token bucket.

    "rate_limits": {"requests_per_minute": 600, "tool_calls_per_minute": 60,
                    "redis": {"url": "redis://127.0.0.1:6379/0"}}     # the config's default
    {"id": "alice", ..., "rate_limits": {"tool_calls_per_minute": 300}}   # a key's own

A key's bucket for ``N`` per minute holds at most ``N`` tokens and gains ``N`` a minute (one
every ``60/N`` seconds): a full minute's worth may come at once, then ``N`` a minute. Every
request to an MCP endpoint takes a token of ``requests_per_minute``; each ``tools/call`` in it
(a JSON-RPC batch may hold several) also takes one of ``tool_calls_per_minute``. A request
takes from every bucket or from none: when one of them is short, nothing is taken and the
relay answers 429 with ``Retry-After`` (the seconds until it would pass, rounded up) and a
JSON-RPC error (:func:`refusal`).

Where the buckets live (:class:`RateLimiter` picks the store once):

- in the process (:class:`LocalBuckets`): with several processes (``--workers``, several
  machines) each keeps its own, so a key may do P times its rate across P processes;
- in Redis (:class:`RedisBuckets`, the ``gateway-redis`` extra) when ``redis`` is configured:
  one Lua script, run by EVALSHA, refills and takes every bucket of a request at once on the
  Redis server, by the server's clock, so all processes share the buckets with no
  read-modify-write race. When Redis cannot be reached the process falls back to its own
  buckets (logged), and goes back to Redis once it answers again.

Arithmetic is exact: a bucket of ``N`` per minute counts in units of 1/60000 of a token, so
one millisecond refills ``N`` units. Taking blocks only on Redis (bounded by its ``timeout``);
nothing here raises for a request.
"""
from __future__ import annotations

import json
import logging
import math
import threading
import time
from typing import Any, Callable, NamedTuple, Optional, Sequence

from pydantic import BaseModel, ConfigDict, Field

from ..errors import ConfigError
from ..protocol.codes import RATE_LIMITED

log = logging.getLogger("raider_sync.gateway")

UNITS = 60_000            # units of one token: a bucket of N a minute gains N units a millisecond
FULL_MS = 60_000          # the time an empty bucket takes to fill, whatever its rate
RECHECK_SECONDS = 5.0     # how long a process keeps to its own buckets once Redis failed
NAMES = ("requests_per_minute", "tool_calls_per_minute")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Rates(_Model):
    """``requests_per_minute`` (every request to an MCP endpoint) and
    ``tool_calls_per_minute`` (each ``tools/call``); unset: no limit (a key's own unset value
    is the config's default)."""

    requests_per_minute: Optional[int] = Field(default=None, gt=0)
    tool_calls_per_minute: Optional[int] = Field(default=None, gt=0)

    def over(self, default: "Rates") -> "Rates":
        """These rates, with the unset ones taken from ``default``."""
        return Rates(**{name: getattr(self, name) if getattr(self, name) is not None
                        else getattr(default, name) for name in NAMES})


class RedisSettings(_Model):
    """The shared store: ``url`` (``redis://``, ``rediss://`` or ``unix://``), a key ``prefix``
    of its own per gateway, and ``timeout``, the seconds one exchange with Redis may take."""

    url: str = Field(min_length=1)
    prefix: str = Field(default="raider-gateway", min_length=1)
    timeout: float = Field(default=0.5, gt=0)


class RateLimitSettings(Rates):
    """The config's ``rate_limits``: the default rates of every key and the shared store."""

    redis: Optional[RedisSettings] = None


class Bucket(NamedTuple):
    """One bucket a request takes from: its limit's ``name``, ``per_minute`` and ``cost``."""

    name: str
    per_minute: int
    cost: int


class Refused(NamedTuple):
    """A request over a limit: the ``limit`` by name and the whole seconds to wait."""

    limit: str
    retry_after: int


class LocalBuckets:
    """Buckets in this process; ``clock()`` in seconds (default ``time.monotonic``).
    Thread-safe, never blocks."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._lock = threading.Lock()
        self._levels: dict[tuple[str, str], tuple[int, int]] = {}  # -> (units, at ms)

    def take(self, key: str, buckets: Sequence[Bucket]) -> Optional[Refused]:
        """Take ``cost`` from each of ``key``'s ``buckets``, or from none: then the limit
        that waits longest and its wait."""
        now = int(self._clock() * 1000)
        with self._lock:
            levels = [_refilled(self._levels.get((key, b.name)), b.per_minute, now)
                      for b in buckets]
            refused = _shortest(buckets, levels)
            if refused is None:
                for bucket, level in zip(buckets, levels, strict=True):
                    self._levels[(key, bucket.name)] = (level - bucket.cost * UNITS, now)
            return refused


def _refilled(state: Optional[tuple[int, int]], per_minute: int, now: int) -> int:
    if state is None:
        return per_minute * UNITS
    units, at = state
    # elapsed is capped at a full refill, so the product stays small and exact
    elapsed = min(max(0, now - at), FULL_MS)
    return min(per_minute * UNITS, units + elapsed * per_minute)


def _shortest(buckets: Sequence[Bucket], levels: Sequence[int]) -> Optional[Refused]:
    worst: Optional[Refused] = None
    for bucket, level in zip(buckets, levels, strict=True):
        short = bucket.cost * UNITS - level
        if short > 0:
            wait_ms = -(-short // bucket.per_minute)
            seconds = max(1, math.ceil(wait_ms / 1000))
            if worst is None or seconds > worst.retry_after:
                worst = Refused(bucket.name, seconds)
    return worst


# KEYS: one hash per bucket. ARGV[1]: now in ms, or "" for the Redis server's clock (shared by
# every process); then per bucket: per_minute, cost. A hash holds "u" (units) and "t" (ms).
# Returns {0} when taken, else {index of the bucket that waits longest (1-based), wait in ms}.
# Every number stays an integer under 2^53, so Lua's doubles are exact.
_SCRIPT = """
local now = tonumber(ARGV[1])
if now == nil then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local levels, worst, worst_wait = {}, 0, 0
for i, key in ipairs(KEYS) do
  local per_minute, cost = tonumber(ARGV[2 * i]), tonumber(ARGV[2 * i + 1])
  local full = per_minute * 60000
  local state = redis.call('HMGET', key, 'u', 't')
  local units, at = tonumber(state[1]), tonumber(state[2])
  if units == nil or at == nil then
    units = full
  else
    units = math.min(full, units + math.min(math.max(0, now - at), 60000) * per_minute)
  end
  levels[i] = units
  local short = cost * 60000 - units
  if short > 0 then
    local wait = math.ceil(short / per_minute)
    if wait > worst_wait then worst, worst_wait = i, wait end
  end
end
if worst > 0 then return {worst, worst_wait} end
for i, key in ipairs(KEYS) do
  local cost = tonumber(ARGV[2 * i + 1])
  redis.call('HSET', key, 'u', string.format('%d', levels[i] - cost * 60000),
             't', string.format('%d', now))
  redis.call('PEXPIRE', key, 60000)
end
return {0}
"""


class RedisBuckets:
    """Buckets in Redis at ``settings.url``, shared by every process that uses the same
    ``prefix``; ``clock()`` in seconds for tests (default: the Redis server's clock). Each
    take is one EVALSHA (the script is loaded on first use and again after a SCRIPT FLUSH).
    Thread-safe (a pool of connections). Raises ConfigError without the redis package;
    :meth:`take` raises ``redis.RedisError`` when Redis fails or is slower than ``timeout``."""

    def __init__(self, settings: RedisSettings, clock: Optional[Callable[[], float]] = None):
        try:
            import redis
        except ImportError as exc:
            raise ConfigError("rate_limits.redis needs the redis package: "
                              "pip install 'raider_sync[gateway-redis]'") from exc
        try:
            self._client = redis.Redis.from_url(
                settings.url, socket_timeout=settings.timeout,
                socket_connect_timeout=settings.timeout)
        except ValueError as exc:
            raise ConfigError(f"rate_limits.redis.url: {exc}") from exc
        self._script = self._client.register_script(_SCRIPT)
        self._prefix, self._clock = settings.prefix, clock
        self.errors: tuple[type[BaseException], ...] = (redis.RedisError, OSError)

    def take(self, key: str, buckets: Sequence[Bucket]) -> Optional[Refused]:
        """As :meth:`LocalBuckets.take`, atomically on the Redis server."""
        # the key id in braces: a Redis Cluster keeps a key's buckets in one slot
        keys = [f"{self._prefix}:{{{key}}}:{b.name}" for b in buckets]
        args: list[Any] = ["" if self._clock is None else int(self._clock() * 1000)]
        for bucket in buckets:
            args += [bucket.per_minute, bucket.cost]
        answer = self._script(keys=keys, args=args)
        if not answer or int(answer[0]) == 0:
            return None
        return Refused(buckets[int(answer[0]) - 1].name,
                       max(1, math.ceil(int(answer[1]) / 1000)))

    def close(self) -> None:
        self._client.close()


class RateLimiter:
    """The relay's rate limits: the rates of each key (its own over the config's default),
    and the buckets, in the process or in Redis (see the module). :meth:`admit` never raises
    for a request and blocks only on Redis."""

    def __init__(self, settings: Optional[RateLimitSettings], keys: dict[str, Rates],
                 clock: Callable[[], float] = time.monotonic):
        self._local = LocalBuckets(clock)
        self._shared = None if settings is None or settings.redis is None \
            else RedisBuckets(settings.redis)
        self._failed_at: Optional[float] = None
        self.update(settings, keys)

    @classmethod
    def of(cls, config: Any) -> "RateLimiter":
        """The limiter of a :class:`~raider_sync.gateway.config.GatewayConfig`."""
        return cls(config.rate_limits, key_rates(config))

    def update(self, settings: Optional[RateLimitSettings], keys: dict[str, Rates]) -> None:
        """Use these rates from now on (the buckets keep their levels; the store stays)."""
        default = Rates() if settings is None else Rates(
            requests_per_minute=settings.requests_per_minute,
            tool_calls_per_minute=settings.tool_calls_per_minute)
        self._default = default
        self._rates = {key: rates.over(default) for key, rates in keys.items()}  # one assignment

    @property
    def shared(self) -> bool:
        """Whether the buckets are kept in Redis (for all processes)."""
        return self._shared is not None

    def rates(self, key: str) -> Rates:
        """The rates that apply to ``key``."""
        return self._rates.get(key, self._default)

    def admit(self, key: str, body: bytes) -> Optional[Refused]:
        """Take one request, and the body's tool calls, from ``key``'s buckets; ``None`` when
        the request may go on."""
        rates = self.rates(key)
        buckets = []
        if rates.requests_per_minute is not None:
            buckets.append(Bucket("requests_per_minute", rates.requests_per_minute, 1))
        if rates.tool_calls_per_minute is not None:
            calls = tool_calls(body)
            if calls > rates.tool_calls_per_minute:  # would never fit: refuse, never wait
                return Refused("tool_calls_per_minute", FULL_MS // 1000)
            if calls:
                buckets.append(Bucket("tool_calls_per_minute", rates.tool_calls_per_minute, calls))
        if not buckets:
            return None
        if self._shared is not None and (self._failed_at is None or
                                         time.monotonic() - self._failed_at > RECHECK_SECONDS):
            try:
                refused = self._shared.take(key, buckets)
            except self._shared.errors as exc:
                if self._failed_at is None:
                    log.warning("gateway: Redis for the rate limits failed (%s: %s); "
                                "this process counts on its own meanwhile",
                                type(exc).__name__, exc)
                self._failed_at = time.monotonic()
            else:
                if self._failed_at is not None:
                    log.warning("gateway: Redis for the rate limits answers again")
                    self._failed_at = None
                return refused
        return self._local.take(key, buckets)

    def close(self) -> None:
        """Close the connections to Redis. May be called twice."""
        if self._shared is not None:
            self._shared.close()


def key_rates(config: Any) -> dict[str, Rates]:
    """The rates each key of ``config`` sets for itself (keys that set none are left out)."""
    return {key.id: key.rate_limits for key in config.keys if key.rate_limits is not None}


def tool_calls(body: bytes) -> int:
    """The number of ``tools/call`` requests in a body: one JSON-RPC request or a batch; a
    body this parser cannot read counts as one. No shortcut on the raw bytes: JSON may
    escape any letter of ``tools/call``."""
    if not body:
        return 0
    try:
        message = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        # the upstream's parser may read what this one cannot (deeper nesting): count one
        return 1
    messages = message if isinstance(message, list) else [message]
    return sum(1 for m in messages if isinstance(m, dict) and m.get("method") == "tools/call")


def refusal(body: bytes, refused: Refused) -> bytes:
    """The JSON-RPC error body of a request over a rate limit (HTTP 429): the request's id
    (``null`` for a batch or a GET), and in ``data`` the limit and the seconds to wait."""
    try:
        message: Any = json.loads(body) if body else None
    except (ValueError, UnicodeDecodeError, RecursionError):
        message = None
    request_id = message.get("id") if isinstance(message, dict) else None
    what = "tool calls" if refused.limit == "tool_calls_per_minute" else "requests"
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {
        "code": RATE_LIMITED,
        "message": f"this key made as many {what} as it may for now; "
                   f"retry in {refused.retry_after} s",
        "data": {"type": "rate_limited", "limit": refused.limit,
                 "retry_after": refused.retry_after}}}).encode()
