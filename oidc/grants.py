"""The token endpoint's work: authenticate the client, run the grant, emit the event.

Grants are a registry (``GRANT_TYPES``: grant_type -> ``Grant``) filled from ``OidcConfig.ready()``;
this module registers the four of RFC 6749, and the device, token-exchange, JWT-bearer and CIBA
grants register from their own modules with ``register_grant``. A grant behind a server feature
(``realms.features``) is unsupported_grant_type while the feature is off, and absent from discovery.

Grants here: ``authorization_code`` (PKCE, spec 1 §3-§4), ``refresh_token`` (rotation; with the
realm's Revoke Refresh Token, single use with reuse detection that ends the session),
``client_credentials`` (the client's service account) and ``password`` (only with Direct Access
Grants). ``scope=offline_access`` yields an offline token backed by an offline session.

Database writes that must survive a failed request (a redeemed code, a session ended on
refresh-token reuse) are committed before the error is raised; everything a successful grant
writes commits together with its event.
"""
import contextlib
from dataclasses import dataclass, field

from django.db import transaction

from realms import features
from realms.audit.events import emit
from realms.http import admission
from realms.models import ClientSession, UserSession
from realms.registry import Registry
from realms.signin import engine, flows
from realms.signin.flows import SSO_AUTH
from realms.sso import sessions

from . import binding, client_policies, resource_indicators, tokens
from .client_auth import authenticate
from .codes import redeem_code
from .errors import (
    InvalidGrant,
    InvalidRequest,
    InvalidScope,
    OAuthError,
    OidcError,
    TooManyRequests,
    UnauthorizedClient,
    UnsupportedGrantType,
)
from .realm_cache import PROTOCOL


@dataclass(frozen=True)
class Grant:
    """A grant type: ``handler(exchange) -> body`` runs it once the client is authenticated;
    ``event`` is the user event of its success (``event + "_ERROR"`` of its failure); ``feature``
    the server feature it needs, if any; ``bearer(exchange, token) -> client config``, for a
    grant that lets a client present an access token it was issued instead of authenticating
    (Keycloak's UMA grant for public clients)."""

    handler: object
    event: str
    feature: str = ""
    bearer: object = None

    def available(self):
        return not self.feature or features.enabled(self.feature)


GRANT_TYPES = Registry("OAuth 2.0 grant types")


def register_grant(grant_type, handler, event, feature="", bearer=None):
    GRANT_TYPES.add(grant_type, Grant(handler, event, feature, bearer))


def supported_grant_types():
    """The grant types the token endpoint answers now (discovery's ``grant_types_supported``)."""
    return sorted(name for name, grant in GRANT_TYPES.items() if grant.available())


@dataclass
class Exchange:
    """One token request as it goes: what the error event and the CORS headers need."""

    realm_config: object
    issuer: str
    params: object
    ip_address: str
    client_config: object = None
    auth_method: str = ""
    user_id: str = ""
    session_id: str = ""
    details: dict = field(default_factory=dict)
    request: object = None
    binding: object = field(default_factory=binding.Binding)  # what the issued tokens are bound to
    bearer_subject: object = None  # what a grant's ``bearer`` learnt of the access token presented

    @property
    def realm(self):
        return self.realm_config.realm


def token_endpoint_url(issuer):
    return f"{issuer}/protocol/openid-connect/token"


def handle_token_request(request, exchange: Exchange) -> dict:
    """The JSON body of the token response; raises OAuthError (after emitting the error event)."""
    params = exchange.params
    grant_type = params.get("grant_type", "")
    if not grant_type:
        raise InvalidRequest("Missing form parameter: grant_type")
    grant = GRANT_TYPES.get(grant_type)
    if grant is None or not grant.available():
        raise UnsupportedGrantType(f"Unsupported grant_type {grant_type[:64]}")
    event_type = grant.event
    exchange.details["grant_type"] = grant_type
    exchange.request = request
    try:
        admitted(request, exchange.realm)
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if grant.bearer is not None and header[:7].lower() == "bearer ":
            exchange.client_config, exchange.auth_method = grant.bearer(exchange, header[7:].strip()), "bearer"
        else:
            exchange.client_config, exchange.auth_method = authenticate(
                request, exchange.realm_config, params,
                audiences=(exchange.issuer, token_endpoint_url(exchange.issuer)),
            )
        admitted(request, exchange.realm, exchange.client_config.client_id)
        exchange.details["client_auth_method"] = exchange.auth_method
        exchange.binding = binding.token_request(request, exchange)
        client_policies.enforce(client_policies.TOKEN_REQUEST, exchange.realm_config, exchange.client_config,
                                request=request, params=params, exchange=exchange)
        body = grant.handler(exchange)
    except OAuthError as exc:
        if exc.record_event:
            emit_event(exchange, event_type + "_ERROR", error=exc.event_error)
        raise
    return body


def admitted(request, realm, client_id=None):
    """The realm's admission limits: every request by its address, then the authenticated client's."""
    try:
        admission.admit(request, realm, admission.TOKEN, client_id=client_id)
    except admission.RateLimited as exc:
        raise TooManyRequests(exc.retry_after) from None


def emit_event(exchange, event_type, error=""):
    emit(exchange.realm, event_type,
         client_id=exchange.client_config.client_id if exchange.client_config else exchange.params.get("client_id", ""),
         user_id=exchange.user_id, session_id=exchange.session_id, ip_address=exchange.ip_address,
         error=error, details=exchange.details)


def token_context(exchange, user, scopes, openid, user_session=None, client_session=None, nonce="", roles=None):
    """The TokenContext of a grant's answer: the user's roles the client may see given its scopes."""
    config = exchange.client_config
    user_roles = roles if roles is not None else exchange.realm_config.user_roles(user)
    acr = tokens.session_acr(client_session) if user_session is not None else None
    bound = exchange.binding
    return tokens.TokenContext(
        realm=exchange.realm, client_config=config, user=user, issuer=exchange.issuer, scopes=scopes,
        openid=openid, user_session=user_session, client_session=client_session, nonce=nonce, acr=acr,
        roles=tokens.restricted_roles(config, user_roles, scopes),
        cnf=bound.cnf, refresh_cnf=bound.refresh_cnf, token_type=bound.token_type,
    )


def succeed(exchange, ctx, event_type, body, at_claims):
    """Record what was issued (and the newest refresh token when the realm revokes them), emit
    the grant's event, return the body."""
    exchange.details.update(token_id=at_claims["jti"], scope=ctx.scope)
    if ctx.refresh_claims:
        exchange.details.update(refresh_token_id=ctx.refresh_claims["jti"],
                                refresh_token_type=ctx.refresh_claims["typ"])
        if exchange.realm.revoke_refresh_token:
            # Remember the newest refresh token: only it (and, within refresh_token_max_reuse,
            # the one just used) may be presented next.
            notes = dict(ctx.client_session.notes or {})
            notes["rt_latest"] = ctx.refresh_claims["jti"]
            ctx.client_session.notes = notes
            ClientSession.objects.filter(pk=ctx.client_session.pk).update(notes=notes)
    emit_event(exchange, event_type)
    return body


def move_offline(exchange, ctx):
    """Move the context onto a new offline session (scope offline_access), if allowed."""
    if not tokens.has_offline_access(ctx):
        raise InvalidScope("Offline tokens not allowed for the user or client", event_error="not_allowed")
    online = ctx.user_session
    offline = sessions.create_user_session(exchange.realm, ctx.user, ip_address=online.ip_address,
                                           auth_methods=online.auth_methods, offline=True)
    # auth_time stays the sign-in's, not the offline session's creation.
    UserSession.objects.filter(pk=offline.pk).update(auth_time=online.auth_time)
    offline.auth_time = online.auth_time
    client_session = sessions.get_or_create_client_session(
        offline, ctx.client, redirect_uri=ctx.client_session.redirect_uri if ctx.client_session else "",
        scope=ctx.scope)
    kept = {k: v for k, v in (ctx.client_session.notes if ctx.client_session else {}).items() if k in (SSO_AUTH, "acr")}
    if kept:
        # Refreshed offline tokens keep the acr of the sign-in they came from.
        client_session.notes = {**client_session.notes, **kept}
        client_session.save(update_fields=["notes"])
    ctx.user_session, ctx.client_session = offline, client_session
    exchange.session_id = offline.pk


def session_tokens(exchange, event_type, user, scopes, openid, user_session, client_session, nonce=""):
    """The token response of a grant redeeming a sign-in already made (the device code, CIBA's
    auth_req_id): the session's client session touched, an offline session when asked for. Only
    an offline session needs a transaction (its rows and the tokens bound to them)."""
    offline = wants_offline(scopes)
    with transaction.atomic() if offline else contextlib.nullcontext():
        ctx = token_context(exchange, user, scopes, openid, user_session, client_session, nonce=nonce)
        if offline:
            move_offline(exchange, ctx)
        sessions.touch(user_session, client_session)
        body, at_claims = tokens.token_response(ctx)
        return succeed(exchange, ctx, event_type, body, at_claims)


def wants_offline(scopes):
    return any(s.name == tokens.OFFLINE_ACCESS for s in scopes)


# authorization_code --------------------------------------------------------------------------

def authorization_code(exchange):
    params = exchange.params
    client = exchange.client_config.client
    if not client.standard_flow_enabled:
        raise UnauthorizedClient("Client not allowed to exchange code", event_error="not_allowed")
    # Committed on its own: a failed exchange must still burn the code.
    row = redeem_code(client=client, code=params.get("code", ""), redirect_uri=params.get("redirect_uri", ""),
                      code_verifier=params.get("code_verifier", ""))
    # RFC 9449 §10: a code bound to a DPoP key is redeemed only with a proof of that key.
    if row.dpop_jkt and exchange.binding.cnf.get("jkt") != row.dpop_jkt:
        raise InvalidGrant("DPoP proof public key thumbprint does not match dpop_jkt", event_error="invalid_code")
    exchange.session_id = row.user_session_id
    user_session = sessions.get_valid_session(exchange.realm, row.user_session_id)
    if user_session is None:
        raise InvalidGrant("Session not active", event_error="user_session_not_found")
    user = user_session.user
    exchange.user_id = user.pk
    client_session = sessions.client_session_of(user_session, client)
    if client_session is None:
        raise InvalidGrant("Session not active", event_error="invalid_code")
    scopes, openid = tokens.resolve_scopes(exchange.client_config, row.scope)
    offline = wants_offline(scopes)
    # Only an offline session (its rows and the tokens bound to them) needs a transaction;
    # without one the exchange writes at most the idle timers, so it skips BEGIN/COMMIT.
    with transaction.atomic() if offline else contextlib.nullcontext():
        ctx = token_context(exchange, user, scopes, openid, user_session, client_session, nonce=row.nonce)
        resource_indicators.apply(exchange, ctx, granted=row.resource.split())
        if offline:
            move_offline(exchange, ctx)
        sessions.touch(user_session, client_session)
        body, at_claims = tokens.token_response(ctx)
        exchange.details["code_id"] = row.digest[:16]
        return succeed(exchange, ctx, "CODE_TO_TOKEN", body, at_claims)


# refresh_token -------------------------------------------------------------------------------

class _ReuseDetected(OidcError):
    pass


def refresh_token_claims(realm, token, issuer, client_id, *, leeway=0):
    """The claims of a refresh (or offline) token this client was given, or InvalidGrant with
    Keycloak's descriptions (the refresh grant and the logout by refresh token share them)."""
    try:
        claims = tokens.decode(realm, token, issuer, leeway=leeway)
    except tokens.TokenError:
        raise InvalidGrant("Invalid refresh token", event_error="invalid_token") from None
    if claims.get("typ") not in (tokens.TYP_REFRESH, tokens.TYP_OFFLINE):
        raise InvalidGrant("Invalid refresh token", event_error="invalid_token")
    if claims.get("azp") != client_id:
        raise InvalidGrant("Invalid refresh token. Token client and authorized client don't match",
                           event_error="invalid_token")
    return claims


def refresh_token(exchange):
    params = exchange.params
    realm = exchange.realm
    client = exchange.client_config.client
    token = params.get("refresh_token", "")
    if not token:
        raise InvalidRequest("Missing parameter: refresh_token")
    claims = refresh_token_claims(realm, token, exchange.issuer, client.client_id)
    binding.check_refresh(claims, exchange.binding)
    typ = claims["typ"]
    exchange.user_id, exchange.session_id = claims.get("sub", ""), claims.get("sid", "")
    user_session, client_session = sessions.session_with_client(realm, claims.get("sid"), client)
    if (user_session is None or user_session.offline != (typ == tokens.TYP_OFFLINE)
            or exchange.client_config.subject(user_session.user_id) != claims.get("sub")):
        raise InvalidGrant("Session not active" if typ == tokens.TYP_REFRESH else "Offline session not active",
                           event_error="invalid_token")
    user = user_session.user
    if client_session is None:
        raise InvalidGrant("Session doesn't have required client", event_error="invalid_token")
    if not sessions.client_session_valid(client_session):
        raise InvalidGrant("Session not active", event_error="invalid_token")
    scopes, openid = _refresh_scopes(exchange.client_config, claims.get("scope", ""), params.get("scope"))
    # Only reuse detection needs a transaction (a row lock); without it a refresh writes at most
    # the idle timer, so it skips BEGIN/COMMIT.
    atomic = transaction.atomic() if realm.revoke_refresh_token else contextlib.nullcontext()
    try:
        with atomic:
            if realm.revoke_refresh_token:
                client_session = _check_reuse(client_session, claims["jti"], realm.refresh_token_max_reuse)
            ctx = token_context(exchange, user, scopes, openid, user_session, client_session)
            resource_indicators.apply(exchange, ctx, granted=claims.get(resource_indicators.RESOURCE) or [])
            sessions.touch(user_session, client_session)
            body, at_claims = tokens.token_response(ctx)
            return succeed(exchange, ctx, "REFRESH_TOKEN", body, at_claims)
    except _ReuseDetected:
        # A refresh token used twice means two holders: end the session for both (committed
        # before the error goes out).
        sessions.end_session(user_session, reason="refresh_token_reuse")
        raise InvalidGrant("Maximum allowed refresh token reuse exceeded", event_error="invalid_token") from None


def _refresh_scopes(config, granted, requested):
    """A refresh may narrow the scope (RFC 6749 §6), never widen it."""
    granted_names = set(granted.split())
    if requested:
        asked = requested.split()
        if not set(asked) <= granted_names:
            raise InvalidScope("Invalid scopes: " + requested)
        granted = " ".join(asked)
    return tokens.resolve_scopes(config, granted)


def _check_reuse(client_session, jti, max_reuse):
    """Keycloak's refresh-token reuse rules on the locked client session row.

    ``rt_latest`` is the newest refresh token handed out; ``rt_current``/``rt_uses`` the token
    being used and how often. Presenting the newest token makes it current; presenting the
    current one again counts a reuse (allowed ``max_reuse`` times); anything else is stale.
    The notes are the locked row's: the cached copy's ``rt_*`` notes may lag, and are not read."""
    locked = ClientSession.objects.select_for_update().filter(pk=client_session.pk).first()
    if locked is None:  # ended since the copy was read
        raise InvalidGrant("Session doesn't have required client", event_error="invalid_token")
    notes = dict(locked.notes or {})
    if jti == notes.get("rt_latest") and jti != notes.get("rt_current"):
        notes["rt_current"], notes["rt_uses"] = jti, 0
    elif jti != notes.get("rt_current"):
        raise _ReuseDetected()
    if notes.get("rt_uses", 0) > max_reuse:
        raise _ReuseDetected()
    notes["rt_uses"] = notes.get("rt_uses", 0) + 1
    client_session.notes = notes
    ClientSession.objects.filter(pk=client_session.pk).update(notes=notes)
    return client_session


# client_credentials --------------------------------------------------------------------------

def client_credentials(exchange):
    config = exchange.client_config
    client = config.client
    if client.public_client or not client.service_accounts_enabled:
        raise UnauthorizedClient("Client not enabled to retrieve service account", event_error="invalid_client")
    account = config.service_account()
    if account is None:
        raise UnauthorizedClient("Client not enabled to retrieve service account", event_error="invalid_client")
    user, roles = account
    exchange.user_id = user.pk
    if not user.enabled:
        raise InvalidRequest(f"User '{user.username}' disabled", event_error="user_disabled")
    scopes, _ = tokens.resolve_scopes(config, exchange.params.get("scope", ""))
    # No session: client-credentials tokens are transient (Keycloak's default), no refresh token.
    ctx = token_context(exchange, user, scopes, False, roles=roles)
    resource_indicators.apply(exchange, ctx)
    body, at_claims = tokens.token_response(ctx, with_refresh=False)
    return succeed(exchange, ctx, "CLIENT_LOGIN", body, at_claims)


# password ------------------------------------------------------------------------------------

def password(exchange):
    params = exchange.params
    realm = exchange.realm
    client = exchange.client_config.client
    if not client.direct_access_grants_enabled:
        raise UnauthorizedClient("Client not allowed for direct access grants", event_error="not_allowed")
    exchange.details["username"] = params.get("username", "")[:255]
    scopes, openid = tokens.resolve_scopes(exchange.client_config, params.get("scope", ""))
    # The realm's (or the client's) direct-grant flow identifies the user; a step that would
    # show a page, or a pending required action, is an invalid_grant as in Keycloak.
    ctx, outcome = engine.run_direct_grant(exchange.request, realm, client, params, protocol=PROTOCOL)
    user = ctx.user
    exchange.user_id = user.pk if user is not None else ""
    if outcome.kind != flows.Outcome.SUCCESS:
        raise InvalidGrant(outcome.description, event_error=outcome.error)
    with transaction.atomic():
        user_session = sessions.create_user_session(realm, user, ip_address=exchange.ip_address,
                                                    auth_methods=ctx.auth_session.auth_methods)
        client_session = sessions.get_or_create_client_session(user_session, client, scope=params.get("scope", ""))
        exchange.session_id = user_session.pk
        ctx = token_context(exchange, user, scopes, openid, user_session, client_session)
        if wants_offline(scopes):
            move_offline(exchange, ctx)
        body, at_claims = tokens.token_response(ctx)
        return succeed(exchange, ctx, "LOGIN", body, at_claims)


def register():
    register_grant("authorization_code", authorization_code, "CODE_TO_TOKEN")
    register_grant("refresh_token", refresh_token, "REFRESH_TOKEN")
    register_grant("client_credentials", client_credentials, "CLIENT_LOGIN")
    register_grant("password", password, "LOGIN")
