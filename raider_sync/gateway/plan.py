"""What a relay derives from one loaded config, built whole and swapped whole on reload.

    plan = Plan(config, threads=16)                  # at start
    plan = Plan(config.reloaded(), 16, previous=plan)  # on SIGHUP: one assignment swaps it

A request reads the relay's plan once and uses that one to its end, so it sees the old config
or the new one, never half of each. A part that keeps live state across reloads (the per-key
counts of :class:`~raider_sync.gateway.limits.KeyLimits`) takes it from ``previous`` and gives
it the new settings, so what requests in flight hold is still counted.

A new part of the config joins by deriving its state here from ``config`` (and ``previous``,
for live state), and reading it from the plan of the request: nothing else is needed for it to
be reloaded. Building a plan never blocks on the network; it raises nothing for a config that
:meth:`GatewayConfig.from_dict` accepted.
"""
from __future__ import annotations

from typing import Mapping, Optional

from . import tool_rules
from .config import GatewayConfig
from .limits import KeyLimits, default_limits


class Plan:
    """The keys' digests, the servers by name, their fixed upstream headers, the allowed
    origins, the tool rules per key and server, and the per-key limits of one config."""

    def __init__(self, config: GatewayConfig, threads: int, *,
                 fixed_headers: Mapping[str, str] = {}, previous: Optional["Plan"] = None):
        self.config = config
        self.digests = config.key_digests()
        self.servers = {s.name: s for s in config.servers}
        # what goes upstream besides the client's headers, built once per server: its static
        # headers and credential, then the relay's own; a server with an OAuth client asks
        # the config per request (its token is fetched and renewed)
        self.fixed = {s.name: {**config.upstream_headers(s), **fixed_headers}
                      for s in config.servers if s.relayed and s.oauth is None
                      and s.token_exchange is None}  # those ask per request (a token per key)
        self.origins = None if config.allowed_origins is None else {
            o.rstrip("/").lower() for o in config.allowed_origins}
        self.tool_rules = tool_rules.filters(config.keys)
        requests_default, streams_default = default_limits(threads)
        requests = config.limits.requests_per_key or requests_default
        streams = config.limits.streams_per_key or streams_default
        if previous is None:
            self.limits = KeyLimits(requests, streams)
        else:  # the same counts, so the leases of requests in flight are given back to them
            self.limits = previous.limits
            self.limits.requests, self.limits.streams = requests, streams
