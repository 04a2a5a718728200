"""The JWT authorization grant (RFC 7523 §2.1, RFC 7521 §4.1), as Keycloak 26.6 has it.

A confidential client whose attribute ``oauth2.jwt.authorization.grant.enabled`` is "true" posts
``grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer`` and ``assertion``, a JWT an identity
provider of the realm signed for a user. The provider is found by the assertion's ``iss`` (its
config ``issuer``) among the realm's enabled providers, and must be named in the client's
``oauth2.jwt.authorization.grant.idp`` ("##"-separated, Keycloak's multivalued attribute). It
trusts assertions when it is of Keycloak's dedicated type ``jwt-authorization-grant`` or an
OpenID Connect provider with ``jwtAuthorizationGrantEnabled``; its keys are its JWKS URL
(fetched through realms.http.outbound, shared with client assertions: ``client_auth.jwks_key``)
or its configured ``publicKeySignatureVerifier``. ``sub`` is the provider's id of the user: the
user linked to it (a federated identity) gets the tokens, nobody is created.

Answers as Keycloak's: every refusal is 400 invalid_grant with Keycloak's description, the event
LOGIN_ERROR with error ``invalid_request`` and the description as ``reason``; success is LOGIN.
The tokens come from a transient session (Keycloak's TRANSIENT user session): an access token
(and an ID token for ``scope=openid``) without ``sid``, no refresh token, no session stored.
"""
import hashlib
import json
import logging
import time
from dataclasses import dataclass

from django.core.cache import cache
from jwcrypto import jwk
from jwcrypto.common import JWException

from realms.brokering import context as brokering
from realms.http.outbound import OutboundError
from realms.models import FederatedIdentity

from . import jose, tokens
from .client_auth import jwks_key
from .errors import InvalidGrant
from .grants import register_grant, succeed, token_context, token_endpoint_url

logger = logging.getLogger("idp.oidc.jwt_grant")

GRANT_TYPE = "urn:ietf:params:oauth:grant-type:jwt-bearer"
FEATURE = "jwt-authorization-grant"
EVENT = "LOGIN"

# Client attributes (Keycloak's OIDCConfigAttributes).
CLIENT_ENABLED = "oauth2.jwt.authorization.grant.enabled"
CLIENT_IDPS = "oauth2.jwt.authorization.grant.idp"

# Identity-provider config keys (Keycloak's JWTAuthorizationGrantConfig).
ENABLED = "jwtAuthorizationGrantEnabled"
REUSE_ALLOWED = "jwtAuthorizationGrantAssertionReuseAllowed"
MAX_EXPIRATION = "jwtAuthorizationGrantMaxAllowedAssertionExpiration"
SIGNATURE_ALG = "jwtAuthorizationGrantAssertionSignatureAlg"
LIMIT_TOKEN_EXP = "jwtAuthorizationGrantLimitAccessTokenExp"
CLOCK_SKEW = "jwtAuthorizationGrantAllowedClockSkew"
DEFAULT_MAX_EXPIRATION = 300

# Keycloak's provider id of the dedicated type, and the OpenID Connect types that may also trust.
JWT_PROVIDER = "jwt-authorization-grant"
OIDC_PROVIDERS = ("oidc", "keycloak-oidc")

# Event details (Keycloak's Details names).
DETAIL_IDP, DETAIL_ISSUER, DETAIL_USER_ID = "identity_provider", "identity_provider_issuer", "identity_provider_user_id"


class Refused(InvalidGrant):
    """Keycloak answers every failed check of this grant the same way: invalid_grant with the
    check's description, the event error ``invalid_request`` and the description as reason."""

    def __init__(self, description):
        super().__init__(description, event_error="invalid_request")


def _true(value):
    return str(value or "").strip().lower() == "true"


def _int(value, default):
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return default


@dataclass(frozen=True)
class Trust:
    """What an identity provider's config says of assertions it signs."""

    idp: object
    clock_skew: int
    max_expiration: int
    reuse_allowed: bool
    signature_alg: str
    limit_token_exp: bool

    @classmethod
    def of(cls, idp):
        """The provider's settings when it takes part in the grant, else None."""
        config = idp.config or {}
        if idp.provider_id == JWT_PROVIDER:
            skew = config.get(CLOCK_SKEW)
        elif idp.provider_id in OIDC_PROVIDERS and _true(config.get(ENABLED)):
            # Keycloak's OpenID Connect provider tolerates its own allowedClockSkew here too.
            skew = config.get("allowedClockSkew")
        else:
            return None
        return cls(idp, max(_int(skew, 0), 0), _int(config.get(MAX_EXPIRATION), DEFAULT_MAX_EXPIRATION),
                   _true(config.get(REUSE_ALLOWED)), (config.get(SIGNATURE_ALG) or "").strip(),
                   _true(config.get(LIMIT_TOKEN_EXP)))


# The grant ---------------------------------------------------------------------------------------

def jwt_bearer(exchange):
    try:
        return _grant(exchange)
    except Refused as exc:
        exchange.details["reason"] = exc.description  # Keycloak's event detail of every refusal
        raise


def _grant(exchange):
    params = exchange.params
    assertion = params.get("assertion")
    if assertion is None:
        raise Refused("Missing parameter:assertion")
    header, claims, signing_input, signature = _parse(assertion)
    iss, sub = claims.get("iss"), claims.get("sub")
    if iss is not None:
        exchange.details[DETAIL_ISSUER] = iss[:255]
    if sub is not None:
        exchange.details[DETAIL_USER_ID] = sub[:255]
    _check_client(exchange.client_config.client)
    if not iss:
        raise Refused("Missing claim: iss")
    if not sub:
        raise Refused("Missing claim: sub")
    idp = _provider_for(exchange.realm, iss)
    if idp is None:
        raise Refused("No Identity Provider for provided issuer")
    exchange.details[DETAIL_IDP] = idp.alias
    if idp.alias not in allowed_providers(exchange.client_config.client):
        raise Refused("Identity Provider is not allowed for the client")
    trust = Trust.of(idp)
    if trust is None:
        raise Refused("Identity Provider is not configured for JWT Authorization Grant")
    now = int(time.time())
    remember_for = _check_active(claims, trust, now)
    _check_algorithm(header, trust)
    _check_audience(claims, exchange.issuer)
    _check_signature(header, signing_input, signature, idp)
    if not trust.reuse_allowed:
        _use_once(exchange.realm, idp, claims["jti"], remember_for)
    user = _linked_user(idp, sub)
    exchange.user_id = user.pk
    if not user.enabled:
        raise Refused("User is not enabled")
    if user.required_actions:
        raise Refused("Account is not fully set up")
    exchange.details["username"] = user.username
    scopes, openid = tokens.resolve_scopes(exchange.client_config, params.get("scope", ""))
    ctx = token_context(exchange, user, scopes, openid)
    if trust.limit_token_exp:
        _limit_expiry(ctx, claims["exp"], now)
    # A transient session: nothing stored, no sid, no refresh token (Keycloak's useRefreshToken false).
    body, at_claims = tokens.token_response(ctx, with_refresh=False)
    return succeed(exchange, ctx, "LOGIN", body, at_claims)


def _parse(assertion):
    """The assertion's parts, its claims shaped as a JWT's (else it is not a valid JWT)."""
    try:
        header, claims, signing_input, signature = jose.parse(assertion)
    except jose.JoseError:
        raise Refused("The provided assertion is not a valid JWT") from None
    strings = all(claims.get(n) is None or isinstance(claims[n], str) for n in ("iss", "sub", "jti"))
    numbers = all(claims.get(n) is None or (isinstance(claims[n], int) and not isinstance(claims[n], bool))
                  for n in ("exp", "iat", "nbf"))
    aud = claims.get("aud")
    audience = aud is None or isinstance(aud, str) or (isinstance(aud, list) and all(isinstance(a, str) for a in aud))
    if not (strings and numbers and audience and isinstance(header.get("alg", ""), str)):
        raise Refused("The provided assertion is not a valid JWT")
    return header, claims, signing_input, signature


def _check_client(client):
    if client.public_client:
        raise Refused("Public client not allowed to use authorization grant")
    if not _true(client.attributes.get(CLIENT_ENABLED)):
        raise Refused("JWT Authorization Grant is not supported for the requested client")


def allowed_providers(client):
    """The aliases the client's ``oauth2.jwt.authorization.grant.idp`` names."""
    return {a.strip() for a in (client.attributes.get(CLIENT_IDPS) or "").split("##") if a.strip()}


def _provider_for(realm, issuer):
    """The realm's enabled identity provider whose ``issuer`` is the assertion's; one that takes
    part in the grant first when several share an issuer, then by alias."""
    found = [idp for idp in brokering.identity_providers(realm).values()
             if idp.enabled and (idp.config or {}).get("issuer") == issuer]
    found.sort(key=lambda idp: (Trust.of(idp) is None, idp.alias))
    return found[0] if found else None


def _check_active(claims, trust, now):
    """Keycloak's validateTokenActive: exp present and not passed, nbf and iat not in the future
    (with the provider's clock skew), the lifetime at most the maximum expiration, a jti when
    reuse is not allowed. Returns how long the jti must be remembered (seconds)."""
    skew, max_exp = trust.clock_skew, trust.max_expiration
    exp, iat, nbf = claims.get("exp"), claims.get("iat"), claims.get("nbf")
    if exp is None:
        raise Refused("Token exp claim is required")
    if now > exp + skew or (nbf and now < nbf - skew):
        raise Refused("Token is not active")
    if iat is None:
        if exp - now > max_exp:
            raise Refused("Token expiration is too far in the future and iat claim not present in token")
        usable_until = exp + skew
    else:
        if iat - skew > now:
            raise Refused("Token was issued in the future")
        if min(exp - now, max_exp) <= 0:
            raise Refused("Token is not active")
        if now > iat + max_exp:
            raise Refused("Token was issued too far in the past to be used now")
        usable_until = min(exp + skew, iat + max_exp)
    if not trust.reuse_allowed and not claims.get("jti"):
        raise Refused("Token jti claim is required")
    return max(usable_until - now, 0) + 1


def _check_algorithm(header, trust):
    # Asymmetric only: "none" and HMAC (a public key must never become an HMAC secret) are refused.
    alg = header.get("alg") or ""
    if alg not in jose.ASYMMETRIC or (trust.signature_alg and alg != trust.signature_alg):
        raise Refused("Invalid signature algorithm")


def _check_audience(claims, issuer):
    aud = claims.get("aud")
    audiences = [aud] if isinstance(aud, str) else list(aud or [])
    if not set(audiences) & {issuer, token_endpoint_url(issuer)}:
        raise Refused("Invalid token audience")
    if len(audiences) > 1:
        raise Refused("Multiple audiences not allowed")


def _check_signature(header, signing_input, signature, idp):
    try:
        key = provider_key(idp, header.get("kid") or "")
        if key is None:
            raise jose.JoseError("no key")
        jose.verify_signature(header["alg"], key, signing_input, signature)
    except (jose.JoseError, OutboundError, ValueError) as exc:
        logger.info("jwt authorization grant: %s: signature not verified (%s)", idp.alias, exc.__class__.__name__)
        raise Refused("Invalid signature") from None


def _use_once(realm, idp, jti, seconds):
    """RFC 7523 §3 item 7: one use per jti until the assertion can no longer be used; the cache's
    add() is atomic, so two concurrent requests cannot both win. Recorded only once the
    signature verified: nobody but the issuer can spend its jtis."""
    name = "oidc:jwt-grant-jti:" + hashlib.sha256(f"{realm.pk}\0{idp.alias}\0{jti}".encode()).hexdigest()
    if not cache.add(name, 1, timeout=seconds):
        raise Refused("Token reuse detected")


def _linked_user(idp, subject):
    link = (FederatedIdentity.objects.filter(identity_provider=idp, subject=subject)
            .select_related("user").first())
    if link is None:
        raise Refused("User not found")
    return link.user


def _limit_expiry(ctx, assertion_exp, now):
    """``jwtAuthorizationGrantLimitAccessTokenExp``: the access token expires no later than the
    assertion."""
    lifespan = _int(ctx.client.attributes.get("access.token.lifespan"), 0) or ctx.realm.access_token_lifespan
    if assertion_exp < now + lifespan:
        ctx.extra_claims = {**ctx.extra_claims, "exp": assertion_exp}


# The provider's keys ------------------------------------------------------------------------------

def provider_key(idp, kid):
    """The key that checks assertions of ``idp`` signed with ``kid``: from its JWKS URL when
    ``useJwksUrl`` is on (or unset with a JWKS URL and no configured key), else its configured
    ``publicKeySignatureVerifier`` (a PEM key or certificate, a JWK or a JWKS), which
    ``publicKeySignatureVerifierKeyId`` may pin to one kid. None when no key fits."""
    config = idp.config or {}
    configured = (config.get("publicKeySignatureVerifier") or "").strip()
    use_url = config.get("useJwksUrl")
    if _true(use_url) or (use_url is None and config.get("jwksUrl") and not configured):
        url = config.get("jwksUrl") or ""
        return jwks_key(url, kid or None) if url else None
    if not configured:
        return None
    keys = _configured_keys(configured)
    if len(keys) == 1 and "" in keys:
        wanted = (config.get("publicKeySignatureVerifierKeyId") or "").strip()
        return keys[""] if not (wanted and kid and kid != wanted) else None
    if kid:
        return keys.get(kid)
    return next(iter(keys.values())) if len(keys) == 1 else None


def _configured_keys(text):
    """{kid: public JWK} of a configured key: a JWKS or a JWK by their kids, a PEM key as ""."""
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except ValueError:
            return {}
        entries = data.get("keys") if isinstance(data, dict) and "keys" in data else [data]
        out = {}
        for entry in entries if isinstance(entries, list) else []:
            try:
                key = jwk.JWK(**entry)
            except (JWException, TypeError, ValueError):
                continue
            if not key.has_private and entry.get("use", "sig") == "sig":
                out[entry.get("kid") or ""] = key
        return out
    body = "".join("".join(line.split()) for line in text.splitlines() if not line.startswith("-----"))
    for kind in ("PUBLIC KEY", "CERTIFICATE"):
        try:
            key = jwk.JWK.from_pem(f"-----BEGIN {kind}-----\n{body}\n-----END {kind}-----\n".encode())
        except (JWException, ValueError, TypeError):
            continue
        if not key.has_private:
            return {"": key}
    return {}


def register():
    """Called from OidcConfig.ready: the grant, behind the server feature jwt-authorization-grant."""
    register_grant(GRANT_TYPE, jwt_bearer, EVENT, feature=FEATURE)
