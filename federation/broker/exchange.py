"""Legacy token exchange of an OpenID Connect provider's token (Keycloak's
OIDCIdentityProvider.exchangeExternal): who the provider's token proves.

A JWT (``subject_token_type`` jwt or id_token) is checked as Keycloak checks it: signed by the
provider (its JWKS, fetched through ``realms.http.outbound``, or its configured key; always
verified, whatever ``validateSignature`` says, since the token did not come from the provider's
token endpoint), issued by the provider's ``issuer``, not expired; its audience is not ours to
check (Keycloak ignores it here). An access token is opaque to us: the provider's userinfo
endpoint, called with it, says who it belongs to."""
from realms.brokering.providers import BrokerError

from . import client, jose

JWT = "urn:ietf:params:oauth:token-type:jwt"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"
ACCESS_TOKEN = "urn:ietf:params:oauth:token-type:access_token"


def external_identity(provider_type, idp, settings, token, token_type):
    if token_type in (JWT, ID_TOKEN):
        claims = jose.verify(token, settings)
        issuer = settings.get("issuer")
        if issuer and claims.get("iss") != issuer:
            raise jose.invalid(f"wrong issuer {claims.get('iss')!r}, expected {issuer!r}")
        jose.check_lifetime(claims, settings.clock_skew)
        if not isinstance(claims.get("sub"), str) or not claims["sub"]:
            raise jose.invalid("the token has no sub")
        profile = claims
    elif token_type == ACCESS_TOKEN:
        url = provider_type.endpoint_url(settings, "userInfoUrl")
        if not url:
            raise BrokerError(error="invalid_token", detail="the provider has no userinfo endpoint")
        profile = client.userinfo(settings, token, url)
        if isinstance(profile, str):
            profile = jose.checked_claims(profile, settings)
        if not isinstance(profile, dict) or not isinstance(profile.get("sub"), str) or not profile["sub"]:
            raise jose.invalid("the userinfo answer names no user")
    else:
        raise BrokerError(error="invalid_token", detail="unsupported subject_token_type")
    identity = provider_type.identity(idp, settings, profile, {})
    identity.id = profile["sub"]
    return identity
