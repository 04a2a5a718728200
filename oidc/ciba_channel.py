"""CIBA's HTTP legs, as Keycloak's ``ciba-http-auth-channel`` provider and ping delivery.

- The authentication channel: each backchannel authentication request is POSTed as JSON
  (``scope``, ``binding_message``, ``login_hint``, ``is_consent_required``, ``acr_values``) to
  ``IDP_CIBA_HTTP_AUTH_CHANNEL_URI`` with ``Authorization: Bearer`` a token the realm signs:
  ``jti`` names the request (only its digest is stored), ``azp`` the client, ``aud`` and ``iss``
  the realm, ``sub`` the user. A 201 or 200 accepts it; anything else fails the request (503).
- The callback's bearer is that token: signature, issuer, audience, expiry, then the request.
- Ping mode: ``{"auth_req_id": ...}`` to the client's notification endpoint with its
  ``client_notification_token`` as the bearer.

Every call goes through ``realms.http.outbound`` (the SSRF-safe client); no token is logged.
"""
import json
import logging
import time

from django.conf import settings

from realms.http import outbound

from . import jose, tokens
from .codes import digest
from .errors import InvalidRequest, InvalidToken, ServerError
from .models import BackchannelAuthentication as Request

logger = logging.getLogger("idp.oidc.ciba")

ACCEPTED = (200, 201)
NOTIFIED = (200, 204)
TIMEOUT = 10.0


class ChannelError(ServerError):
    """The authentication channel could not take the request: Keycloak's 503 server_error."""

    status = 503


def _scope_shown(config, scope):
    """The requested scope and the client's default scopes shown on a consent screen (what
    Keycloak tells the authentication device)."""
    names = scope.split()
    for client_scope in config.default_scopes:
        shown = (getattr(client_scope, "attributes", None) or {}).get("display.on.consent.screen", "true")
        if shown != "false" and client_scope.name not in names:
            names.append(client_scope.name)
    return " ".join(names)


def channel_token(realm, issuer, result_id, client_id, user_id, exp):
    alg = realm.default_signature_algorithm
    kid, key = tokens.signer(realm, alg)
    claims = {"typ": "Bearer", "iss": issuer, "aud": issuer, "jti": result_id, "azp": client_id,
              "sub": user_id, "iat": int(time.time()), "exp": exp}
    return jose.sign(claims, alg=alg, key=key, kid=kid)


def request_authentication(row, config, user, issuer, result_id):
    """Send the request to the authentication channel; ChannelError when it is not accepted."""
    uri = getattr(settings, "IDP_CIBA_HTTP_AUTH_CHANNEL_URI", "")
    if not uri:
        logger.warning("ciba: no authentication channel (IDP_CIBA_HTTP_AUTH_CHANNEL_URI is not set)")
        raise ChannelError("Failed to send authentication request")
    body = {"scope": _scope_shown(config, row.scope), "login_hint": user.username,
            "is_consent_required": bool(config.client.consent_required)}
    # Keycloak's JSON leaves out what the request did not carry.
    if row.binding_message:
        body["binding_message"] = row.binding_message
    if row.acr_values:
        body["acr_values"] = row.acr_values
    token = channel_token(row.realm, issuer, result_id, config.client_id, user.pk, int(row.expires_at.timestamp()))
    try:
        answer = outbound.post(uri, json.dumps(body).encode(), {
            "Content-Type": "application/json", "Authorization": "Bearer " + token}, timeout=TIMEOUT)
    except (outbound.OutboundError, outbound.HTTPError) as exc:
        logger.warning("ciba: authentication channel not reached: %s", exc.__class__.__name__)
        raise ChannelError("Failed to send authentication request") from None
    if answer.status not in ACCEPTED:
        logger.warning("ciba: authentication channel answered %s", answer.status)
        raise ChannelError("Unexpected response from authentication device")


def invalid_token():
    return InvalidToken("Invalid token", status=403, event_error="invalid_token")


def verify_callback(realm_config, issuer, bearer):
    """The request the channel's bearer token names (client and user loaded), or Keycloak's
    answers: 401 without a token, 403 for a token that is not a live channel token of this
    realm, 400 for a token whose client is gone or not the request's."""
    if not bearer:
        raise InvalidToken("Invalid token")
    realm = realm_config.realm
    try:
        claims = tokens.decode(realm, bearer, issuer)
    except tokens.TokenError:
        raise invalid_token() from None
    aud = claims.get("aud")
    if (claims.get("typ") != "Bearer" or not claims.get("sub") or not isinstance(claims.get("jti"), str)
            or (aud != issuer and not (isinstance(aud, list) and issuer in aud))):
        raise invalid_token()
    row = (Request.objects.filter(result_digest=digest(claims["jti"]), realm=realm)
           .select_related("client", "user").first())
    if row is None:
        raise invalid_token()
    return row, claims


def check_recipient(realm_config, row, claims):
    issued_for = realm_config.client(claims.get("azp") or "") if isinstance(claims.get("azp"), str) else None
    if issued_for is None or not issued_for.client.enabled:
        raise InvalidRequest("Invalid token recipient")
    if issued_for.client.pk != row.client_id:
        raise InvalidRequest("Token recipient mismatch")


def notify_client(client, auth_req_id, notification_token):
    """Ping mode (CIBA Core §10.2): tell the client its tokens are ready, or its request denied."""
    endpoint = (client.attributes or {}).get("ciba.backchannel.client.notification.endpoint", "")
    if not endpoint:
        raise InvalidRequest("Client notification endpoint not set for the client with the ping mode")
    try:
        answer = outbound.post(endpoint, json.dumps({"auth_req_id": auth_req_id}).encode(), {
            "Content-Type": "application/json", "Authorization": "Bearer " + notification_token}, timeout=TIMEOUT)
    except (outbound.OutboundError, outbound.HTTPError) as exc:
        logger.warning("ciba: notification endpoint of %s not reached: %s", client.client_id, exc.__class__.__name__)
        raise InvalidRequest("Failed to send request to client notification endpoint") from None
    if answer.status not in NOTIFIED:
        logger.warning("ciba: notification endpoint of %s answered %s", client.client_id, answer.status)
        raise InvalidRequest("Failed to send request to client notification endpoint")
