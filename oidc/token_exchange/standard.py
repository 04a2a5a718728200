"""Standard token exchange (Keycloak 26.2+ "V2", RFC 8693 internal to internal), and delegation.

A confidential client whose attribute ``standard.token.exchange.enabled`` is "true" sends one of
this realm's live access tokens (``subject_token``) that names it as audience (or was issued to
it) and gets a token for the same user: ``audience`` (repeatable) narrows the new access token's
``aud`` to clients the user's token would reach anyway, ``scope`` picks among the requester's own
scopes, ``requested_token_type`` is an access token (default), an ID token, or a refresh token
when the client's ``standard.token.exchange.enableRefreshRequestedTokenType`` is SAME_SESSION.
The new tokens share the subject token's SSO session (the requester gets a client session in it);
a subject token without a session, or of an offline session, yields a transient token (no sid).

Delegation (``actor_token``, Keycloak's TokenExchangeDelegationProvider): the subject token's
``may_act`` must name the actor; the access token gets ``act`` (RFC 8693 §4.1), the chain so far
nested in it, and no session (transient) and no refresh token.

Every refusal is Keycloak's error, description and event error; Keycloak's ``reason`` detail.
"""
from django.db import transaction

from realms.sso import sessions

from .. import tokens
from ..errors import AccessDenied, InvalidClient, InvalidRequest, InvalidScope
from ..grants import succeed, token_context
from ..mappers import ACCESS, apply_mappers
from .common import (
    ACCESS_TOKEN,
    ID_TOKEN,
    REFRESH_ENABLED,
    REFRESH_TOKEN,
    SAME_SESSION,
    SAML2,
    audiences,
    live_access_token,
    refuse,
    remember_client_session,
    standard_enabled,
)

EVENT = "TOKEN_EXCHANGE"


def unsupported_reason(exchange):
    """Why standard exchange does not take this request (Keycloak's supports()), or None."""
    params = exchange.params
    for name in ("requested_subject", "requested_issuer", "subject_issuer"):
        if params.get(name) is not None:
            return f"Parameter '{name}' is not supported for standard token exchange"
    if not standard_enabled(exchange.client_config.client):
        return "Standard token exchange is not enabled for the requested client"
    if params.get("subject_token") is None:
        return "Parameter 'subject_token' required for standard token exchange"
    if params.get("subject_token_type") is None:
        return "Parameter 'subject_token_type' required for standard token exchange"
    if params.get("subject_token_type") != ACCESS_TOKEN:
        return "Parameter 'subject_token' supports access tokens only"
    return None


def requested_token_type(exchange, delegation):
    asked = exchange.params.get("requested_token_type")
    if asked is None or asked == ACCESS_TOKEN:
        return ACCESS_TOKEN
    attributes = exchange.client_config.client.attributes or {}
    if not delegation:
        if asked in (ID_TOKEN, SAML2):
            return asked
        if (asked == REFRESH_TOKEN and attributes.get("use.refresh.tokens", "true") != "false"
                and attributes.get(REFRESH_ENABLED, "NO") == SAME_SESSION):
            return asked
    refuse(exchange, InvalidRequest, "requested_token_type unsupported", "invalid_request")


def target_audiences(exchange):
    """The clients named by ``audience`` (each must exist and be enabled)."""
    names = list(dict.fromkeys(exchange.params.getlist("audience") if hasattr(exchange.params, "getlist")
                               else [exchange.params["audience"]] if exchange.params.get("audience") else []))
    for name in names:
        config = exchange.realm_config.client(name)
        if config is None:
            exchange.details["audience"] = name
            refuse(exchange, InvalidClient, "Audience not found", "client_not_found", "audience not found", status=400)
        if not config.client.enabled:
            exchange.details["audience"] = name
            refuse(exchange, InvalidClient, "Client disabled", "client_disabled", "audience client disabled",
                   status=400)
    return names


def check_requester(exchange, claims, what="subject"):
    client = exchange.client_config.client
    if client.public_client:
        refuse(exchange, InvalidClient, "Public client is not allowed to exchange token", "invalid_client",
               status=400)
    if claims.get("azp") != client.client_id and client.client_id not in audiences(claims):
        refuse(exchange, AccessDenied, "Client is not within the token audience", "not_allowed",
               "client is not within the token audience")


def requested_scopes(exchange):
    scope = exchange.params.get("scope")
    try:
        return tokens.resolve_scopes(exchange.client_config, scope)
    except InvalidScope:
        refuse(exchange, InvalidScope, f"Invalid scopes: {scope}", "invalid_request")


def check_may_act(exchange, subject_claims, subject_user, actor_claims, actor_user):
    """Keycloak's validateMayAct: the subject token allows this actor (and client)."""
    def bad(description):
        refuse(exchange, InvalidRequest, description, "invalid_token")

    if subject_user.pk == actor_user.pk:
        bad("Actor and subject user cannot be the same user")
    may_act = subject_claims.get("may_act")
    if not isinstance(may_act, dict):
        bad("Invalid may_act claim in the subject_token")
    if may_act.get("iss") is not None and may_act.get("iss") != exchange.issuer:
        bad("Invalid issuer in the may_act claim of the subject_token")
    if not isinstance(may_act.get("sub"), str):
        bad("Invalid may_act claim in the subject_token")
    if may_act["sub"] != actor_user.pk:
        bad("Actor user is not allowed by the may_act claim inside the subject_token")
    client_id = may_act.get("client_id")
    if isinstance(client_id, str):
        if client_id != actor_claims.get("azp"):
            bad("Actor token client does not match the client_id in the may_act claim")
        if client_id != exchange.client_config.client_id:
            bad("Requesting client does not match the client_id in the may_act claim")
    return may_act


def actor(exchange, subject_claims, subject_user):
    """The ``act`` claim of a delegated token: the subject token's ``may_act`` (the actor), the
    chain so far nested (the actor token's own ``act``, else the subject token's)."""
    params = exchange.params
    if params.get("actor_token_type") != ACCESS_TOKEN:
        refuse(exchange, InvalidRequest, "Invalid actor token type", "invalid_request", "actor_token_type invalid")
    actor_claims, actor_user, actor_session, _ = live_access_token(
        exchange, params.get("actor_token", ""), description="Invalid actor token",
        reason="actor_token validation failure")
    service_client = getattr(actor_user, "service_account_client_id", None)
    exchange.details.update(actor_type="client" if service_client else "user",
                            actor=actor_claims.get("azp") if service_client else actor_user.username,
                            actor_id=actor_user.pk)
    if actor_session is not None:
        exchange.details["actor_session_id"] = actor_session.pk
    if actor_claims.get("azp") != exchange.client_config.client_id:
        if exchange.client_config.client_id not in audiences(actor_claims):
            refuse(exchange, AccessDenied, "Client is not within the token audience", "not_allowed",
                   "client is not within the token audience")
    act = dict(check_may_act(exchange, subject_claims, subject_user, actor_claims, actor_user))
    prior = actor_claims.get("act") or subject_claims.get("act")
    if isinstance(prior, dict):
        act["act"] = prior
    return act


def exchange(exchange, delegation=False):
    params = exchange.params
    if params.get("subject_token_type") != ACCESS_TOKEN:
        refuse(exchange, InvalidRequest, "Invalid subject token type", "invalid_request", "subject_token_type invalid")
    if params.get("requested_token_type") is not None:
        exchange.details["requested_token_type"] = params["requested_token_type"]
    claims, user, user_session, client_session = live_access_token(
        exchange, params.get("subject_token", ""), requester=exchange.client_config.client)
    exchange.user_id = user.pk
    exchange.details.update(username=user.username, subject_token_client_id=claims.get("azp", ""))
    if user_session is not None:
        exchange.session_id = user_session.pk
    act = actor(exchange, claims, user) if delegation else None

    token_type = requested_token_type(exchange, delegation)
    exchange.details["requested_token_type"] = token_type
    wanted = target_audiences(exchange)
    check_requester(exchange, claims)
    scopes, openid = requested_scopes(exchange)
    if token_type == SAML2:
        refuse(exchange, InvalidRequest, "requested_token_type unsupported", "invalid_request")

    online = user_session is not None and not user_session.offline and not delegation
    if token_type == REFRESH_TOKEN:
        if not online:
            refuse(exchange, InvalidRequest,
                   "Refresh token not valid as requested_token_type because creating a new session is needed",
                   "invalid_request")
        if any(s.name == tokens.OFFLINE_ACCESS for s in scopes):
            refuse(exchange, InvalidRequest, "Scope offline_access not allowed for token exchange", "invalid_request")
    if not online:
        # Transient: no sid, no refresh token, nothing stored (Keycloak's TRANSIENT session).
        user_session = None
        exchange.session_id = ""

    ctx = token_context(exchange, user, scopes, openid or token_type == ID_TOKEN, user_session)
    if wanted:
        # Only clients the user's token reaches anyway (the mappers' aud): Keycloak's
        # checkRequestedAudiences; the new token's aud is exactly the requested ones.
        reached = audiences(apply_mappers(ctx.client_config.mappers_for(ctx.scopes, ACCESS), {}, ctx))
        missing = [name for name in wanted if name not in reached]
        if missing:
            refuse(exchange, InvalidRequest, "Requested audience not available: " + ", ".join(missing),
                   "invalid_request")
        ctx.audience = wanted
    if act is not None:
        ctx.extra_claims["act"] = act

    if online:
        if client_session is None or not sessions.client_session_valid(client_session):
            # The requester's first exchange in this SSO session, or its client session is past
            # its timeouts (a token capped by it would be born expired): a new client session,
            # the one write; later exchanges only read it.
            with transaction.atomic():
                if client_session is not None:
                    sessions.end_client_session(client_session.user_session_id, client_session.client_id)
                client_session = sessions.get_or_create_client_session(user_session, ctx.client, scope=ctx.scope)
            transaction.on_commit(lambda: remember_client_session(client_session))
        sessions.touch(user_session, client_session)
        ctx.client_session = client_session
        ctx.acr = tokens.session_acr(client_session)
    body, at_claims = tokens.token_response(ctx, with_refresh=token_type == REFRESH_TOKEN)
    if token_type == ID_TOKEN:
        # RFC 8693 §2.2.1: the issued token travels in access_token; token_type N_A.
        body["access_token"] = body.pop("id_token")
        body["token_type"] = "N_A"
    body["issued_token_type"] = token_type
    if at_claims.get("aud"):
        exchange.details["audience"] = " ".join(audiences(at_claims))
    return succeed(exchange, ctx, EVENT, body, at_claims)
