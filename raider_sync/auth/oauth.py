"""OAuth: the authorization of one MCP server, consulted by its HTTP transport.

    auth = OAuth(consent=browser_consent(), store=FileTokenStore())
    srv = McpServer(config.server("tracker"), auth=auth)

The transport asks :meth:`OAuth.headers` for each request's ``Authorization`` (and ``DPoP``)
header, and hands every 401/403 to :meth:`OAuth.challenge`, which says whether to send the
request again. A 401 refreshes the token, else runs the whole flow (discovery, identity,
consent or a grant without a person, token); a 403 ``insufficient_scope`` re-authorizes with
the union of the scopes, once per request and only when it adds one. One flow runs at a time:
requests that hit a 401 meanwhile wait for it (bounded by their deadline) and retry with its
token, or fail with its AuthError.

A refresh is single-flight: one per expiring token, however many threads need it, and however
many processes share a store with a ``lock(key, timeout)`` (:class:`FileTokenStore` locks a
file beside the record): the stored record is read again under that lock, and a token another
thread or process refreshed meanwhile is used as it is. A dynamically registered client the
authorization server answers ``invalid_client`` for is dropped and registered again, once.

:class:`OAuth` decides when to authorize and keeps one flow at a time; the record in the store
is a :class:`~raider_sync.auth.record.StoredRecord` and talking to the authorization server
(the flow, the refresh) a :class:`~raider_sync.auth.flow.TokenFlow`, parts it owns.
"""
from __future__ import annotations

import copy
import logging
import threading
import time
from typing import Any, Callable

import requests

from ..errors import AuthError, ConsentRequired, RaiderError
from ..threads.timeouts import seconds
from .consent import Consent, as_consent
from .discovery import canonical_resource
from .flow import FLOW_TIMEOUT, TokenFlow
from .grants import Grant
from .record import (
    REFRESH_MARGIN,  # noqa: F401 - importable from here as before
    StoredRecord,
)
from .record import expiring as _expiring
from .record import left as _left
from .store import FileTokenStore, TokenStore
from .wire import AuthHttp, Challenge, bearer_challenge

log = logging.getLogger("raider_sync.auth")


class Attempt:
    """One request's authorization budget: the flow generation its headers came from, and
    what it has spent (a flow, a step-up, nonce retries)."""

    def __init__(self, generation: int):
        self.generation = generation
        self.sent: str | None = None  # the token the last try carried
        self.flows = 0
        self.step_ups = 0
        self.nonces = 0


class OAuth:
    """The OAuth client of one MCP server (see the module doc). Thread-safe.

    ``consent`` (a :class:`Consent` or ``fn(url) -> redirected_url``) is how a person approves;
    without one a server that needs a person gets :class:`ConsentRequired` (status
    ``needs-auth``). ``grant`` (:class:`ClientCredentials`, :func:`PrivateKeyJWT`,
    :class:`JwtBearer`, :class:`IdJag`) gets tokens without a person. ``store`` keeps
    registrations and tokens (default :class:`FileTokenStore`). ``client_id``/``client_secret``
    are a pre-registered client, ``client_metadata_url`` a client ID metadata document,
    ``callback_port`` the loopback port, ``auth_server_metadata_url`` replaces AS discovery,
    ``scopes`` are requested when the server names none, ``dpop`` binds tokens to a key
    (RFC 9449). Tokens never appear in reprs, logs or exceptions.
    """

    def __init__(self, *, consent: Consent | Callable[[str], str] | None = None,
                 store: TokenStore | None = None, grant: Grant | None = None,
                 client_id: str | None = None, client_secret: str | None = None,
                 client_metadata_url: str | None = None, callback_port: int | None = None,
                 auth_server_metadata_url: str | None = None,
                 scopes: list[str] | str | None = None, dpop: bool = False,
                 client_name: str = "raider_sync", timeout: float = 30.0,
                 session: requests.Session | None = None, automatic: bool = False):
        if grant is not None and not isinstance(grant, Grant):
            raise TypeError(f"grant must be a Grant (ClientCredentials, JwtBearer, ...), not "
                            f"{type(grant).__name__}")
        if store is not None and not isinstance(store, TokenStore):
            raise TypeError(f"store must have load, save and delete, not {type(store).__name__}")
        if callback_port is not None and not (0 < int(callback_port) < 65536):
            raise ValueError(f"callback_port: {callback_port} is not a TCP port")
        self.consent = as_consent(consent)
        self.store = store if store is not None else FileTokenStore()
        self.grant = grant
        self.client_id = client_id
        self.client_secret = client_secret
        self.client_metadata_url = client_metadata_url
        self.callback_port = callback_port
        self.auth_server_metadata_url = auth_server_metadata_url
        self.scopes = scopes.split() if isinstance(scopes, str) else list(scopes or [])
        self.dpop = dpop
        self.client_name = client_name
        self.timeout = seconds(timeout, 30.0, method="OAuth")
        self.automatic = automatic  # made for an entry without oauth: only on a Bearer 401
        self.server_url: str | None = None
        self.name: str | None = None
        self._session = session
        self._http: AuthHttp | None = None
        self._unauthorized()

    def _unauthorized(self) -> None:
        """The state of an OAuth that has authorized nothing yet: no flow, no record read,
        fresh parts."""
        self._flow_lock = threading.Lock()
        self._generation = 0
        self._last_error: AuthError | None = None
        self._record = StoredRecord(store=lambda: self.store, server_url=lambda: self.server_url)
        self._flow = TokenFlow(self, record=self._record, set_status=self._set)
        self._status = "needs-auth"
        self._reason: str | None = "not authorized yet"

    def __repr__(self) -> str:
        return f"<OAuth {self.server_url or 'unbound'} {self._status}>"

    @classmethod
    def for_spec(cls, spec, **options: Any) -> "OAuth":
        """An OAuth for a server entry: its ``oauth`` block's settings, plus ``options``
        (consent, store, grant, ...). Without an ``oauth`` block it engages only when the
        server answers 401 with a Bearer challenge."""
        settings = getattr(spec, "oauth", None)
        if settings is not None:
            for name in ("client_id", "client_secret", "callback_port",
                         "auth_server_metadata_url", "scopes", "client_metadata_url"):
                if getattr(settings, name) is not None:
                    options.setdefault(name, getattr(settings, name))
        else:
            options.setdefault("automatic", True)
        auth = cls(**options)
        return auth.bind(spec.url, spec.name)

    # -- binding -------------------------------------------------------------------------

    def bind(self, server_url: str, name: str | None = None) -> "OAuth":
        """This object for ``server_url``, or a copy with the same settings when it already
        serves another server (so one OAuth may be given to a hub)."""
        url = canonical_resource(server_url)
        if self.server_url in (None, url):
            self.server_url, self.name = url, name or self.name or url
            return self
        twin = copy.copy(self)
        twin.__dict__.update(server_url=url, name=name or url, _http=None)
        twin._unauthorized()
        return twin

    @property
    def http(self) -> AuthHttp:
        if self._http is None:
            self._http = AuthHttp(self._session, self.timeout)
        return self._http

    def close(self) -> None:
        """Close the connections of the flow (the store is kept)."""
        if self._http is not None and self._session is None:
            self._http.close()
        self._http = None

    # -- status --------------------------------------------------------------------------

    @property
    def status(self) -> str:
        """``authorized``, ``needs-auth`` or ``error`` (see :attr:`reason`)."""
        if self._status == "needs-auth" and self.server_url is not None:
            try:
                if self._record.tokens().get("access_token"):
                    return "authorized"
            except RaiderError as exc:
                self._set("error", str(exc))
        return self._status

    @property
    def reason(self) -> str | None:
        return None if self.status == "authorized" else self._reason

    def _set(self, status: str, reason: str | None) -> None:
        self._status, self._reason = status, reason

    # -- what the transport calls -------------------------------------------------------

    def begin(self) -> Attempt:
        """A budget for one request."""
        return Attempt(self._generation)

    def headers(self, method: str, url: str, deadline: float | None = None,
                attempt: Attempt | None = None) -> dict[str, str]:
        """The authorization headers of one request: the token (refreshed first when it
        expires within a minute) and a fresh DPoP proof. Empty before any token (and, for an
        entry without an oauth block, before the server asked for one)."""
        if self.automatic and self._record.cached is None:
            return {}
        tokens = self._record.tokens()
        if _expiring(tokens) and tokens.get("refresh_token"):
            if self._flow_lock.acquire(timeout=_left(deadline, self.timeout)):
                try:
                    self._flow.refresh_expiring(deadline)
                finally:
                    self._flow_lock.release()
            tokens = self._record.tokens()
        elif _expiring(tokens) and self.grant is not None:  # no refresh token: run it again
            self._run_once(self.begin(), deadline, lambda: self._flow.run(
                Challenge("bearer"), deadline, None))
            tokens = self._record.tokens()
        return self._compose(tokens, method, url, attempt)

    def _compose(self, tokens: dict, method: str, url: str,
                 attempt: Attempt | None = None) -> dict[str, str]:
        token = tokens.get("access_token")
        if attempt is not None:
            attempt.sent = token
        if not token:
            return {}
        kind = "DPoP" if str(tokens.get("token_type")).lower() == "dpop" else "Bearer"
        headers = {"Authorization": f"{kind} {token}"}
        if kind == "DPoP" and self._flow.dpop_key is not None:
            headers["DPoP"] = self._flow.dpop_key.proof(method, url, access_token=token,
                                                        nonce=self._flow.nonces.get("rs"))
        return headers

    def token_headers(self, method: str, url: str,
                      deadline: float | None = None) -> dict[str, str]:
        """:meth:`headers`, running the flow first when there is no token yet (for callers
        that cannot answer a 401 themselves, such as a relay). Raises AuthError."""
        if not self._record.tokens().get("access_token"):
            self.login(timeout=None if deadline is None else _left(deadline, FLOW_TIMEOUT))
            return self._compose(self._record.tokens(), method, url)
        return self.headers(method, url, deadline)

    def challenge(self, response: requests.Response, attempt: Attempt,
                  deadline: float | None = None) -> bool:
        """Handle a 401/403 answered to a request of ``attempt``: True to send it again
        (with :meth:`headers`). Blocks while a flow runs (at most until ``deadline``).
        Raises AuthError (ConsentRequired when a person is needed and none can approve)."""
        found = bearer_challenge(response)
        if found is None and (self.automatic or response.status_code == 403):
            return False
        found = found or Challenge("bearer")
        nonce = response.headers.get("dpop-nonce")
        if found.error == "use_dpop_nonce" and nonce and attempt.nonces < 2:
            self._flow.nonces["rs"] = nonce
            attempt.nonces += 1
            return True
        if response.status_code == 403:
            return found.error == "insufficient_scope" and self._step_up(found, attempt,
                                                                          deadline)
        if attempt.flows:
            return False
        return self._run_once(attempt, deadline,
                              lambda: self._flow.reauthorize(found, attempt.sent, deadline))

    def _run_once(self, attempt: Attempt, deadline: float | None,
                  flow: Callable[[], None]) -> bool:
        if not self._flow_lock.acquire(timeout=_left(deadline, FLOW_TIMEOUT)):
            raise AuthError("authorization: the deadline passed waiting for the authorization "
                            "under way", step="authorization")
        try:
            if self._generation != attempt.generation:  # a flow ran since the request left
                attempt.generation = self._generation
                attempt.flows += 1
                if self._last_error is not None:
                    raise self._last_error
                return True
            attempt.flows += 1
            try:
                flow()
            except AuthError as exc:
                self._last_error = exc
                self._set("needs-auth" if isinstance(exc, ConsentRequired) else "error",
                          str(exc))
                raise
            else:
                self._last_error = None
                self._set("authorized", None)
            finally:
                self._generation += 1
                attempt.generation = self._generation
            return True
        finally:
            self._flow_lock.release()

    def _step_up(self, found: Challenge, attempt: Attempt, deadline: float | None) -> bool:
        wanted = set((found.scope or "").split())
        granted = set((self._record.tokens().get("scope") or "").split())
        requested = self._flow.requested
        union = requested | granted | wanted
        if attempt.step_ups or not wanted or union <= (requested | granted):
            return False
        attempt.step_ups += 1
        scope = " ".join(sorted(union))
        return self._run_once(attempt, deadline, lambda: self._flow.run(found, deadline, scope))

    # -- what people call ----------------------------------------------------------------

    def login(self, timeout: float | None = None) -> None:
        """Run the whole flow now (blocks until a token came, at most ``timeout`` s, default
        10 minutes). Raises AuthError; ConsentRequired when no consent handler is set."""
        bound = seconds(timeout, FLOW_TIMEOUT, method="OAuth.login")
        attempt = self.begin()
        deadline = time.monotonic() + bound
        self._run_once(attempt, deadline, lambda: self._flow.run(Challenge("bearer"), deadline,
                                                                 None))

    def logout(self) -> None:
        """Forget this server's registration and tokens (in the store too)."""
        self._record.forget()
        self._flow.requested.clear()
        self._set("needs-auth", "logged out")

