"""Legacy token exchange (Keycloak's V1, preview feature ``token-exchange``): a brokered
provider's token for ours (external to internal), and impersonation (``requested_subject``).

Keycloak decides both with fine-grained admin permissions, which we do not have; our rules
(docs/decisions/0070-token-exchange.md):

- external to internal: the requesting client is confidential and enabled for standard token
  exchange (``standard.token.exchange.enabled``); the provider's type checks the token
  (``exchange_external_token``); the user is the one linked to the provider's id for them.
  Nobody is created: an unknown user is refused (Keycloak V1 would import one).
- impersonation: the requester (the subject token's user, else the client's service account)
  holds the realm-management role ``impersonation``.

V1's default ``requested_token_type`` is a refresh token; the tokens come from a new SSO session
(Keycloak's "external-exchange" / "impersonate" sessions).
"""
from django.db import transaction

from realms.brokering.providers import BrokerError, get_provider_type
from realms.models import FederatedIdentity, IdentityProvider, User
from realms.sso import sessions

from .. import tokens
from ..errors import AccessDenied, InvalidRequest
from ..grants import succeed, token_context
from ..jose import JoseError, parse
from .common import ACCESS_TOKEN, JWT, REFRESH_TOKEN, live_access_token, refuse, standard_enabled

EVENT = "TOKEN_EXCHANGE"
IMPERSONATION = ("realm-management", "impersonation")
NOT_ALLOWED = "Client not allowed to exchange"


class InvalidIssuer(InvalidRequest):
    """Keycloak answers an unknown ``subject_issuer`` with this error code."""

    error = "invalid_issuer"


class InvalidTokenRequest(InvalidRequest):
    """Keycloak's 400 ``invalid_token`` of an external token or its user (not RFC 6750's 401)."""

    error = "invalid_token"


def exchange(exchange):
    params = exchange.params
    token, token_type = params.get("subject_token"), params.get("subject_token_type")
    issuer = params.get("subject_issuer")
    if issuer is None and token and token_type == JWT:
        try:
            issuer = parse(token)[1].get("iss")
        except JoseError:
            refuse(exchange, InvalidRequest, "Invalid token type, must be access token", "invalid_token",
                   "unable to parse jwt subject_token")
    if issuer is not None and issuer != exchange.issuer:
        exchange.details["subject_issuer"] = str(issuer)[:255]
        return external(exchange, str(issuer), token or "", token_type)
    if params.get("requested_issuer") is not None:
        refuse(exchange, InvalidRequest, "Issuer does not support token exchange", "unknown_identity_provider",
               "exchange unsupported by requested_issuer")
    if params.get("requested_subject") is not None:
        return impersonate(exchange)
    # V1's internal exchange is decided by fine-grained permissions we do not have.
    refuse(exchange, AccessDenied, NOT_ALLOWED, "not_allowed", "internal exchange needs standard token exchange")


def _requested_type(exchange):
    asked = exchange.params.get("requested_token_type") or REFRESH_TOKEN
    if asked not in (ACCESS_TOKEN, REFRESH_TOKEN):
        refuse(exchange, InvalidRequest, "requested_token_type unsupported", "invalid_request")
    exchange.details["requested_token_type"] = asked
    return asked


def _holds(roles, role):
    return any(r.client_id == role[0] and r.name == role[1] for r in roles)


def external(exchange, alias, token, token_type):
    realm = exchange.realm
    idp = IdentityProvider.objects.filter(realm=realm, alias=alias, enabled=True).first()
    provider_type = get_provider_type(idp.provider_id) if idp is not None else None
    if provider_type is None:
        refuse(exchange, InvalidIssuer, "Invalid subject_issuer parameter", "invalid_issuer")
    client = exchange.client_config.client
    if client.public_client or not standard_enabled(client):
        refuse(exchange, AccessDenied, NOT_ALLOWED, "not_allowed", "client not allowed to exchange subject_issuer")
    token_type = token_type or ACCESS_TOKEN
    try:
        identity = provider_type.exchange_external_token(realm, idp, token, token_type)
    except BrokerError as exc:
        refuse(exchange, InvalidTokenRequest, "Invalid token", "invalid_token", exc.detail or exc.error)
    exchange.details.update(identity_provider=alias, identity_provider_identity=identity.username[:255])
    link = FederatedIdentity.objects.filter(identity_provider=idp, subject=identity.id).select_related("user").first()
    if link is None:
        refuse(exchange, InvalidTokenRequest, "User not found", "user_not_found",
               "no user is linked to the provider's identity")
    user = link.user
    exchange.user_id = user.pk
    if not user.enabled:
        refuse(exchange, InvalidTokenRequest, "Invalid Token", "user_disabled")
    return _issue(exchange, user, "external-exchange", {"identity_provider": alias})


def impersonate(exchange):
    params = exchange.params
    wanted = params["requested_subject"]
    exchange.details["requested_subject"] = wanted[:255]
    realm_config = exchange.realm_config
    client = exchange.client_config.client
    requester = None
    if params.get("subject_token") is not None:
        if params.get("subject_token_type") not in (None, ACCESS_TOKEN):
            refuse(exchange, InvalidRequest, "Invalid token type, must be access token", "invalid_token",
                   "subject_token supports access tokens only")
        _, requester, _, _ = live_access_token(exchange, params["subject_token"])
        exchange.details["impersonator"] = requester.username
        allowed = _holds(realm_config.user_roles(requester), IMPERSONATION)
        reason = "subject not allowed to impersonate"
    elif client.public_client:
        allowed, reason = False, "public clients not allowed"
    else:
        account = exchange.client_config.service_account()
        allowed = account is not None and account[0].enabled and _holds(account[1], IMPERSONATION)
        reason = "client not allowed to impersonate"
    user = (User.objects.filter(realm=exchange.realm, username=wanted.lower()).first()
            or User.objects.filter(realm=exchange.realm, pk=wanted).first())
    if user is None or not user.enabled:
        # Always access_denied: no answer tells who exists.
        refuse(exchange, AccessDenied, NOT_ALLOWED, "not_allowed", "requested_subject not found")
    if not allowed:
        refuse(exchange, AccessDenied, NOT_ALLOWED, "not_allowed", reason)
    exchange.user_id = user.pk
    notes = {"IMPERSONATOR_ID": requester.pk, "IMPERSONATOR_USERNAME": requester.username} if requester else {}
    return _issue(exchange, user, "impersonate", notes)


def _issue(exchange, user, method, notes):
    token_type = _requested_type(exchange)
    scopes, openid = tokens.resolve_scopes(exchange.client_config, exchange.params.get("scope", ""))
    with transaction.atomic():
        user_session = sessions.create_user_session(exchange.realm, user, ip_address=exchange.ip_address,
                                                    auth_methods=(method,), notes=notes)
        client_session = sessions.get_or_create_client_session(user_session, exchange.client_config.client,
                                                               scope=exchange.params.get("scope", ""))
        exchange.session_id = user_session.pk
        ctx = token_context(exchange, user, scopes, openid, user_session, client_session)
        body, at_claims = tokens.token_response(ctx, with_refresh=token_type == REFRESH_TOKEN)
        body["issued_token_type"] = token_type
        return succeed(exchange, ctx, EVENT, body, at_claims)
