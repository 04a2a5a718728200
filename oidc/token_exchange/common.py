"""What the token exchanges share: RFC 8693's token type URIs, Keycloak's client attributes, the
refusal that records Keycloak's event reason, and reading one of our access tokens as a live
subject (or actor)."""
from .. import tokens
from ..errors import InvalidRequest
from ..services import live_subject

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


def live_access_token(exchange, token, *, description="Invalid token", reason="subject_token validation failure"):
    """(claims, user, user session or None) of one of this realm's access tokens that is still
    live (signature, issuer, expiry, not revoked, its session, client and user enabled), as
    Keycloak's verifyIdentityToken; otherwise invalid_request ``description``."""
    try:
        claims = tokens.decode(exchange.realm, token, exchange.issuer)
    except tokens.TokenError:
        claims = None
    live = None
    if claims is not None and claims.get("typ") == tokens.TYP_BEARER and isinstance(claims.get("exp"), int):
        live = live_subject(exchange.realm_config, claims, check_revoked=True)
    if live is None:
        refuse(exchange, InvalidRequest, description, "invalid_token", reason)
    user, user_session, _ = live
    return claims, user, user_session


def audiences(claims):
    aud = claims.get("aud")
    if aud is None:
        return []
    return [aud] if isinstance(aud, str) else [a for a in aud if isinstance(a, str)]
