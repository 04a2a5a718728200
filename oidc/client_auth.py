"""Client authentication at the token, introspection and revocation endpoints.

Methods (RFC 6749 §2.3, OIDC Core §9): ``client_secret_basic``, ``client_secret_post``,
``client_secret_jwt`` (HS256/384/512 keyed with the secret), ``private_key_jwt`` (the client's
JWKS from the attribute ``jwks.string`` or fetched from ``jwks.url``), and ``none`` for public
clients; ``tls_client_auth`` and ``self_signed_tls_client_auth`` (RFC 8705: the client certificate
``oidc.mtls`` finds). Which one a confidential client must use follows its authenticator type, as in
Keycloak (``client-secret``, ``client-secret-jwt``, ``client-jwt``, ``client-x509``; and
``client-x509-self-signed``, which Keycloak lacks). Any failure is 401 invalid_client.
Secrets are compared as SHA-256 digests in constant time (Client.check_secret): microseconds.
"""
import base64
import binascii
import functools
import hashlib
import json
import threading
import time
from urllib.parse import unquote_plus

from django.core.cache import cache
from jwcrypto import jwk

from realms.http.outbound import OutboundError, fetch_json

from . import jose, mtls
from .errors import InvalidClient

ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
SECRET, SECRET_JWT, PRIVATE_KEY_JWT = "client-secret", "client-secret-jwt", "client-jwt"
LEEWAY = 10
DEFAULT_ASSERTION_MAX_EXP = 60
JWKS_TTL = 300
JWKS_REFETCH_MIN_INTERVAL = 10


def _basic_credentials(request):
    header = request.META.get("HTTP_AUTHORIZATION", "")
    if not header[:6].lower() == "basic ":
        return None
    try:
        decoded = base64.b64decode(header[6:].strip(), validate=True).decode()
        client_id, secret = decoded.split(":", 1)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidClient("Invalid client credentials", basic=True) from None
    # RFC 6749 §2.3.1: both parts are form-urlencoded before being joined.
    return unquote_plus(client_id), unquote_plus(secret)


def authenticate(request, realm_config, params, *, audiences, allow_bearer_only=False):
    """The ClientConfig of the authenticated client, or InvalidClient."""
    basic = _basic_credentials(request)
    assertion = params.get("client_assertion", "")
    client_id = params.get("client_id", "")
    if basic is not None:
        if client_id and client_id != basic[0]:
            raise InvalidClient("Inconsistent client_id", basic=True)
        client_id = basic[0]
    elif assertion and not client_id:
        try:
            _, claims, _, _ = jose.parse(assertion)
        except jose.JoseError:
            raise InvalidClient("Invalid client assertion") from None
        client_id = claims.get("sub") if isinstance(claims.get("sub"), str) else ""
    if not client_id:
        raise InvalidClient("Missing client_id parameter", basic=basic is not None)
    config = realm_config.client(client_id)
    if config is None or not config.client.enabled or config.client.protocol != "openid-connect":
        raise InvalidClient(basic=basic is not None)
    client = config.client
    if client.public_client:
        return config, "none"
    if client.bearer_only and not allow_bearer_only:
        raise InvalidClient("Bearer-only clients cannot request tokens", basic=basic is not None)
    kind = client.client_authenticator_type or SECRET
    if kind == SECRET:
        secret = basic[1] if basic is not None else params.get("client_secret", "")
        if assertion or not client.check_secret(secret):
            raise InvalidClient(basic=basic is not None)
        return config, "client_secret_basic" if basic is not None else "client_secret_post"
    if kind in (SECRET_JWT, PRIVATE_KEY_JWT) and basic is None and assertion:
        if params.get("client_assertion_type") != ASSERTION_TYPE:
            raise InvalidClient("Invalid client_assertion_type")
        _verify_assertion(realm_config, config, assertion, kind, audiences)
        return config, "client_secret_jwt" if kind == SECRET_JWT else "private_key_jwt"
    # One method per request (RFC 6749 §2.3): a certificate client sending a secret is refused.
    if kind in (mtls.TLS_CLIENT_AUTH, mtls.SELF_SIGNED) and not (basic or assertion or params.get("client_secret")):
        return config, _verify_certificate(request, client, kind)
    raise InvalidClient(basic=basic is not None)


def _verify_certificate(request, client, kind):
    """RFC 8705 §2: the request's client certificate is the client's; its method's name."""
    certificate = mtls.client_certificate(request)
    if certificate is None:
        raise InvalidClient("Client certificate missing")
    if kind == mtls.TLS_CLIENT_AUTH:
        if not mtls.subject_matches(client.attributes, certificate):
            raise InvalidClient("Certificate subject DN does not match the client's")
        return "tls_client_auth"
    if not _registered_key(client, certificate):
        raise InvalidClient("Certificate public key is not one the client registered")
    return "self_signed_tls_client_auth"


def _registered_key(client, certificate):
    """RFC 8705 §2.2: the certificate's public key is one of the client's registered keys: its
    JWKS (``jwks.string`` or ``jwks.url``, found as private_key_jwt finds them) or its
    ``jwt.credential.certificate``. An unknown key fetches a ``jwks.url`` again once (rotation)."""
    presented = jwk.JWK.from_pyca(certificate.public_key()).thumbprint()
    registered = mtls.parse_certificate(client.attributes.get("jwt.credential.certificate") or "")
    if registered is not None and jwk.JWK.from_pyca(registered.public_key()).thumbprint() == presented:
        return True
    attrs = client.attributes
    if not _uses_jwks_url(attrs):
        return any(key.thumbprint() == presented for key in _parse_jwks(attrs.get("jwks.string", "")).values())
    url = attrs.get("jwks.url", "")
    try:
        return bool(url) and any(any(key.thumbprint() == presented for key in _fetch_keys(url, force=force).values())
                                 for force in (False, True))
    except OutboundError:
        raise InvalidClient("Client keys unavailable") from None


def _verify_assertion(realm_config, config, assertion, kind, audiences):
    client = config.client
    try:
        header, claims, signing_input, signature = jose.parse(assertion)
    except jose.JoseError:
        raise InvalidClient("Invalid client assertion") from None
    alg = header.get("alg")
    if kind == SECRET_JWT:
        if alg not in jose.SYMMETRIC:
            raise InvalidClient("Algorithm not allowed for client_secret_jwt")
        key = client.get_secret().encode()
        if not key:
            raise InvalidClient()
    else:
        if alg not in jose.ASYMMETRIC:
            raise InvalidClient("Algorithm not allowed for private_key_jwt")
        key = client_key(client, header.get("kid"))
    required_alg = client.attributes.get("token.endpoint.auth.signing.alg")
    if required_alg and alg != required_alg:
        raise InvalidClient("Algorithm not allowed for this client")
    try:
        jose.verify_signature(alg, key, signing_input, signature)
    except jose.JoseError:
        raise InvalidClient("Invalid client assertion signature") from None
    if claims.get("iss") != client.client_id or claims.get("sub") != client.client_id:
        raise InvalidClient("Client assertion iss and sub must be the client_id")
    aud = claims.get("aud")
    aud = aud if isinstance(aud, list) else [aud]
    if not any(a in audiences for a in aud):
        raise InvalidClient("Client assertion has a wrong audience")
    now = int(time.time())
    exp = claims.get("exp")
    if not isinstance(exp, int) or exp + LEEWAY <= now:
        raise InvalidClient("Client assertion expired or without exp")
    for name in ("nbf", "iat"):
        value = claims.get(name)
        if value is not None and (not isinstance(value, int) or value - LEEWAY > now):
            raise InvalidClient(f"Client assertion {name} is in the future")
    # A stolen assertion must not stay usable for years: usable for at most the client's
    # ``token.endpoint.auth.signing.max.exp`` seconds after iat, or before exp without iat (Keycloak).
    max_exp = max_assertion_lifetime(client)
    iat = claims.get("iat")
    if iat is None and exp - now > max_exp:
        raise InvalidClient("Client assertion expiration is too far in the future and iat claim not present")
    if iat is not None and now > iat + max_exp:
        raise InvalidClient("Client assertion was issued too far in the past to be used now")
    jti = claims.get("jti")
    if not isinstance(jti, str) or not jti:
        raise InvalidClient("Client assertion without jti")
    # One use per jti until the assertion expires (RFC 7523 §3 item 7); add() is atomic.
    key_name = "oidc:assertion-jti:" + hashlib.sha256(
        f"{realm_config.realm.pk}\0{client.pk}\0{jti}".encode()).hexdigest()
    if not cache.add(key_name, 1, timeout=max(min(exp - now, max_exp), 0) + LEEWAY):
        raise InvalidClient("Client assertion already used (jti replay)")


def max_assertion_lifetime(client):
    """The client attribute ``token.endpoint.auth.signing.max.exp`` (seconds), 60 when unset or bad."""
    try:
        value = int(client.attributes.get("token.endpoint.auth.signing.max.exp") or 0)
    except (TypeError, ValueError):
        value = 0
    return value if value > 0 else DEFAULT_ASSERTION_MAX_EXP


# Client keys ----------------------------------------------------------------------------------

@functools.lru_cache(maxsize=512)
def _parse_jwks(text, use="sig"):
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    return _keys_by_kid(data, use)


def _keys_by_kid(data, use="sig"):
    out = {}
    for i, entry in enumerate((data or {}).get("keys", []) if isinstance(data, dict) else []):
        try:
            key = jwk.JWK(**entry)
        except (jwk.InvalidJWKValue, TypeError, ValueError):
            continue
        if entry.get("use", "sig") != use or key.has_private:
            continue  # a private key in a published JWKS is a mistake; never use it
        out[entry.get("kid") or f"#{i}"] = key
    return out


_jwks_lock = threading.Lock()
_jwks_by_url = {}  # (url, use) -> (fetched at, {kid: JWK})


def _fetch_keys(url, force=False, use="sig"):
    now = time.monotonic()
    entry = _jwks_by_url.get((url, use))
    if entry is not None and (now - entry[0] < JWKS_TTL and not force or now - entry[0] < JWKS_REFETCH_MIN_INTERVAL):
        return entry[1]
    try:
        keys = _keys_by_kid(fetch_json(url), use)
    except OutboundError:
        if entry is not None:
            return entry[1]
        raise
    with _jwks_lock:
        _jwks_by_url[(url, use)] = (now, keys)
    return keys


def _pick(keys, kid):
    if kid:
        return keys.get(kid)
    return next(iter(keys.values())) if len(keys) == 1 else None


def jwks_key(url, kid):
    """The signing key ``kid`` (the only one when no kid) of the JWKS at ``url``, fetched through
    realms.http.outbound and cached JWKS_TTL seconds; an unknown kid fetches it again once (a key
    rotated in since), at most every JWKS_REFETCH_MIN_INTERVAL seconds. None when no key matches;
    OutboundError when the JWKS was never read. Client assertions and the JWT authorization
    grant's identity providers share it."""
    key = _pick(_fetch_keys(url), kid)
    if key is None:
        key = _pick(_fetch_keys(url, force=True), kid)
    return key


def _uses_jwks_url(attrs):
    return attrs.get("use.jwks.url", "false") == "true" or (attrs.get("jwks.url") and not attrs.get("jwks.string"))


def client_encryption_keys(client):
    """The client's public keys with ``use: enc`` (kid -> JWK), from its ``jwks.string`` or its
    ``jwks.url`` (fetched and cached as its signing keys are): what its encrypted ID tokens and
    userinfo are encrypted to. Empty when it has none or they cannot be fetched."""
    attrs = client.attributes
    if _uses_jwks_url(attrs):
        try:
            return _fetch_keys(attrs.get("jwks.url", ""), use="enc") if attrs.get("jwks.url") else {}
        except OutboundError:
            return {}
    return _parse_jwks(attrs.get("jwks.string", ""), "enc")


def client_key(client, kid):
    """The client's public key for ``kid`` (its ``jwks.string``, or its ``jwks.url`` fetched and
    cached), or InvalidClient: what verifies its assertions and its signed requests."""
    attrs = client.attributes
    if _uses_jwks_url(attrs):
        url = attrs.get("jwks.url", "")
        if not url:
            raise InvalidClient("Client has no keys")
        try:
            key = jwks_key(url, kid)
        except OutboundError:
            raise InvalidClient("Client keys unavailable") from None
    else:
        key = _pick(_parse_jwks(attrs.get("jwks.string", "")), kid)
    if key is None:
        raise InvalidClient("No client key matches the assertion")
    return key
