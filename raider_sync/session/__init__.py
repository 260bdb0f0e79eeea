"""The parts of the JSON-RPC session (:class:`raider_sync.jsonrpc.Session`, the face over them).

- :mod:`.pending`: the requests that await an answer, each with its deadline on the process's
  timer; settling, cancelling and expiring them, failing them all when the session ends.
- :mod:`.dispatch`: what the peer sends: answers, progress, its requests and notifications,
  each on its lane of the session's threads.
- :mod:`.renewing`: a new session in place of one the server forgot, once however many
  requests found it gone.
- :mod:`.lanes`: the session's one pool of threads and a lane for each kind of work.

Import :class:`~raider_sync.jsonrpc.Session` and its names from :mod:`raider_sync.jsonrpc`;
these modules may move again.
"""
