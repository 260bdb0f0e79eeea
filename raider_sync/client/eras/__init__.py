"""The two eras of MCP and how a client picks one.

- the handshake era (2024-11-05 .. 2025-11-25): ``initialize``, a session, server requests;
  its rules live in :mod:`raider_sync.protocol`.
- the stateless era (2026-07-28): ``server/discover``, every request carrying its revision,
  client capabilities and client info in ``_meta``, ``input_required`` rounds instead of
  server requests (:mod:`.modern`, :mod:`.rounds`).

:mod:`.negotiate` probes a server (over stdio waiting as :mod:`.liveness` says) and
remembers the verdict per server fingerprint, across processes (:mod:`.verdicts`).
"""
