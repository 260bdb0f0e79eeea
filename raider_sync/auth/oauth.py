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
"""
from __future__ import annotations

import copy
import logging
import threading
import time
from contextlib import ExitStack
from typing import Any, Callable

import requests

from ..threads.timeouts import seconds
from ..errors import AuthError, ConsentRequired, RaiderError
from .consent import Consent, DeviceConsent, as_consent
from .discovery import Discovered, canonical_resource, discover
from .grants import Grant, authorization_code, device_code, refresh
from .store import FileTokenStore, TokenStore
from .tokens import CODE_GRANTS, DEVICE_GRANT, Client, TokenEndpoint, pre_registered, register
from .wire import AuthHttp, Challenge, bearer_challenge

log = logging.getLogger("raider_sync.auth")

#: seconds before expiry a token is refreshed
REFRESH_MARGIN = 60.0
#: seconds a flow may take when the request that started it has no deadline
FLOW_TIMEOUT = 600.0


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
        self._flow_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._generation = 0
        self._last_error: AuthError | None = None
        self._record: dict | None = None
        self._disc: Discovered | None = None
        self._dpop_key: Any = None
        self._nonces: dict[str, str] = {}
        self._requested: set[str] = set()
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
        twin.__dict__.update(server_url=url, name=name or url, _http=None,
                             _flow_lock=threading.Lock(), _state_lock=threading.Lock(),
                             _generation=0, _last_error=None, _record=None, _disc=None,
                             _dpop_key=None, _nonces={}, _requested=set(),
                             _status="needs-auth", _reason="not authorized yet")
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
                if (self._load().get("tokens") or {}).get("access_token"):
                    return "authorized"
            except RaiderError as exc:
                self._set("error", str(exc))
        return self._status

    @property
    def reason(self) -> str | None:
        return None if self.status == "authorized" else self._reason

    def _set(self, status: str, reason: str | None) -> None:
        self._status, self._reason = status, reason

    def _needs_person(self) -> ConsentRequired:
        name = self.name or self.server_url
        return ConsentRequired(
            f"consent: MCP server {name!r} needs a person to authorize access; run "
            f"`raider-sync login {name}` (or call login() with a consent handler)",
            step="consent")

    # -- the record ----------------------------------------------------------------------

    def _key(self) -> str:
        if self.server_url is None:
            raise AuthError("authorization: this OAuth object serves no server yet (bind)",
                            step="authorization")
        return self.server_url

    def _load(self, again: bool = False) -> dict:
        """The record, read from the store the first time (and, with ``again``, now: another
        process sharing the store may have written it)."""
        with self._state_lock:
            if self._record is None or again:
                try:
                    self._record = self.store.load(self._key()) or {}
                except RaiderError:
                    raise
                except (OSError, ValueError) as exc:
                    raise AuthError(f"authorization: the token store failed: {exc}",
                                    step="authorization") from exc
            return self._record

    def _hold_store(self, stack: ExitStack, deadline: float | None) -> None:
        """Enter the store's lock on this record, when it has one (bounded by ``deadline``,
        else the HTTP timeout); it is released when ``stack`` closes. Raises AuthError when
        another holder keeps it past the bound."""
        lock = getattr(self.store, "lock", None)
        if lock is None:
            return
        bound = _left(deadline, self.timeout)
        try:
            stack.enter_context(lock(self._key(), bound))
        except TimeoutError as exc:
            raise AuthError(f"refresh: the token store stayed locked by another refresh for "
                            f"{bound:g} s", step="refresh") from exc

    def _save(self, record: dict) -> None:
        with self._state_lock:
            self._record = record
        self.store.save(self._key(), record)

    # -- what the transport calls -------------------------------------------------------

    def begin(self) -> Attempt:
        """A budget for one request."""
        return Attempt(self._generation)

    def headers(self, method: str, url: str, deadline: float | None = None,
                attempt: Attempt | None = None) -> dict[str, str]:
        """The authorization headers of one request: the token (refreshed first when it
        expires within a minute) and a fresh DPoP proof. Empty before any token (and, for an
        entry without an oauth block, before the server asked for one)."""
        if self.automatic and self._record is None:
            return {}
        tokens = (self._load().get("tokens") or {})
        if _expiring(tokens) and tokens.get("refresh_token"):
            if self._flow_lock.acquire(timeout=_left(deadline, self.timeout)):
                try:
                    self._refresh_expiring(deadline)
                finally:
                    self._flow_lock.release()
            tokens = (self._load().get("tokens") or {})
        elif _expiring(tokens) and self.grant is not None:  # no refresh token: run it again
            self._run_once(self.begin(), deadline, lambda: self._flow(
                Challenge("bearer"), deadline, None))
            tokens = (self._load().get("tokens") or {})
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
        if kind == "DPoP" and self._dpop_key is not None:
            headers["DPoP"] = self._dpop_key.proof(method, url, access_token=token,
                                                   nonce=self._nonces.get("rs"))
        return headers

    def token_headers(self, method: str, url: str,
                      deadline: float | None = None) -> dict[str, str]:
        """:meth:`headers`, running the flow first when there is no token yet (for callers
        that cannot answer a 401 themselves, such as a relay). Raises AuthError."""
        if not (self._load().get("tokens") or {}).get("access_token"):
            self.login(timeout=None if deadline is None else _left(deadline, FLOW_TIMEOUT))
            return self._compose(self._load().get("tokens") or {}, method, url)
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
            self._nonces["rs"] = nonce
            attempt.nonces += 1
            return True
        if response.status_code == 403:
            return found.error == "insufficient_scope" and self._step_up(found, attempt,
                                                                          deadline)
        if attempt.flows:
            return False
        return self._run_once(attempt, deadline,
                              lambda: self._reauthorize(found, attempt, deadline))

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
        granted = set(((self._load().get("tokens") or {}).get("scope") or "").split())
        union = self._requested | granted | wanted
        if attempt.step_ups or not wanted or union <= (self._requested | granted):
            return False
        attempt.step_ups += 1
        scope = " ".join(sorted(union))
        return self._run_once(attempt, deadline, lambda: self._flow(found, deadline, scope))

    # -- flows ---------------------------------------------------------------------------

    def _refresh_expiring(self, deadline: float | None) -> None:
        """Refresh the expiring token (the flow lock is held), unless another thread or
        process did while this one waited: under the store's lock the record is read again,
        and a refresh token is never redeemed twice (servers that rotate them revoke the
        whole grant when one is reused)."""
        with ExitStack() as stack:
            self._hold_store(stack, deadline)
            tokens = self._load(again=True).get("tokens") or {}
            if _expiring(tokens) and tokens.get("refresh_token"):
                self._try_refresh(deadline)

    def _registered(self, record: dict) -> bool:
        """Whether the record's client came from dynamic registration (so it may be made
        again), not from configuration, a client ID metadata document or a grant."""
        stored = record.get("client") or {}
        return bool(stored.get("client_id")) and self.grant is None and not self.client_id \
            and stored.get("client_id") != self.client_metadata_url

    def _try_refresh(self, deadline: float | None) -> bool:
        """Redeem the stored refresh token: True when it gave a token. A refused one is
        dropped (the caller authorizes again); so is a registered client the server answers
        ``invalid_client`` for. Raises AuthError for ``invalid_client`` with a configured
        client, which a new flow would not cure."""
        record = self._load()
        tokens = record.get("tokens") or {}
        if not tokens.get("refresh_token") or not record.get("token_endpoint"):
            return False
        disc = Discovered(record.get("resource") or self._key(), record.get("issuer", ""),
                          {"token_endpoint": record["token_endpoint"]})
        client = Client.from_record(record["client"]) if record.get("client") else None
        if self.grant is not None:
            client = self.grant.client({})
        try:
            fresh = refresh(self._endpoint(disc), client, tokens, deadline=deadline)
        except AuthError as exc:
            if exc.error == "invalid_client" and not self._registered(record):
                # the tokens are kept: a new flow would fail the same way (the code is
                # redeemed with the same client), and a corrected secret may still use them
                self._set("error", str(exc))
                raise
            if exc.error == "invalid_client":  # the server forgot the registration
                log.info("%s: the authorization server no longer knows the registered client; "
                         "registering again", self.name)
                record = {k: v for k, v in record.items() if k != "client"}
            else:
                log.info("%s: refreshing the token failed (%s); authorizing again", self.name,
                         exc.error or exc.step)
            self._save({**record, "tokens": None})
            return False
        self._save({**record, "tokens": fresh})
        self._set("authorized", None)
        return True

    def _reauthorize(self, found: Challenge, attempt: Attempt, deadline: float | None) -> None:
        with ExitStack() as stack:
            if (self._load().get("tokens") or {}).get("refresh_token"):
                self._hold_store(stack, deadline)  # a refresh may follow: one at a time
            stored = (self._load(again=True).get("tokens") or {}).get("access_token")
            if stored and stored != attempt.sent:
                return  # a token the request did not carry yet (another process's): try it
            if self._try_refresh(deadline):
                return
        self._flow(found, deadline, None)

    def _endpoint(self, disc: Discovered) -> TokenEndpoint:
        key = None
        if self.dpop:
            if self._dpop_key is None:
                from .jose import DPoPKey
                self._dpop_key = DPoPKey()
            key = self._dpop_key
        return TokenEndpoint(self.http, disc, key, self._nonces)

    def _discover(self, found: Challenge, deadline: float | None) -> Discovered:
        issuer = (self._load() or {}).get("issuer")
        disc = discover(self.http, self._key(), header_url=found.resource_metadata,
                        issuer=issuer, metadata_url=self.auth_server_metadata_url,
                        deadline=deadline)
        self._disc = disc
        return disc

    def _scope(self, found: Challenge, disc: Discovered, person: bool) -> str | None:
        if found.scope:
            scopes = found.scope.split()
        elif self.scopes:
            scopes = list(self.scopes)
        else:
            scopes = list(disc.scopes_supported)
        as_scopes = disc.metadata.get("scopes_supported") or []
        if person and scopes and "offline_access" in as_scopes and "offline_access" not in scopes:
            scopes.append("offline_access")
        return " ".join(dict.fromkeys(scopes)) or None

    def _flow(self, found: Challenge, deadline: float | None, scope: str | None) -> None:
        deadline = deadline if deadline is not None else time.monotonic() + FLOW_TIMEOUT
        if self.grant is None and self.consent is None:
            raise self._needs_person()  # nothing to discover for: nobody can approve
        disc = self._discover(found, deadline)
        record = dict(self._load())
        if record.get("issuer") != disc.issuer:  # a new AS: nothing of the old one is reused
            record = {}
        base = {"issuer": disc.issuer, "resource": disc.resource,
                "token_endpoint": disc.endpoint("token_endpoint")}
        endpoint = self._endpoint(disc)
        if self.grant is not None:
            scope = scope or self._scope(found, disc, person=False)
            tokens = self.grant.fetch(endpoint, scope, deadline=deadline)
            self._requested |= set((scope or "").split())
            self._save({**record, **base, "tokens": tokens})
            return
        consent = self.consent
        assert consent is not None  # no grant, so a consent: checked at the top
        scope = scope or self._scope(found, disc, person=True)
        # the device grant when the consent asks for it and the server offers it
        device = consent if isinstance(consent, DeviceConsent) and disc.endpoint(
            "device_authorization_endpoint") else None
        grants = (*CODE_GRANTS, DEVICE_GRANT) if device is not None else CODE_GRANTS
        redirect_uri = consent.prepare(self.callback_port)
        try:
            client, kept = self._identity(disc, record, redirect_uri, scope, deadline, grants)
            while True:
                record = {**record, **base, "client": client.record()}
                self._save(record)
                self._requested |= set((scope or "").split())
                try:
                    if device is not None:
                        tokens = device_code(endpoint, client, device.show, scope,
                                             timeout=device.timeout)
                    else:
                        tokens = authorization_code(endpoint, client, consent, redirect_uri,
                                                    scope, deadline=deadline)
                    break
                except AuthError as exc:
                    if not (kept and exc.error == "invalid_client"):
                        raise
                # a registration kept from an earlier run that the server has forgotten (or
                # whose secret expired): register again, once, and ask for consent anew
                log.info("%s: the authorization server no longer knows the registered client; "
                         "registering again", self.name)
                redirect_uri = consent.prepare(self.callback_port)
                client, kept = register(self.http, disc, redirect_uri,
                                        client_name=self.client_name, scope=scope,
                                        deadline=deadline, grant_types=grants), False
        finally:
            consent.close()
        self._save({**record, "tokens": tokens})

    def _identity(self, disc: Discovered, record: dict, redirect_uri: str,
                  scope: str | None, deadline: float | None,
                  grants: tuple[str, ...] = CODE_GRANTS) -> tuple[Client, bool]:
        """The client and whether it is a registration kept from an earlier run:
        pre-registered, else a client ID metadata document, else the stored registration
        (same issuer and redirect URI, registered for ``grants``), else dynamic
        registration."""
        if self.client_id:
            return pre_registered(self.client_id, self.client_secret, disc.metadata), False
        if self.client_metadata_url and disc.metadata.get(
                "client_id_metadata_document_supported") is True:
            return Client(self.client_metadata_url, None, "none", [redirect_uri]), False
        stored = record.get("client")
        if stored and redirect_uri in (stored.get("redirect_uris") or []):
            client = Client.from_record(stored)
            if set(grants) <= set(client.grant_types):
                return client, True
        return register(self.http, disc, redirect_uri, client_name=self.client_name,
                        scope=scope, deadline=deadline, grant_types=grants), False

    # -- what people call ----------------------------------------------------------------

    def login(self, timeout: float | None = None) -> None:
        """Run the whole flow now (blocks until a token came, at most ``timeout`` s, default
        10 minutes). Raises AuthError; ConsentRequired when no consent handler is set."""
        bound = seconds(timeout, FLOW_TIMEOUT, method="OAuth.login")
        attempt = self.begin()
        deadline = time.monotonic() + bound
        self._run_once(attempt, deadline, lambda: self._flow(Challenge("bearer"), deadline,
                                                             None))

    def logout(self) -> None:
        """Forget this server's registration and tokens (in the store too)."""
        with self._state_lock:
            self._record = {}
        self.store.delete(self._key())
        self._requested.clear()
        self._set("needs-auth", "logged out")


def _expiring(tokens: dict) -> bool:
    expires = tokens.get("expires_at")
    return bool(tokens.get("access_token") and expires and expires - REFRESH_MARGIN < time.time())


def _left(deadline: float | None, cap: float) -> float:
    if deadline is None:
        return cap
    return max(0.0, deadline - time.monotonic())
