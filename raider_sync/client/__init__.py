"""The client: one MCP server as an :class:`~raider_sync.McpServer` (:mod:`.server`, with its
lifecycle, listings, surface and capabilities), many as an :class:`~raider_sync.McpHub`
(:mod:`.hub`), what a call's arguments and results are, and how a client picks a protocol era
(:mod:`.eras`). It stands on the JSON-RPC session and the transports below it."""
