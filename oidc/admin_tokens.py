"""The Admin REST API's token check (registered in ``realms.admin_api`` from ``OidcConfig.ready()``).

As Keycloak's admin API does: the token names its realm by its issuer; it must be signed with
that realm's keys, carry exactly that realm's issuer URL, be unexpired, issued after the realm's
not-before, an access token (``typ`` Bearer), not revoked, and still backed by a live SSO
session (``sid``) with this client, an enabled client and an enabled user. What the caller may
do is decided afterwards, from the database (``realms.admin_api.permissions``)."""
from realms.admin_api.authentication import BearerRefused, Caller
from realms.http.web import realm_url

from . import jose, tokens
from .realm_cache import find_realm
from .services import live_subject


def verify(request, token) -> Caller:
    try:
        _, unverified, _, _ = jose.parse(token)
    except jose.JoseError:
        raise BearerRefused("malformed") from None
    # The issuer only says which realm's keys to try; decode() checks it again once verified.
    prefix = realm_url(request, "")
    issuer = unverified.get("iss")
    name = issuer[len(prefix):] if isinstance(issuer, str) and issuer.startswith(prefix) else ""
    if not name or "/" in name:
        raise BearerRefused("unknown issuer")
    realm_config = find_realm(name)
    if realm_config is None:
        raise BearerRefused("unknown or disabled realm")
    try:
        claims = tokens.decode(realm_config.realm, token, realm_url(request, name), remember=True)
    except tokens.TokenError:
        raise BearerRefused("invalid") from None
    if not isinstance(claims.get("exp"), int) or claims.get("typ") != tokens.TYP_BEARER:
        raise BearerRefused("not an access token")
    if "act" in claims:  # a delegated token (RFC 8693 act) acts for someone: never an admin's
        raise BearerRefused("delegated token")
    # The user row itself, not the session cache's copy: disabling an admin takes effect at once.
    live = live_subject(realm_config, claims, check_revoked=True, fresh_user=True)
    if live is None:
        raise BearerRefused("revoked, session ended, client or user disabled")
    return Caller(user=live[0], realm=realm_config.realm, claims=claims)
