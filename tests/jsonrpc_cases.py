"""Requests that are not valid JSON-RPC 2.0 (as MCP narrows it), with the id their -32600
answer carries: every way of serving a ToolServer refuses them alike."""

INVALID_REQUESTS = [
    ({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": [1]}, 1),
    ({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": None}, 2),
    ({"jsonrpc": "2.0", "id": 3}, 3),                                # no method
    ({"jsonrpc": "2.0", "id": 4, "method": 7}, 4),
    ({"id": 5, "method": "ping"}, 5),                                # no jsonrpc
    ({"jsonrpc": "1.0", "id": 6, "method": "ping"}, 6),
    ({"jsonrpc": "2.0", "id": None, "method": "ping"}, None),        # MCP: never null
    ({"jsonrpc": "2.0", "id": True, "method": "ping"}, None),
    ({"jsonrpc": "2.0", "id": {"n": 1}, "method": "ping"}, None),
    ({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, None),
]
#: a notification that is not valid: never answered over stdio, 400 over HTTP
INVALID_NOTIFICATION = {"jsonrpc": "2.0", "method": "notifications/initialized", "params": [1]}
