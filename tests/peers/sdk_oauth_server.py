"""An MCP server of the official Python SDK behind the SDK's own OAuth authorization server:
dynamic client registration, PKCE (checked by the SDK), refresh tokens, tokens bound to the
resource. The consent page approves at once (it redirects straight back with a code), so a
client can follow the redirect without a person.

    python sdk_oauth_server.py PORT [streamable-http|sse]
"""
import secrets
import sys
import time

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken


class ApproveEverything:
    """An in-memory provider: every authorization request is approved."""

    def __init__(self):
        self.clients, self.codes, self.tokens, self.refresh = {}, {}, {}, {}

    async def get_client(self, client_id):
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull):
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or [], expires_at=time.time() + 300,
            client_id=client.client_id, code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri, resource=params.resource,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly)
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client, code):
        return self.codes.get(code)

    def _issue(self, client_id, scopes, resource) -> OAuthToken:
        token, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        self.tokens[token] = AccessToken(token=token, client_id=client_id, scopes=scopes,
                                         expires_at=int(time.time()) + 3600, resource=resource)
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes,
                                             resource=resource)
        return OAuthToken(access_token=token, expires_in=3600, refresh_token=refresh,
                          scope=" ".join(scopes) or None)

    async def exchange_authorization_code(self, client, code: AuthorizationCode):
        self.codes.pop(code.code, None)
        return self._issue(client.client_id, code.scopes, code.resource)

    async def load_refresh_token(self, client, refresh_token):
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client, refresh_token, scopes):
        self.refresh.pop(refresh_token.token, None)
        return self._issue(client.client_id, scopes or refresh_token.scopes,
                           refresh_token.resource)

    async def load_access_token(self, token):
        return self.tokens.get(token)

    async def revoke_token(self, token):
        self.tokens.pop(getattr(token, "token", None), None)


def main() -> None:
    port = int(sys.argv[1])
    transport = sys.argv[2] if len(sys.argv) > 2 else "streamable-http"
    base = f"http://127.0.0.1:{port}"
    path = "/sse" if transport == "sse" else "/mcp"
    server = MCPServer("raider-test-oauth", auth_server_provider=ApproveEverything(),
                       auth=AuthSettings(issuer_url=base, resource_server_url=f"{base}{path}",
                                         validate_token_resource=True,
                                         client_registration_options=ClientRegistrationOptions(
                                             enabled=True)))

    @server.tool()
    def whoami() -> str:
        """Say that the caller got through."""
        return "authorized"

    server.run(transport, host="127.0.0.1", port=port)


if __name__ == "__main__":
    main()
