"""The serving side: a :class:`~raider_sync.ToolServer` of Python functions (:mod:`.toolserver`),
the served session that answers a client over stdio or a stream (:mod:`.serving`, :mod:`.served`
for the stateless era), a handler's :class:`~.context.Context` and how it reaches the
client in each era (:mod:`.context`, :mod:`.client_links`, :mod:`.request_state` for the
stateless era's rounds, :mod:`.questions` for questions over HTTP), the WSGI Streamable HTTP
application (:mod:`.serving_http`, :mod:`.serving_streams`), an in-process connection
(:mod:`.inprocess`) and the servers' resources served as tools (:mod:`.resources`). It may
use the client's vocabulary (results, eras); the client reaches up here only through
``McpServer.in_process``."""
