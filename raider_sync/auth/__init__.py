"""OAuth for MCP servers that answer 401: discovery, consent, grants, token stores.

    from raider_sync.auth import OAuth, browser_consent
    srv = McpServer(spec, auth=OAuth(consent=browser_consent()))

See :class:`OAuth`; the manual's "Authorization" page walks through each way to a token.
"""
from ..errors import AuthError, ConsentRequired
from .consent import (
                      Consent,
                      DeviceConsent,
                      LoopbackConsent,
                      PasteConsent,
                      RedirectConsent,
                      browser_consent,
                      device_consent,
                      paste_consent,
                      redirect_consent,
)
from .grants import ClientCredentials, Grant, IdJag, JwtBearer, PrivateKeyJWT
from .oauth import OAuth
from .store import FileTokenStore, MemoryTokenStore, TokenStore

__all__ = [
    "AuthError",
    "ClientCredentials",
    "Consent",
    "ConsentRequired",
    "DeviceConsent",
    "FileTokenStore",
    "Grant",
    "IdJag",
    "JwtBearer",
    "LoopbackConsent",
    "MemoryTokenStore",
    "OAuth",
    "PasteConsent",
    "PrivateKeyJWT",
    "RedirectConsent",
    "TokenStore",
    "browser_consent",
    "device_consent",
    "paste_consent",
    "redirect_consent",
]
