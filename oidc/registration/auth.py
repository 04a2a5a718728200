"""Who calls the client registration service, as Keycloak's ClientRegistrationAuth and
ClientRegistrationTokenUtils decide it.

The ``Authorization: Bearer`` token is one of three JWTs of the realm: an access token (``typ``
Bearer) of a user holding ``create-client`` or ``manage-clients`` (``view-clients`` to read); an
initial access token (``typ`` InitialAccessToken, ``jti`` the row of ``ClientInitialAccess``); a
registration access token (``typ`` RegistrationAccessToken, ``jti`` the one the client holds,
claim ``registration_auth``). The last two are signed as Keycloak signs its internal tokens, with
the realm's HS512 key (the refresh tokens' one); the client keeps only the SHA-256 digest of the
registration token's ``jti``, replaced on every update (rotation), so an older token is refused.
No token at all is anonymous registration: only the realm's ``anonymous`` policies decide it."""
import time
import uuid
from dataclasses import dataclass

from realms.administration.admin_permissions import Admin, management_roles
from realms.data.crypto import constant_time_equals

from .. import jose, tokens
from ..codes import digest
from ..errors import InsufficientScope, InvalidClient, InvalidRequest, InvalidToken
from ..services import live_subject

INITIAL, REGISTRATION = "InitialAccessToken", "RegistrationAccessToken"
ANONYMOUS, AUTHENTICATED = "anonymous", "authenticated"


def unauthorized(description):
    return InvalidToken(description, event_error="invalid_token")


def forbidden(description="Forbidden"):
    return InsufficientScope(description, event_error="not_allowed")


def not_found():
    return InvalidRequest("Client not found", status=404, event_error="client_not_found")


def _sign(realm, claims):
    kid, key = tokens.refresh_signing_key(realm)
    return jose.sign(claims, alg=tokens.REFRESH_ALG, key=key, kid=kid)


def initial_access_token(realm, issuer, row):
    claims = {"jti": row.id, "iat": int(time.time()), "iss": issuer, "aud": issuer, "typ": INITIAL}
    if row.expiration > 0:
        claims["exp"] = row.timestamp + row.expiration
    return _sign(realm, claims)


def new_registration_access_token(realm, issuer, client, registration_auth):
    """A new token for ``client``; the caller saves the client (its ``registration_access_token``
    now names only this one)."""
    jti = str(uuid.uuid4())
    client.registration_access_token = digest(jti)
    return _sign(realm, {"jti": jti, "iat": int(time.time()), "iss": issuer, "aud": issuer, "typ": REGISTRATION,
                         "registration_auth": registration_auth})


@dataclass
class Auth:
    realm_config: object
    claims: dict = None
    initial: object = None  # the ClientInitialAccess row
    user: object = None

    @property
    def typ(self):
        return (self.claims or {}).get("typ")

    @property
    def registration_auth(self):
        value = (self.claims or {}).get("registration_auth")
        return AUTHENTICATED if value == AUTHENTICATED else ANONYMOUS

    def roles(self):
        return management_roles(Admin(self.user, self.claims.get("azp", "")), self.realm_config.realm)

    def holds_registration_token(self, client):
        stored = client.registration_access_token if client is not None else ""
        jti = str(self.claims.get("jti") or "")
        # The digest is what this server stores; a raw id is what a Keycloak export carries.
        return bool(stored and jti) and (constant_time_equals(stored, digest(jti)) or constant_time_equals(stored, jti))


def read(request, realm_config, issuer):
    """The caller's Auth; InvalidToken for a token that is not one of the realm's three kinds."""
    from ..models import ClientInitialAccess

    auth = Auth(realm_config)
    header = request.headers.get("Authorization") or ""
    parts = header.split(" ")
    if not header or parts[0].lower() != "bearer":
        return auth
    token = parts[1] if len(parts) > 1 else ""
    if not token:
        raise unauthorized("Missing token")
    try:
        claims = tokens.decode(realm_config.realm, token, issuer)
    except tokens.TokenError:
        raise unauthorized("Failed decode token") from None
    if claims.get("typ") not in (tokens.TYP_BEARER, INITIAL, REGISTRATION):
        raise unauthorized("Invalid type of token")
    auth.claims = claims
    if claims["typ"] == INITIAL:
        auth.initial = ClientInitialAccess.objects.filter(realm=realm_config.realm, pk=str(claims.get("jti"))).first()
        if auth.initial is None:
            raise unauthorized("Initial Access Token not found")
    elif claims["typ"] == tokens.TYP_BEARER:
        live = live_subject(realm_config, claims, check_revoked=True, fresh_user=True)
        if live is None:
            raise unauthorized("Failed decode token")
        auth.user = live[0]
    return auth


def require_create(auth):
    """The registration's kind (Keycloak's RegistrationAuth) or the refusal."""
    if auth.typ == tokens.TYP_BEARER:
        if auth.roles() & {"manage-clients", "create-client"}:
            return AUTHENTICATED
        raise forbidden()
    if auth.typ == INITIAL:
        row = auth.initial
        if row.remaining_count <= 0:
            raise unauthorized("No remaining count on initial access token")
        if row.expiration and row.timestamp + row.expiration <= int(time.time()):
            raise unauthorized("Expired initial access token")
        return AUTHENTICATED
    if auth.typ == REGISTRATION:
        raise unauthorized("Not authorized to create client. Not valid token provided.")
    return ANONYMOUS


def _check_protocol(client, endpoint):
    if endpoint == "openid-connect" and client is not None and client.protocol not in ("", "openid-connect"):
        raise InvalidClient("Wrong client protocol.", status=400)


def require_view(auth, client, endpoint):
    if auth.typ == tokens.TYP_BEARER:
        if not auth.roles() & {"manage-clients", "view-clients"}:
            raise forbidden()
        if client is None:
            raise not_found()
        _check_protocol(client, endpoint)
        return AUTHENTICATED
    if auth.typ == REGISTRATION and auth.holds_registration_token(client):
        _check_protocol(client, endpoint)
        return auth.registration_auth
    if auth.typ == INITIAL:
        raise unauthorized("Not initial access token allowed")
    raise unauthorized("Not authorized to view client. Not valid token or client credentials provided.")


def require_update(auth, client, endpoint):
    """For PUT and DELETE."""
    if auth.typ == tokens.TYP_BEARER:
        if "manage-clients" not in auth.roles():
            raise forbidden()
        if client is None:
            raise not_found()
        _check_protocol(client, endpoint)
        return AUTHENTICATED
    if auth.typ == REGISTRATION and auth.holds_registration_token(client):
        return auth.registration_auth
    raise unauthorized("Not authorized to update client. Maybe missing token or bad token type.")
