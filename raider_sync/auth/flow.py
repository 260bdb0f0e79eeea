"""Getting a token for one server from its authorization server: the flow and the refresh.

:class:`TokenFlow` is the part of an :class:`~raider_sync.auth.OAuth` that talks to the
authorization server. :meth:`~TokenFlow.run` is the whole flow: discovery, the scope, the
client's identity (pre-registered, a client ID metadata document, a kept or a new dynamic
registration), then a grant without a person or a person's consent (the code or the device
grant), and the token saved in the record. :meth:`~TokenFlow.refresh_expiring` and
:meth:`~TokenFlow.try_refresh` redeem the stored refresh token, once however many threads and
processes share the store. It holds what the flow keeps between requests: the DPoP key, the
DPoP nonces and the scopes requested so far.

Everything here blocks on HTTP (each request bounded by the deadline given, a flow without
one by :data:`FLOW_TIMEOUT`) and on a person's consent. Raised: AuthError, ConsentRequired
when a person is needed and nobody can approve. Callers serialise it (OAuth's flow lock).
"""
from __future__ import annotations

import logging
import time
from contextlib import ExitStack
from typing import Any, Callable

from ..errors import AuthError, ConsentRequired
from .consent import DeviceConsent
from .discovery import Discovered, discover
from .grants import authorization_code, device_code, refresh
from .record import StoredRecord, expiring, left
from .tokens import CODE_GRANTS, DEVICE_GRANT, Client, TokenEndpoint, pre_registered, register
from .wire import Challenge

log = logging.getLogger("raider_sync.auth")

#: seconds a flow may take when the request that started it has no deadline
FLOW_TIMEOUT = 600.0


class TokenFlow:
    """The flow and the refresh of one server. ``owner`` is the OAuth whose settings it reads
    at each use (``grant``, ``consent``, ``client_id``, ``scopes``, ``dpop``, ``http``, ...: they
    may be set after it was made); ``record`` is where tokens go; ``set_status(status,
    reason)`` is told what a refresh did to the authorization."""

    def __init__(self, owner: Any, *, record: StoredRecord,
                 set_status: Callable[[str, str | None], None]):
        self.owner = owner
        self.record = record
        self._set_status = set_status
        self.disc: Discovered | None = None
        self.dpop_key: Any = None
        self.nonces: dict[str, str] = {}
        self.requested: set[str] = set()

    def needs_person(self) -> ConsentRequired:
        name = self.owner.name or self.owner.server_url
        return ConsentRequired(
            f"consent: MCP server {name!r} needs a person to authorize access; run "
            f"`raider-sync login {name}` (or call login() with a consent handler)",
            step="consent")

    # -- refresh -------------------------------------------------------------------------

    def refresh_expiring(self, deadline: float | None) -> None:
        """Refresh the expiring token (the flow lock is held), unless another thread or
        process did while this one waited: under the store's lock the record is read again,
        and a refresh token is never redeemed twice (servers that rotate them revoke the
        whole grant when one is reused)."""
        with ExitStack() as stack:
            self.record.hold(stack, left(deadline, self.owner.timeout))
            tokens = self.record.tokens(again=True)
            if expiring(tokens) and tokens.get("refresh_token"):
                self.try_refresh(deadline)

    def _registered(self, record: dict) -> bool:
        """Whether the record's client came from dynamic registration (so it may be made
        again), not from configuration, a client ID metadata document or a grant."""
        stored = record.get("client") or {}
        return bool(stored.get("client_id")) and self.owner.grant is None \
            and not self.owner.client_id and stored.get("client_id") != self.owner.client_metadata_url

    def try_refresh(self, deadline: float | None) -> bool:
        """Redeem the stored refresh token: True when it gave a token. A refused one is
        dropped (the caller authorizes again); so is a registered client the server answers
        ``invalid_client`` for. Raises AuthError for ``invalid_client`` with a configured
        client, which a new flow would not cure."""
        record = self.record.load()
        tokens = record.get("tokens") or {}
        if not tokens.get("refresh_token") or not record.get("token_endpoint"):
            return False
        disc = Discovered(record.get("resource") or self.record.key(), record.get("issuer", ""),
                          {"token_endpoint": record["token_endpoint"]})
        client = Client.from_record(record["client"]) if record.get("client") else None
        if self.owner.grant is not None:
            client = self.owner.grant.client({})
        try:
            fresh = refresh(self.endpoint(disc), client, tokens, deadline=deadline)
        except AuthError as exc:
            if exc.error == "invalid_client" and not self._registered(record):
                # the tokens are kept: a new flow would fail the same way (the code is
                # redeemed with the same client), and a corrected secret may still use them
                self._set_status("error", str(exc))
                raise
            if exc.error == "invalid_client":  # the server forgot the registration
                log.info("%s: the authorization server no longer knows the registered client; "
                         "registering again", self.owner.name)
                record = {k: v for k, v in record.items() if k != "client"}
            else:
                log.info("%s: refreshing the token failed (%s); authorizing again",
                         self.owner.name, exc.error or exc.step)
            self.record.save({**record, "tokens": None})
            return False
        self.record.save({**record, "tokens": fresh})
        self._set_status("authorized", None)
        return True

    def reauthorize(self, found: Challenge, sent: str | None, deadline: float | None) -> None:
        """After a 401 to a request that carried the token ``sent``: a token stored since
        (by another process) is tried as it is, else the refresh token, else the whole flow."""
        with ExitStack() as stack:
            if self.record.tokens().get("refresh_token"):
                # a refresh may follow: one at a time
                self.record.hold(stack, left(deadline, self.owner.timeout))
            stored = self.record.tokens(again=True).get("access_token")
            if stored and stored != sent:
                return  # a token the request did not carry yet (another process's): try it
            if self.try_refresh(deadline):
                return
        self.run(found, deadline, None)

    # -- the flow ------------------------------------------------------------------------

    def endpoint(self, disc: Discovered) -> TokenEndpoint:
        key = None
        if self.owner.dpop:
            if self.dpop_key is None:
                from .jose import DPoPKey
                self.dpop_key = DPoPKey()
            key = self.dpop_key
        return TokenEndpoint(self.owner.http, disc, key, self.nonces)

    def _discover(self, found: Challenge, deadline: float | None) -> Discovered:
        issuer = (self.record.load() or {}).get("issuer")
        disc = discover(self.owner.http, self.record.key(), header_url=found.resource_metadata,
                        issuer=issuer, metadata_url=self.owner.auth_server_metadata_url,
                        deadline=deadline)
        self.disc = disc
        return disc

    def _scope(self, found: Challenge, disc: Discovered, person: bool) -> str | None:
        if found.scope:
            scopes = found.scope.split()
        elif self.owner.scopes:
            scopes = list(self.owner.scopes)
        else:
            scopes = list(disc.scopes_supported)
        as_scopes = disc.metadata.get("scopes_supported") or []
        if person and scopes and "offline_access" in as_scopes and "offline_access" not in scopes:
            scopes.append("offline_access")
        return " ".join(dict.fromkeys(scopes)) or None

    def run(self, found: Challenge, deadline: float | None, scope: str | None) -> None:
        """The whole flow for the challenge ``found`` (``scope``: the scopes of a step-up);
        the token it gets is saved in the record."""
        deadline = deadline if deadline is not None else time.monotonic() + FLOW_TIMEOUT
        owner = self.owner
        if owner.grant is None and owner.consent is None:
            raise self.needs_person()  # nothing to discover for: nobody can approve
        disc = self._discover(found, deadline)
        record = dict(self.record.load())
        if record.get("issuer") != disc.issuer:  # a new AS: nothing of the old one is reused
            record = {}
        base = {"issuer": disc.issuer, "resource": disc.resource,
                "token_endpoint": disc.endpoint("token_endpoint")}
        endpoint = self.endpoint(disc)
        if owner.grant is not None:
            scope = scope or self._scope(found, disc, person=False)
            tokens = owner.grant.fetch(endpoint, scope, deadline=deadline)
            self.requested |= set((scope or "").split())
            self.record.save({**record, **base, "tokens": tokens})
            return
        consent = owner.consent
        assert consent is not None  # no grant, so a consent: checked at the top
        scope = scope or self._scope(found, disc, person=True)
        # the device grant when the consent asks for it and the server offers it
        device = consent if isinstance(consent, DeviceConsent) and disc.endpoint(
            "device_authorization_endpoint") else None
        grants = (*CODE_GRANTS, DEVICE_GRANT) if device is not None else CODE_GRANTS
        redirect_uri = consent.prepare(owner.callback_port)
        try:
            client, kept = self._identity(disc, record, redirect_uri, scope, deadline, grants)
            while True:
                record = {**record, **base, "client": client.record()}
                self.record.save(record)
                self.requested |= set((scope or "").split())
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
                         "registering again", owner.name)
                redirect_uri = consent.prepare(owner.callback_port)
                client, kept = register(owner.http, disc, redirect_uri,
                                        client_name=owner.client_name, scope=scope,
                                        deadline=deadline, grant_types=grants), False
        finally:
            consent.close()
        self.record.save({**record, "tokens": tokens})

    def _identity(self, disc: Discovered, record: dict, redirect_uri: str,
                  scope: str | None, deadline: float | None,
                  grants: tuple[str, ...] = CODE_GRANTS) -> tuple[Client, bool]:
        """The client and whether it is a registration kept from an earlier run:
        pre-registered, else a client ID metadata document, else the stored registration
        (same issuer and redirect URI, registered for ``grants``), else dynamic
        registration."""
        owner = self.owner
        if owner.client_id:
            return pre_registered(owner.client_id, owner.client_secret, disc.metadata), False
        if owner.client_metadata_url and disc.metadata.get(
                "client_id_metadata_document_supported") is True:
            return Client(owner.client_metadata_url, None, "none", [redirect_uri]), False
        stored = record.get("client")
        if stored and redirect_uri in (stored.get("redirect_uris") or []):
            client = Client.from_record(stored)
            if set(grants) <= set(client.grant_types):
                return client, True
        return register(owner.http, disc, redirect_uri, client_name=owner.client_name,
                        scope=scope, deadline=deadline, grant_types=grants), False
