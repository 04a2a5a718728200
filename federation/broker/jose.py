"""The provider's signed tokens, checked as a client checks them: the signature against the
provider's keys (its JWKS, fetched through ``realms.http.outbound`` and cached per process, fetched
again when a token names a ``kid`` not seen yet; or a key configured on the provider), then the
claims (issuer, audience, authorized party, nonce, lifetime with the allowed clock skew).

``none`` is never accepted, and an HMAC algorithm only with the client secret: a token signed
with HS256 "by" a provider's public key (the key confusion attack) is refused."""
import base64
import json
import threading
import time

from jwcrypto import jwk, jws
from jwcrypto.common import JWException

from realms.brokering.providers import BrokerError
from realms.data.crypto import constant_time_equals
from realms.http import outbound

ASYMMETRIC = {"RS256": "RSA", "RS384": "RSA", "RS512": "RSA", "PS256": "RSA", "PS384": "RSA", "PS512": "RSA",
              "ES256": "EC", "ES384": "EC", "ES512": "EC", "EdDSA": "OKP"}
HMAC = ("HS256", "HS384", "HS512")
# A JWKS is fetched again for an unknown kid at most this often (a flood of made-up kids must
# not turn into a flood of calls to the provider); Keycloak's minTimeBetweenRequests.
MIN_REFRESH_SECONDS = 10
JWKS_MAX_AGE_SECONDS = 24 * 3600


def invalid(detail, error="invalid_token"):
    """A token that proves nothing: the person reads Keycloak's generic message."""
    return BrokerError("identityProviderUnexpectedErrorMessage", error, detail)


def configured_key(text):
    """A key configured on the provider (``publicKeySignatureVerifier``): a PEM public key or
    certificate, the same without its PEM lines, or a JWK as JSON. ValueError when none."""
    text = (text or "").strip()
    if text.startswith("{"):
        try:
            key = jwk.JWK.from_json(text)
        except (JWException, ValueError) as exc:
            raise ValueError(f"not a JWK ({exc})") from None
        if key.has_private or key.get("kty") == "oct":
            raise ValueError("a public key is expected")
        return key
    body = "".join(line for line in text.splitlines() if not line.startswith("-----"))
    body = "".join(body.split())
    for header in ("PUBLIC KEY", "CERTIFICATE"):
        pem = f"-----BEGIN {header}-----\n{body}\n-----END {header}-----\n".encode()
        try:
            return jwk.JWK.from_pem(pem)
        except (JWException, ValueError, TypeError):
            continue
    raise ValueError("not a PEM public key or certificate")


class _Jwks:
    """One provider's JWKS as last fetched."""

    def __init__(self):
        self.keys, self.fetched = [], 0.0
        self.lock = threading.Lock()


_cache = {}
_cache_lock = threading.Lock()


def _entry(url):
    with _cache_lock:
        return _cache.setdefault(url, _Jwks())


def _fetch(url):
    try:
        document = outbound.fetch_json(url)
    except outbound.OutboundError as exc:
        raise invalid(f"the provider's JWKS at {url} cannot be read: {exc}", "invalid_jwks") from None
    keys = []
    for item in (document.get("keys") or []) if isinstance(document, dict) else []:
        try:
            key = jwk.JWK(**item)
        except (JWException, ValueError, TypeError):
            continue
        if item.get("use", "sig") == "sig" and key.get("kty") != "oct" and not key.has_private:
            keys.append(key)
    return keys


def jwks_keys(url, kid):
    """The provider's keys that may have signed a token naming ``kid`` (all of them when it names
    none). Fetched when not cached or too old, and again when ``kid`` is unknown (at most every
    ``MIN_REFRESH_SECONDS``)."""
    entry = _entry(url)
    with entry.lock:
        now = time.monotonic()
        stale = not entry.fetched or now - entry.fetched > JWKS_MAX_AGE_SECONDS
        unknown = kid and not any(k.get("kid") == kid for k in entry.keys)
        if stale or (unknown and now - entry.fetched >= MIN_REFRESH_SECONDS):
            entry.keys, entry.fetched = _fetch(url), now
        keys = entry.keys
    return [k for k in keys if k.get("kid") == kid] if kid else keys


def forget_jwks():
    """Drop every cached JWKS (tests; a changed provider)."""
    with _cache_lock:
        _cache.clear()


def _b64json(segment):
    try:
        return json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))
    except (ValueError, TypeError) as exc:
        raise invalid(f"malformed token ({exc})") from None


def header_of(token):
    parts = (token or "").split(".")
    if len(parts) != 3:
        raise invalid("not a signed JWT (JWS compact serialization expected)")
    header = _b64json(parts[0])
    if not isinstance(header, dict):
        raise invalid("malformed token header")
    return header


def unverified_claims(token):
    """The payload without checking anything: only where signature validation is switched off and
    the token came straight from the provider's token endpoint over TLS (OIDC Core 3.1.3.7)."""
    header_of(token)
    claims = _b64json(token.split(".")[1])
    if not isinstance(claims, dict):
        raise invalid("the token's payload is not a JSON object")
    return claims


def _keys_for(settings, header):
    alg, kid = header.get("alg"), header.get("kid") or ""
    if alg in HMAC:
        secret = settings.get("clientSecret")
        if not secret:
            raise invalid(f"{alg} needs the client secret, none is configured")
        return [jwk.JWK(kty="oct", k=base64.urlsafe_b64encode(secret.encode()).rstrip(b"=").decode())]
    # useJwksUrl unset: a configured key wins (Keycloak's default off), else the provider's JWKS.
    if settings.flag("useJwksUrl", default=not settings.get("publicKeySignatureVerifier")) and settings.get("jwksUrl"):
        keys = jwks_keys(settings.get("jwksUrl"), kid)
    else:
        configured = settings.get("publicKeySignatureVerifier")
        wanted = settings.get("publicKeySignatureVerifierKeyId")
        if not configured or (wanted and kid and kid != wanted):
            keys = []
        else:
            keys = [configured_key(configured)]
    return [k for k in keys if k.get("kty") == ASYMMETRIC[alg]]


def verify(token, settings):
    """The claims of ``token`` once its signature is verified with the provider's keys."""
    header = header_of(token)
    alg = header.get("alg")
    if alg not in ASYMMETRIC and alg not in HMAC:
        raise invalid(f"signature algorithm {alg!r} is not accepted")
    if "crit" in header:
        raise invalid("critical header parameters are not supported")
    keys = _keys_for(settings, header)
    if not keys:
        raise invalid(f"no key of the provider matches the token (kid {header.get('kid')!r}, alg {alg})")
    for key in keys:
        signed = jws.JWS()
        try:
            signed.deserialize(token)
            signed.verify(key, alg=alg)
        except (JWException, ValueError, TypeError):
            continue
        try:
            claims = json.loads(signed.payload)
        except ValueError:
            raise invalid("the token's payload is not JSON") from None
        if not isinstance(claims, dict):
            raise invalid("the token's payload is not a JSON object")
        return claims
    raise invalid("the token's signature is not valid")


def checked_claims(token, settings):
    """The claims of a token the provider signed: verified when ``validateSignature`` is on, else
    read as they came (the token endpoint's answer over TLS); ``none`` refused either way."""
    header = header_of(token)
    if str(header.get("alg", "")).lower() == "none":
        raise invalid("unsigned tokens (alg none) are not accepted")
    if settings.flag("validateSignature"):
        return verify(token, settings)
    return unverified_claims(token)


def _audiences(claims):
    aud = claims.get("aud")
    return [aud] if isinstance(aud, str) else [a for a in aud if isinstance(a, str)] if isinstance(aud, list) else []


def check_lifetime(claims, skew, *, require_exp=True):
    now = time.time()
    exp, iat, nbf = claims.get("exp"), claims.get("iat"), claims.get("nbf")
    for name, value in (("exp", exp), ("iat", iat), ("nbf", nbf)):
        if value is not None and not isinstance(value, (int, float)):
            raise invalid(f"{name} is not a number")
    if exp is None and require_exp:
        raise invalid("the token has no exp")
    if exp is not None and exp + skew < now:
        raise invalid("the token has expired", "expired_token")
    if nbf is not None and nbf - skew > now:
        raise invalid("the token is not valid yet")
    if iat is not None and iat - skew > now:
        raise invalid("the token was issued in the future")


def check_issuer_audience(claims, settings):
    issuer = settings.get("issuer")
    if issuer and claims.get("iss") != issuer:
        raise invalid(f"wrong issuer {claims.get('iss')!r}, expected {issuer!r}")
    client_id = settings.get("clientId")
    audiences = _audiences(claims)
    if client_id not in audiences:
        raise invalid(f"wrong audience {claims.get('aud')!r}, expected {client_id!r}")
    azp = claims.get("azp")
    if azp is not None and azp != client_id:
        raise invalid(f"wrong authorized party {azp!r}, expected {client_id!r}")
    if len(audiences) > 1 and azp is None:
        raise invalid("several audiences and no authorized party (azp)")


def check_id_token(token, settings, nonce):
    """An ID token's claims once every check of OIDC Core 3.1.3.7 passes (Keycloak's)."""
    claims = checked_claims(token, settings)
    check_issuer_audience(claims, settings)
    check_lifetime(claims, settings.clock_skew)
    if not isinstance(claims.get("sub"), str) or not claims["sub"]:
        raise invalid("the ID token has no sub")
    typ = claims.get("typ")
    if typ is not None and typ != "ID" and not settings.flag("disableTypeClaimCheck"):
        raise invalid(f"the token's typ is {typ!r}, not ID")
    if nonce and not constant_time_equals(str(claims.get("nonce", "")), nonce):
        raise invalid("the ID token's nonce is not the one sent", "invalid_nonce")
    return claims
