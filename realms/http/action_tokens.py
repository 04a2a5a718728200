"""Action tokens: the links sent by e-mail (Keycloak's ``/realms/{realm}/login-actions/action-token?key=...``).

A token is a JWT signed with the realm's active key for its default signature algorithm, carrying
Keycloak's claims (``typ`` the action, ``sub`` the user, ``azp`` the client, ``eml`` the address
being verified, ``rqac`` the required actions, ``reduri`` where to go afterwards, ``oasid`` the
sign-in that asked for it). Lifespans come from the realm: ``actionTokenGeneratedByUserLifespan``
(overridable per type by the realm attribute ``actionTokenGeneratedByUserLifespan.<typ>``) for
links a user asked for, ``actionTokenGeneratedByAdminLifespan`` for those an administrator sent.

Each token is used once: its id is claimed in the shared cache until it expires (an atomic add), so
a second click, in any process, finds it taken."""
import json
import time
import uuid
from urllib.parse import urlencode

from django.core.cache import cache
from jwcrypto import jws

from ..data import keys
from ..errors import RealmsError
from ..registry import Registry
from .web import base_url

VERIFY_EMAIL, RESET_CREDENTIALS, EXECUTE_ACTIONS = "verify-email", "reset-credentials", "execute-actions"
ORG_INVITE = "ORGIVT"  # an organization's invitation (``sub`` absent for someone yet to register)
UPDATE_EMAIL = "update-email"  # claims oldEmail and newEmail: the change waiting for this link
TYPES = (VERIFY_EMAIL, RESET_CREDENTIALS, EXECUTE_ACTIONS, ORG_INVITE, UPDATE_EMAIL)
# Links of other rooms (brokering's account-link confirmation): ``handler(request, realm, claims)``
# answers a verified token of that type at the same address.
_handlers = Registry("action token handlers")


def register_handler(typ, handler):
    _handlers.add(typ, handler)


def handler(typ):
    return _handlers.get(typ)


class InvalidToken(RealmsError):
    """Malformed, badly signed, of another realm or type: Keycloak's invalid_code."""


class ExpiredToken(RealmsError):
    """Past its lifespan or already used: Keycloak's expired_code."""


def user_lifespan(realm, typ):
    override = (realm.attributes or {}).get(f"actionTokenGeneratedByUserLifespan.{typ}")
    try:
        return int(override) if override not in (None, "") else realm.action_token_generated_by_user_lifespan
    except (TypeError, ValueError):
        return realm.action_token_generated_by_user_lifespan


def issuer(realm, request=None):
    return f"{base_url(request)}/realms/{realm.name}"


def create(realm, user, typ, *, lifespan, client_id="", request=None, **claims):
    """A signed token for ``user`` (None: no ``sub``) valid ``lifespan`` seconds from now."""
    now = int(time.time())
    payload = {"exp": now + int(lifespan), "iat": now, "jti": str(uuid.uuid4()), "iss": issuer(realm, request),
               "aud": issuer(realm, request), "sub": user.pk if user is not None else None, "typ": typ,
               "azp": client_id,
               **{k: v for k, v in claims.items() if v not in (None, "", [])}}
    if user is None:
        del payload["sub"]
    algorithm = realm.default_signature_algorithm
    signer = keys.realm_keys(realm).signer(algorithm)
    if signer is None:
        raise InvalidToken(f"realm {realm.name} has no active {algorithm} key")
    kid, key = signer
    token = jws.JWS(json.dumps(payload, separators=(",", ":")).encode())
    token.add_signature(key, alg=algorithm, protected={"alg": algorithm, "kid": kid, "typ": "JWT"})
    return token.serialize(compact=True)


def link(realm, token, request=None, **params):
    query = urlencode({"key": token, **{k: v for k, v in params.items() if v}})
    return f"{issuer(realm, request)}/login-actions/action-token?{query}"


def verify(realm, token, request=None) -> dict:
    """The token's claims once its signature, realm, type and lifespan check out; it is not yet
    used up (``consume`` does that when the action is carried out)."""
    try:
        parsed = jws.JWS()
        parsed.deserialize(token)
        header = parsed.jose_header
        alg, key = keys.realm_keys(realm).by_kid[header["kid"]]
        if header.get("alg") != alg:
            raise InvalidToken("algorithm mismatch")
        parsed.verify(key, alg=alg)
        claims = json.loads(parsed.payload)
    except InvalidToken:
        raise
    except Exception as exc:  # jwcrypto raises several kinds; all mean the same here
        raise InvalidToken(str(exc)) from exc
    if claims.get("iss") != issuer(realm, request) or (claims.get("typ") not in TYPES and claims.get("typ") not in _handlers):
        raise InvalidToken("not an action token of this realm")
    if not isinstance(claims.get("exp"), int) or claims["exp"] <= time.time():
        raise ExpiredToken("expired")
    return claims


def consume(claims):
    """Claim the token's single use; ExpiredToken when it was used already."""
    remaining = int(claims["exp"] - time.time()) + 1
    if remaining <= 0 or not cache.add(f"idp:action-token:{claims['jti']}", 1, remaining):
        raise ExpiredToken("already used")
