"""Minting and reading the realm's tokens: access token, ID token, refresh/offline token.

Access and ID tokens are JWTs signed with the realm's active key for the algorithm in effect
(the realm's Default Signature Algorithm unless the client overrides it), so resource servers
validate them locally against the JWKS; a client may name an HS algorithm instead (the realm's
secret: only this server verifies them) and have its ID tokens and userinfo encrypted to its own
key (decision 0084). Refresh tokens are only ever read by this server, so, as
in Keycloak, they are signed with a per-realm HMAC key (HS512): cheap to sign and verify and
useless to anyone else. They carry the session id (``sid``); their ``jti`` is tracked only when
the realm revokes refresh tokens.
"""
import functools
import hashlib
import json
import time
import uuid
from dataclasses import dataclass, field

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

from realms.data.keys import realm_keys
from realms.models import RealmKey
from realms.signin.flows import SSO_AUTH
from realms.sso import sessions

from . import client_auth, jose
from .errors import InvalidClient, InvalidScope, OidcError, ServerError
from .mappers import ACCESS, ID, INTROSPECTION, USERINFO, apply_mappers

REFRESH_ALG = "HS512"
TYP_BEARER, TYP_ID, TYP_REFRESH, TYP_OFFLINE = "Bearer", "ID", "Refresh", "Offline"
OFFLINE_ACCESS = "offline_access"


# Refresh-token keys -----------------------------------------------------------------------------

@functools.lru_cache(maxsize=1024)
def _derive(secret_key, realm_id):
    key = HKDF(algorithm=hashes.SHA512(), length=64, salt=None,
               info=f"idp refresh tokens {realm_id}".encode()).derive(secret_key.encode())
    return hashlib.sha256(key).hexdigest()[:16], key


def refresh_signing_key(realm):
    """(kid, key) that signs the realm's refresh tokens: as in Keycloak, its active HS512 key
    (``hmac-generated`` component) with the highest priority. A realm without one, every realm
    before such keys existed, signs with a key derived from SECRET_KEY (decision 0067)."""
    return realm_keys(realm).hmac_signer or _derive(settings.SECRET_KEY, realm.pk)


def refresh_verifying_keys(realm, keys):
    """kid -> key of every key a refresh token of the realm may be signed with: its enabled HMAC
    keys (a disabled or deleted one takes its tokens with it), and the derived keys of SECRET_KEY
    and SECRET_KEY_FALLBACKS, so tokens issued before the realm's first HMAC key keep refreshing
    and changing SECRET_KEY (the old one kept as a fallback) breaks none."""
    derived = dict(_derive(k, realm.pk) for k in (settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", ())))
    return {**derived, **keys.hmac_secrets}  # keys: the realm's LoadedKeys


# Scopes ---------------------------------------------------------------------------------------

def resolve_scopes(client_config, requested):
    """(client scopes in effect, openid requested, names requested): default scopes always,
    optional ones when asked for; a name the client does not have is invalid_scope."""
    names = [n for n in (requested or "").split() if n]
    scopes = list(client_config.default_scopes)
    default_names = {s.name for s in scopes}
    for name in dict.fromkeys(names):
        if name == "openid" or name in default_names:
            continue
        optional = client_config.optional_scopes.get(name)
        if optional is None:
            raise InvalidScope("Invalid scopes: " + " ".join(names))
        scopes.append(optional)
    return scopes, "openid" in names


def scope_claim(scopes, openid):
    names = sorted(s.name for s in scopes if s.include_in_token_scope)
    return " ".join((["openid"] if openid else []) + names)


# Token building -------------------------------------------------------------------------------

@dataclass
class TokenContext:
    """Everything the claims of one token response depend on."""

    realm: object
    client_config: object
    user: object
    issuer: str
    scopes: list
    openid: bool = False
    user_session: object = None
    client_session: object = None
    nonce: str = ""
    acr: str | None = None
    roles: frozenset = field(default_factory=frozenset)
    refresh_claims: dict | None = None  # set when a refresh token was minted
    # Set by a grant that narrows the access token's audience (RFC 8693 ``audience``, RFC 8707
    # ``resource``) after its own checks: the ``aud`` the access token carries, exactly.
    audience: list | None = None
    # Claims a grant sets last on the access token (RFC 8693's ``act``), over the mappers'.
    extra_claims: dict = field(default_factory=dict)
    # Claims a grant adds to the refresh token (RFC 8707: the grant's ``resource``), kept for the next refresh.
    refresh_extra_claims: dict = field(default_factory=dict)
    # Sender constraint (oidc.binding): the access token's and the refresh token's ``cnf``, and
    # the response's token_type.
    cnf: dict = field(default_factory=dict)
    refresh_cnf: dict = field(default_factory=dict)
    token_type: str = "Bearer"

    @property
    def client(self):
        return self.client_config.client

    @property
    def sid(self):
        return self.user_session.pk if self.user_session is not None else None

    @property
    def subject(self):
        """The user's ``sub`` for this client (pairwise or the user id)."""
        return self.client_config.subject(self.user.pk)

    @property
    def scope(self):
        return scope_claim(self.scopes, self.openid)


def restricted_roles(client_config, user_roles, scopes):
    """The user's roles the client may see given its scope (Keycloak: full scope or scope roles)."""
    allowed = client_config.allowed_role_ids(scopes)
    if allowed is None:
        return frozenset(user_roles)
    return frozenset(r for r in user_roles if r.id in allowed)


def has_offline_access(ctx):
    return any(r.client_id is None and r.name == OFFLINE_ACCESS for r in ctx.roles)


def _int_attr(client, key):
    try:
        return int(client.attributes.get(key) or 0)
    except (TypeError, ValueError):
        return 0


# Client attributes saying how its tokens are signed or encrypted (Keycloak's names). A value this
# server cannot serve is refused where the client is written (import, Admin API, registration),
# never a 500 on every token request, nor a token in the clear for a client that asked for a JWE.
ACCESS_SIGNING, ID_SIGNING = "access.token.signed.response.alg", "id.token.signed.response.alg"
AUTHORIZATION_SIGNING = "authorization.signed.response.alg"
SIGNING_ATTRIBUTES = (ACCESS_SIGNING, ID_SIGNING, AUTHORIZATION_SIGNING)
USERINFO_SIGNING = "user.info.response.signature.alg"
UNSIGNED = "unsigned"
ID_ENCRYPTION = ("id.token.encrypted.response.alg", "id.token.encrypted.response.enc")
USERINFO_ENCRYPTION = ("user.info.encrypted.response.alg", "user.info.encrypted.response.enc")
UNSERVED_ATTRIBUTES = ("authorization.encrypted.response.alg", "authorization.encrypted.response.enc")
# What each may name: any served algorithm; HS* (Keycloak's SecretSignatureProvider: the realm's
# secret, so only this server can verify) for what this server reads back (access tokens at
# userinfo and introspection) and, as in Keycloak, ID tokens and userinfo; never for the
# authorization response, which only the client reads.
ASYMMETRIC_ALGS = tuple(alg for alg, _ in RealmKey.ALGORITHMS)
TOKEN_ALGS = (*ASYMMETRIC_ALGS, *RealmKey.HMAC_ALGORITHMS)
_ALLOWED = {ACCESS_SIGNING: TOKEN_ALGS, ID_SIGNING: TOKEN_ALGS, AUTHORIZATION_SIGNING: ASYMMETRIC_ALGS,
            USERINFO_SIGNING: (UNSIGNED, *TOKEN_ALGS),
            ID_ENCRYPTION[0]: jose.JWE_ALGS, ID_ENCRYPTION[1]: jose.JWE_ENCS,
            USERINFO_ENCRYPTION[0]: jose.JWE_ALGS, USERINFO_ENCRYPTION[1]: jose.JWE_ENCS}


def check_attributes(protocol, attributes):
    """The refusal of a client's token signing or encryption attribute, or None."""
    if protocol != "openid-connect":
        return None
    for name, allowed in _ALLOWED.items():
        value = attributes.get(name)
        if value and value not in allowed:
            return f"Unsupported value of {name}: {value!r}; one of: {', '.join(allowed)}"
    for alg_name, enc_name in (ID_ENCRYPTION, USERINFO_ENCRYPTION):
        if attributes.get(enc_name) and not attributes.get(alg_name):
            return f"{enc_name} needs {alg_name}"
    for name in UNSERVED_ATTRIBUTES:
        if attributes.get(name):
            return f"Unsupported attribute {name}: encrypted authorization responses are not supported"
    return None


def signer(realm, alg):
    """(kid, key) of the realm's active key for ``alg``; ServerError when there is none."""
    found = realm_keys(realm).signer(alg)
    if found is None:
        raise ServerError(f"No active {alg} key in realm")
    return found


def _sign(realm, alg, claims, typ="JWT"):
    kid, key = signer(realm, alg)
    return jose.sign(claims, alg=alg, key=key, kid=kid, typ=typ)


def encrypted(client, names, content, cty=""):
    """``content`` as a JWE to the client's encryption key when its attributes ``names`` (alg,
    enc) ask for one (enc defaults to A128CBC-HS256), else None. A client without a key for the
    alg is refused with invalid_client, never sent its token in the clear (Keycloak: a 500)."""
    alg = client.attributes.get(names[0])
    if not alg:
        return None
    enc = client.attributes.get(names[1]) or jose.DEFAULT_ENC
    key = next((k for k in client_auth.client_encryption_keys(client).values()
                if k.get("kty") == jose.JWE_KEY_TYPES.get(alg) and k.get("alg") in (None, alg)), None)
    if key is None:
        raise InvalidClient(f"Client has no {alg} encryption key in its JWKS", status=400)
    return jose.encrypt(content, alg=alg, enc=enc, key=key, cty=cty)


def _signed_then_encrypted(ctx, alg, claims, names):
    """A signed token, as a nested JWT (signed, then encrypted) when the client asks for a JWE."""
    token = _sign(ctx.realm, alg, claims)
    return encrypted(ctx.client, names, token, cty="JWT") or token


def session_acr(client_session):
    """The acr of tokens from a client session: the one the sign-in noted (oidc.authorize), else
    "0" answered from the SSO cookie, "1" signed in."""
    notes = client_session.notes if client_session is not None else {}
    return notes.get("acr") or ("0" if notes.get(SSO_AUTH) == "true" else "1")


def access_token_claims(ctx, now, lifespan=None):
    lifespan = lifespan or _int_attr(ctx.client, "access.token.lifespan") or ctx.realm.access_token_lifespan
    exp = now + lifespan
    if ctx.client_session is not None and not ctx.user_session.offline:
        # An access token never outlives the session it was issued from.
        exp = min(exp, int(sessions.client_session_expiry(ctx.client_session).timestamp()))
    claims = {"exp": exp, "iat": now, "jti": str(uuid.uuid4()), "iss": ctx.issuer}
    claims["typ"] = TYP_BEARER
    claims["azp"] = ctx.client.client_id
    if ctx.sid:
        claims["sid"] = ctx.sid
    apply_mappers(ctx.client_config.mappers_for(ctx.scopes, ACCESS), claims, ctx)
    if ctx.audience is not None:
        if ctx.audience:
            claims["aud"] = ctx.audience[0] if len(ctx.audience) == 1 else list(ctx.audience)
        else:
            claims.pop("aud", None)
    claims.update(ctx.extra_claims)
    if ctx.cnf:
        claims["cnf"] = ctx.cnf
    claims["scope"] = ctx.scope
    return claims


def id_token_claims(ctx, now, access_token, alg, code=""):
    claims = {"exp": now + (_int_attr(ctx.client, "access.token.lifespan") or ctx.realm.access_token_lifespan),
              "iat": now, "jti": str(uuid.uuid4()), "iss": ctx.issuer, "aud": ctx.client.client_id,
              "sub": ctx.subject, "typ": TYP_ID, "azp": ctx.client.client_id}
    if ctx.user_session is not None:
        claims["auth_time"] = int(ctx.user_session.auth_time.timestamp())
        claims["sid"] = ctx.sid
    if ctx.nonce:
        claims["nonce"] = ctx.nonce
    if access_token:
        claims["at_hash"] = jose.half_hash(access_token, alg)
    if code:
        claims["c_hash"] = jose.half_hash(code, alg)  # OIDC Core §3.3.2.11
    apply_mappers(ctx.client_config.mappers_for(ctx.scopes, ID), claims, ctx)
    claims["aud"] = claims["aud"] if claims.get("aud") else ctx.client.client_id
    claims["sub"] = ctx.subject
    return claims


def userinfo_claims(ctx):
    claims = {"sub": ctx.subject}
    apply_mappers(ctx.client_config.mappers_for(ctx.scopes, USERINFO), claims, ctx)
    claims["sub"] = ctx.subject
    return claims


def userinfo_jwt(ctx, claims):
    """The userinfo response as ``application/jwt`` when the client asks for it (Keycloak's
    UserInfoEndpoint): signed with ``user.info.response.signature.alg`` (then ``iss`` and ``aud``
    added), encrypted with ``user.info.encrypted.response.*`` (a nested JWT when also signed);
    None for plain JSON."""
    alg = ctx.client.attributes.get(USERINFO_SIGNING)
    if alg and alg != UNSIGNED:
        return _signed_then_encrypted(ctx, alg, {**claims, "iss": ctx.issuer, "aud": ctx.client.client_id},
                                      USERINFO_ENCRYPTION)
    return encrypted(ctx.client, USERINFO_ENCRYPTION, json.dumps(claims, separators=(",", ":")))


def introspection_claims(ctx, token_claims):
    """Claims for an introspection answer: the token's own, with introspection mappers re-run."""
    claims = dict(token_claims)
    apply_mappers(ctx.client_config.mappers_for(ctx.scopes, INTROSPECTION), claims, ctx)
    return claims


def refresh_token(ctx, now):
    """(token, claims) of a new refresh or offline token for the context's client session."""
    offline = ctx.user_session.offline
    exp = int(sessions.client_session_expiry(ctx.client_session).timestamp())
    claims = {"exp": exp, "iat": now, "jti": str(uuid.uuid4()), "iss": ctx.issuer, "aud": ctx.issuer,
              "sub": ctx.subject, "typ": TYP_OFFLINE if offline else TYP_REFRESH,
              "azp": ctx.client.client_id, "sid": ctx.sid, "scope": ctx.scope, **ctx.refresh_extra_claims}
    if ctx.refresh_cnf:
        claims["cnf"] = ctx.refresh_cnf
    kid, key = refresh_signing_key(ctx.realm)
    return jose.sign(claims, alg=REFRESH_ALG, key=key, kid=kid), claims


def _access_token(ctx, now, lifespan=None):
    """(signed access token, its claims)."""
    client = ctx.client
    at_alg = client.attributes.get(ACCESS_SIGNING) or ctx.realm.default_signature_algorithm
    at_claims = access_token_claims(ctx, now, lifespan)
    typ = "at+jwt" if client.attributes.get("access.token.header.type.rfc9068") == "true" else "JWT"
    return _sign(ctx.realm, at_alg, at_claims, typ), at_claims


def _id_token(ctx, now, access_token, code=""):
    alg = ctx.client.attributes.get(ID_SIGNING) or ctx.realm.default_signature_algorithm
    return _signed_then_encrypted(ctx, alg, id_token_claims(ctx, now, access_token, alg, code), ID_ENCRYPTION)


def token_response(ctx, *, with_refresh=True):
    """The JSON body of a successful token response, and the access token's claims."""
    now = int(time.time())
    client = ctx.client
    realm = ctx.realm
    access_token, at_claims = _access_token(ctx, now)
    body = {"access_token": access_token, "expires_in": at_claims["exp"] - now}
    if with_refresh and ctx.client_session is not None:
        token, rt_claims = refresh_token(ctx, now)
        body["refresh_expires_in"] = 0 if rt_claims["typ"] == TYP_OFFLINE and not realm.offline_session_max_lifespan_enabled \
            else rt_claims["exp"] - now
        body["refresh_token"] = token
        ctx.refresh_claims = rt_claims
    else:
        body["refresh_expires_in"] = 0
    body["token_type"] = ctx.token_type
    if ctx.openid:
        body["id_token"] = _id_token(ctx, now, access_token)
    body["not-before-policy"] = max(realm.not_before, client.not_before)
    if ctx.sid:
        body["session_state"] = ctx.sid
    body["scope"] = ctx.scope
    return body, at_claims


def front_channel_response(ctx, *, code="", access_token=False, id_token=False):
    """The tokens of an implicit or hybrid authorization response (OIDC Core §3.2.2.5, §3.3.2.5):
    never a refresh token; the access token lives for the realm's implicit-flow lifespan; the ID
    token binds the code (c_hash) and the access token (at_hash) it travels with."""
    now = int(time.time())
    params, token = {}, ""
    if access_token:
        token, claims = _access_token(ctx, now, ctx.realm.access_token_lifespan_for_implicit_flow)
        params.update(access_token=token, token_type="Bearer", expires_in=claims["exp"] - now)
    if id_token:
        params["id_token"] = _id_token(ctx, now, token, code)
    return params


# Reading tokens -------------------------------------------------------------------------------

class TokenError(OidcError):
    """The token is not one of this realm's valid tokens."""


def decode(realm, token, issuer, *, now=None, leeway=0, remember=False):
    """Verified claims of a token this realm issued (any typ), or TokenError. ``remember``: keep
    the verified signature with the realm's keys (``LoadedKeys.verified``), for a bearer sent on
    every request (the Admin API's): later calls skip parsing and the signature, never the
    checks that follow it."""
    keys = realm_keys(realm)
    if remember:
        claims = keys.verified.get(token)
        if claims is None:
            claims = _verified(realm, keys, token)
            keys.remember(token, claims)
        claims = dict(claims)  # the caller's own copy: the remembered one stays as verified
    else:
        claims = _verified(realm, keys, token)
    if claims.get("iss") != issuer:
        raise TokenError("wrong issuer")
    exp = claims.get("exp")
    now = int(time.time()) if now is None else now
    if exp is not None and (not isinstance(exp, int) or exp + leeway <= now):
        raise TokenError("expired")
    if claims.get("iat", 0) < max(realm.not_before, 0):
        raise TokenError("issued before the realm's not-before")
    return claims


def _verified(realm, keys, token):
    try:
        header, claims, signing_input, signature = jose.parse(token)
        alg, kid = header.get("alg"), header.get("kid")
        if alg == REFRESH_ALG:
            key = refresh_verifying_keys(realm, keys).get(kid)
            if key is None:
                raise TokenError("unknown key")
        elif alg in jose.SYMMETRIC:  # an access or ID token a client's HS256/HS384 signed
            entry = keys.secrets.get(kid)
            if entry is None or entry[0] != alg:
                raise TokenError("unknown key")
            key = entry[1]
        else:
            entry = keys.by_kid.get(kid)
            if entry is None or entry[0] != alg:
                raise TokenError("unknown key")
            key = entry[1]
        jose.verify_signature(alg, key, signing_input, signature)
    except jose.JoseError as exc:
        raise TokenError(str(exc)) from exc
    return claims
