"""Events of MCP servers (the ``io.modelcontextprotocol/events`` extension, a draft:
experimental), the client's side; see docs/events.md.

- :class:`EventSubscription`: what ``McpServer.events`` returns (poll or push)
- :class:`WebhookSubscription`: ``events/subscribe``, refreshed on a thread
- :func:`verify_webhook`, :func:`webhook_app`: the receiving end of webhook deliveries
"""
from __future__ import annotations

from ...errors import WebhookRejected
from .subscription import EventSubscription
from .webhook_receiver import WebhookApp, verify_webhook, webhook_app
from .webhook_subscription import WebhookSubscription, new_secret

__all__ = ["EventSubscription", "WebhookApp", "WebhookRejected", "WebhookSubscription",
           "new_secret", "verify_webhook", "webhook_app"]
