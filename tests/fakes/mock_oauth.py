"""A threaded mock of an OAuth-protected MCP server and its authorization server, for the
faults a real one will not produce on demand (HTML metadata, a token endpoint that hangs, a
wrong state, a revoked refresh token) and for counting flows.

One WSGI app (served by wsgiref in a thread, port 0) plays both parts:

- ``/mcp``: JSON-RPC over POST (initialize, tools/list, tools/call ``echo``); 401 with a Bearer
  challenge unless the request carries a token it issued.
- ``/.well-known/oauth-protected-resource/mcp``, ``/.well-known/oauth-authorization-server``,
  ``/register``, ``/authorize`` (auto-approves with a 302), ``/token``, ``/device``.
"""
from __future__ import annotations

import json
import secrets
import threading
from socketserver import ThreadingMixIn
from urllib.parse import parse_qs, urlencode
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server


class _Threaded(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    # socketserver's 5 is no backlog for tests that connect from 20 threads at once
    request_queue_size = 128


class _Quiet(WSGIRequestHandler):
    def log_message(self, format, *args):  # noqa: A002
        pass


class MockOAuth:
    """Knobs: ``metadata_html`` (the AS metadata is an HTML page), ``hang_token`` (the token
    endpoint waits on ``release`` before answering), ``wrong_state``, ``refresh`` (issue
    refresh tokens), ``expires_in``, ``device`` (offer the device grant); and
    ``authorize_after``, set any time: the authorization endpoint answers only once ``/mcp``
    has answered that many 401s in all (``counts["401"]``; bounded), so that the calls a test
    makes at once are all waiting for the one flow before it can end."""

    def __init__(self, **knobs):
        self.metadata_html = knobs.get("metadata_html", False)
        self.hang_token = knobs.get("hang_token", False)
        self.wrong_state = knobs.get("wrong_state", False)
        self.refresh = knobs.get("refresh", False)
        self.expires_in = knobs.get("expires_in", 3600)
        self.device = knobs.get("device", False)
        self.authorize_after = 0
        self.release = threading.Event()
        self.lock = threading.Lock()
        self._counted = threading.Condition(self.lock)  # told of every count
        self.tokens: set[str] = set()
        self.refresh_tokens: set[str] = set()
        self.counts: dict[str, int] = {}
        self.forms: list[dict] = []
        self.device_polls = 0
        self._server = make_server("127.0.0.1", 0, self.app, server_class=_Threaded,
                                   handler_class=_Quiet)
        self.base = f"http://127.0.0.1:{self._server.server_address[1]}"
        self.url = f"{self.base}/mcp"
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.1,),
                                        name="mock-oauth", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def revoke_all(self) -> None:
        with self.lock:
            self.tokens.clear()
            self.refresh_tokens.clear()

    # -- the app -------------------------------------------------------------------------

    def _count(self, what: str) -> None:
        with self._counted:
            self.counts[what] = self.counts.get(what, 0) + 1
            self._counted.notify_all()

    def app(self, environ, start_response):
        path = environ["PATH_INFO"]
        self._count(path)
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length) if length else b""
        status, headers, payload = self.route(environ, path, body)
        if isinstance(payload, (dict, list)):
            payload = json.dumps(payload).encode()
            headers = [("Content-Type", "application/json")] + headers
        start_response(status, headers)
        return [payload]

    def route(self, environ, path, body):
        base = self.base
        if path == "/mcp":
            return self.mcp(environ, body)
        if path == "/.well-known/oauth-protected-resource/mcp":
            return "200 OK", [], {"resource": self.url, "authorization_servers": [base],
                                  "scopes_supported": ["mcp"]}
        if path == "/.well-known/oauth-authorization-server":
            if self.metadata_html:
                return "200 OK", [("Content-Type", "text/html")], b"<html>Sign in</html>"
            meta = {"issuer": base, "authorization_endpoint": f"{base}/authorize",
                    "token_endpoint": f"{base}/token", "registration_endpoint": f"{base}/register",
                    "code_challenge_methods_supported": ["S256"],
                    "token_endpoint_auth_methods_supported": ["none"]}
            if self.device:
                meta["device_authorization_endpoint"] = f"{base}/device"
            return "200 OK", [], meta
        if path == "/register":
            data = json.loads(body)
            return "201 Created", [], {"client_id": "client-" + secrets.token_hex(4),
                                       "redirect_uris": data["redirect_uris"],
                                       "token_endpoint_auth_method": "none"}
        if path == "/authorize":
            with self._counted:
                self._counted.wait_for(lambda: self.counts.get("401", 0) >= self.authorize_after,
                                       timeout=30)
            query = {k: v[0] for k, v in parse_qs(environ["QUERY_STRING"]).items()}
            state = "forged" if self.wrong_state else query["state"]
            target = query["redirect_uri"] + "?" + urlencode(
                {"code": "the-code", "state": state, "iss": base})
            return "302 Found", [("Location", target)], b""
        if path == "/device":
            return "200 OK", [], {"device_code": "dev-1", "user_code": "ABCD-EFGH",
                                  "verification_uri": f"{base}/activate", "interval": 0.01,
                                  "expires_in": 30}
        if path == "/token":
            return self.token(parse_qs(body.decode()))
        return "404 Not Found", [("Content-Type", "text/plain")], b"not found"

    def token(self, form):
        form = {k: v[0] for k, v in form.items()}
        with self.lock:
            self.forms.append(form)
        if self.hang_token:
            self.release.wait(30)
        grant = form.get("grant_type")
        if grant == "refresh_token":
            with self.lock:
                known = form.get("refresh_token") in self.refresh_tokens
            if not known:
                return "400 Bad Request", [], {"error": "invalid_grant",
                                               "error_description": "refresh token revoked"}
        if grant.endswith("device_code"):
            with self.lock:
                self.device_polls += 1
                polls = self.device_polls
            if polls < 3:
                return "400 Bad Request", [], {"error": "authorization_pending"}
        token = "tok-" + secrets.token_hex(8)
        answer = {"access_token": token, "token_type": "Bearer", "expires_in": self.expires_in}
        with self.lock:
            self.tokens.add(token)
            if self.refresh:
                answer["refresh_token"] = "ref-" + secrets.token_hex(8)
                self.refresh_tokens.add(answer["refresh_token"])
        return "200 OK", [], answer

    def mcp(self, environ, body):
        if environ["REQUEST_METHOD"] != "POST":
            return "405 Method Not Allowed", [], b""
        auth = environ.get("HTTP_AUTHORIZATION", "")
        with self.lock:
            ok = auth.startswith("Bearer ") and auth[7:] in self.tokens
        if not ok:
            self._count("401")
            meta = f"{self.base}/.well-known/oauth-protected-resource/mcp"
            return "401 Unauthorized", [("WWW-Authenticate", f'Bearer error="invalid_token", '
                                         f'resource_metadata="{meta}"')], {"error": "no"}
        message = json.loads(body)
        if "id" not in message:
            return "202 Accepted", [], b""
        method = message["method"]
        if method == "initialize":
            result = {"protocolVersion": message["params"]["protocolVersion"],
                      "capabilities": {"tools": {}}, "serverInfo": {"name": "mock", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": "echo"}]}
        else:
            result = {}
        return "200 OK", [], {"jsonrpc": "2.0", "id": message["id"], "result": result}
