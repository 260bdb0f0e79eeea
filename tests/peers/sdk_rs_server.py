"""An MCP server of the official Python SDK that accepts JWT access tokens of an independent
authorization server (checked against its JWKS: signature, issuer, audience = this server).

    python sdk_rs_server.py PORT ISSUER [LISTED]

ISSUER is the authorization server's own issuer (the tokens' ``iss``); LISTED, when given, is
how the protected-resource metadata spells it in ``authorization_servers`` (say, with or
without a trailing "/").
"""
import sys

import jwt
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer


class JwksVerifier:
    def __init__(self, issuer: str, audience: str):
        self.issuer, self.audience = issuer, audience
        self.keys = jwt.PyJWKClient(f"{issuer.rstrip('/')}/jwks")

    async def verify_token(self, token: str):
        try:
            key = self.keys.get_signing_key_from_jwt(token)
            claims = jwt.decode(token, key.key, algorithms=["ES256"], audience=self.audience,
                                issuer=self.issuer)
        except jwt.PyJWTError:
            return None
        return AccessToken(token=token, client_id=claims.get("client_id", ""),
                           scopes=(claims.get("scope") or "").split(), expires_at=claims["exp"],
                           resource=self.audience)


def main() -> None:
    port, issuer = int(sys.argv[1]), sys.argv[2]
    listed = sys.argv[3] if len(sys.argv) > 3 else issuer
    url = f"http://127.0.0.1:{port}/mcp"
    server = MCPServer("raider-test-rs", token_verifier=JwksVerifier(issuer, url),
                       auth=AuthSettings(issuer_url=listed, resource_server_url=url,
                                         required_scopes=["mcp"], validate_token_resource=True))

    @server.tool()
    def whoami() -> str:
        """Say that the caller got through."""
        return "authorized"

    @server.tool()
    def caller() -> dict:
        """The access token this request came with, and its subject and audience."""
        token = get_access_token()
        claims = jwt.decode(token.token, options={"verify_signature": False})
        return {"token": token.token, "sub": claims.get("sub"), "aud": claims.get("aud"),
                "client_id": claims.get("client_id")}

    server.run("streamable-http", host="127.0.0.1", port=port)


if __name__ == "__main__":
    main()
