"""Who may call the webhooks admin REST API: the bearer of an access token of the master realm
(as Keycloak's admin tools get with a password grant on ``admin-cli``) whose ``realm_access``
roles contain ``admin``, and whose user still exists and is enabled.

The token is validated locally with the pieces of ``oidc.resource_server`` and ``oidc.jose``,
against the master realm's own keys (the provider needs no HTTP round trip to itself). There is
no audience check: like Keycloak's admin API, the issuer and the role decide (an admin-cli
token's ``aud`` is ``account``)."""
import time

from django.conf import settings

from oidc import jose
from oidc.errors import InvalidToken
from oidc.resource_server import DEFAULT_ALGORITHMS, LEEWAY, bearer_token, check_scope_and_role
from realms.keys import realm_keys
from realms.models import Realm, User

ADMIN_REALM = "master"
ADMIN_ROLE = "admin"


def _issuer(request):
    base = settings.IDP_BASE_URL or f"{request.scheme}://{request.get_host()}"
    return f"{base.rstrip('/')}/realms/{ADMIN_REALM}"


def admin_claims(request):
    """The claims of a valid master-realm admin token; InvalidToken (401) or InsufficientScope (403)."""
    try:
        header, claims, signing_input, signature = jose.parse(bearer_token(request))
    except jose.JoseError:
        raise InvalidToken("Malformed token") from None
    master = Realm.objects.filter(name=ADMIN_REALM).first()
    found = realm_keys(master).by_kid.get(header.get("kid")) if master else None
    alg = header.get("alg")
    if found is None or alg not in DEFAULT_ALGORITHMS or alg != found[0]:
        raise InvalidToken("Unknown signing key")
    try:
        jose.verify_signature(alg, found[1], signing_input, signature)
    except jose.JoseError:
        raise InvalidToken("Invalid signature") from None
    if claims.get("iss") != _issuer(request):
        raise InvalidToken("Wrong issuer")
    exp = claims.get("exp")
    if not isinstance(exp, (int, float)) or exp + LEEWAY < time.time():
        raise InvalidToken("Token expired")
    if claims.get("typ", "Bearer") != "Bearer":
        raise InvalidToken("Not an access token")
    check_scope_and_role(claims, role=ADMIN_ROLE)
    if not User.objects.filter(pk=claims.get("sub"), realm=master, enabled=True).exists():
        raise InvalidToken("User not found or disabled")
    return claims
