"""What the token exchanges share: RFC 8693's token type URIs, Keycloak's client attributes, the
refusal that records Keycloak's event reason, and reading one of our access tokens as a live
subject (or actor)."""
from django.core.cache import cache

from realms.data import rows
from realms.models import ClientSession, User
from realms.sso import sessions

from .. import tokens
from ..errors import InvalidRequest
from ..services import _revoked_key  # the one place that names a revoked token's cache key

ACCESS_TOKEN = "urn:ietf:params:oauth:token-type:access_token"
REFRESH_TOKEN = "urn:ietf:params:oauth:token-type:refresh_token"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
JWT = "urn:ietf:params:oauth:token-type:jwt"
SAML2 = "urn:ietf:params:oauth:token-type:saml2"

# Client attributes (Keycloak's OIDCConfigAttributes).
STANDARD_ENABLED = "standard.token.exchange.enabled"
REFRESH_ENABLED = "standard.token.exchange.enableRefreshRequestedTokenType"
SAME_SESSION = "SAME_SESSION"


def standard_enabled(client):
    return (client.attributes or {}).get(STANDARD_ENABLED) == "true"


def refuse(exchange, error_class, description, event_error, reason=None, **kw):
    """Raise Keycloak's answer; its event records ``reason`` (the description when not given)."""
    exchange.details["reason"] = reason or description
    raise error_class(description, event_error=event_error, **kw)


def live_access_token(exchange, token, *, description="Invalid token", reason="subject_token validation failure",
                      requester=None):
    """(claims, user, user session or None, the requester's client session in it or None) of one
    of this realm's access tokens that is still live (signature, issuer, expiry, not revoked, its
    session with its client's session, client and user enabled: ``services.live_subject``'s
    rules, Keycloak's verifyIdentityToken); otherwise invalid_request ``description``.

    ``requester``: a client whose session in the same SSO session is read in the same query as
    the token client's: the standard exchange needs both, and one round trip instead of two is
    what keeps an exchange near the cost of a client-credentials grant."""
    try:
        claims = tokens.decode(exchange.realm, token, exchange.issuer)
    except tokens.TokenError:
        claims = None
    found = None
    if claims is not None and claims.get("typ") == tokens.TYP_BEARER and isinstance(claims.get("exp"), int):
        found = _live(exchange.realm_config, claims, requester)
    if found is None:
        refuse(exchange, InvalidRequest, description, "invalid_token", reason)
    return (claims, *found)


def _live(realm_config, claims, requester):
    config = realm_config.client(claims.get("azp", ""))
    if config is None or not config.client.enabled:
        return None
    sid = claims.get("sid")
    revoked_key = _revoked_key(claims["jti"]) if claims.get("jti") else None
    session_key = sessions.cache_key(sid) if sid else None
    keys = [key for key in (revoked_key, session_key) if key]
    cached = cache.get_many(keys) if keys else {}
    if revoked_key in cached:
        return None
    requester_session = None
    if sid:
        user_session = sessions.get_valid_session(realm_config.realm, sid, cached.get(session_key))
        if user_session is None or user_session.user_id != claims.get("sub"):
            return None
        ids = list(dict.fromkeys([config.client.pk, *([requester.pk] if requester is not None else [])]))
        by_client = {row.client_id: row for row in rows.fetch(
            ClientSession, "user_session_id = %s AND client_id IN ({})".format(", ".join(["%s"] * len(ids))),
            [user_session.pk, *ids])}
        if config.client.pk not in by_client:
            return None
        user = user_session.user
        if requester is not None and requester.pk in by_client:
            requester_session = by_client[requester.pk]
            requester_session.user_session, requester_session.client = user_session, requester
    else:
        user_session = None
        user = User.objects.filter(pk=claims.get("sub"), realm=realm_config.realm).first()
    if user is None or not user.enabled:
        return None
    user.realm = realm_config.realm
    return user, user_session, requester_session


def audiences(claims):
    aud = claims.get("aud")
    if aud is None:
        return []
    return [aud] if isinstance(aud, str) else [a for a in aud if isinstance(a, str)]
