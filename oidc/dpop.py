"""DPoP (RFC 9449): proofs of possession of a key, and the tokens bound to that key.

A proof is a compact JWS in the ``DPoP`` header, signed by the key its header carries (``jwk``).
It is checked as Keycloak's DPoPUtil checks it, with Keycloak's messages: ``typ`` ``dpop+jwt``,
an asymmetric ``alg`` of ``ALGORITHMS`` (what discovery lists), a public key only, the signature,
``htm`` and ``htu`` (the URL the client called, compared without query and fragment after RFC 3986
normalisation), ``iat`` within Keycloak's window (proof lifetime 10 s, clock skew 15 s), ``jti``
used once per URL (``cache.add``, as client assertions), ``ath`` where an access token comes
with it, and a server nonce where one is required (RFC 9449 §8, §9).

Nonces need no storage: a nonce is an HMAC (of SECRET_KEY) over a scope and the current minute,
so every process and node computes the same one, and the previous minute's is still accepted.

What the proof proves becomes ``cnf.jkt`` (the RFC 7638 SHA-256 thumbprint of its key): always in
the access token, in the refresh token for public clients only (RFC 9449 §5: a confidential
client's refresh token is bound by the client's authentication).
"""
import functools
import hashlib
import hmac
import json
import re
import time
from urllib.parse import urlsplit

from django.conf import settings
from django.core.cache import cache
from django.utils.crypto import salted_hmac
from jwcrypto import jwk

from . import jose
from .errors import InvalidDpopProof, InvalidGrant, InvalidToken, UseDpopNonce, dpop_challenge
from .realm_cache import get_realm

ALGORITHMS = sorted(jose.ASYMMETRIC)  # discovery's dpop_signing_alg_values_supported
TYP = "dpop+jwt"
PROOF_LIFETIME = 10  # Keycloak's DPoPUtil.DEFAULT_PROOF_LIFETIME
CLOCK_SKEW = 15  # Keycloak's DPoPUtil.DEFAULT_ALLOWED_CLOCK_SKEW
NONCE_WINDOW = 60
TOKEN_TYPE = "DPoP"
# Client attributes: Keycloak's "OAuth 2.0 DPoP Bound Access Tokens Enabled", and ours (Keycloak
# has no server nonces) to require a nonce in this client's proofs.
REQUIRE_DPOP = "dpop.bound.access.tokens"
REQUIRE_NONCE = "dpop.nonce.required"

# RFC 7638 §3.2: the members a thumbprint is computed over, per key type, in lexicographic order.
_REQUIRED = {"EC": ("crv", "kty", "x", "y"), "RSA": ("e", "kty", "n"), "OKP": ("crv", "kty", "x")}
_PRIVATE = ("d", "p", "q", "dp", "dq", "qi", "oth", "k")
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_DEFAULT_PORTS = {"http": 80, "https": 443}


# Nonces ----------------------------------------------------------------------------------------

def _nonce_at(scope, window, secret=None):
    return jose.b64e(salted_hmac("oidc.dpop.nonce", f"{scope}\0{window}", secret=secret,
                                 algorithm="sha256").digest()[:18])


def nonce(scope):
    """The current nonce of ``scope`` (a realm for the authorization server, an API for a resource server)."""
    return _nonce_at(scope, int(time.time()) // NONCE_WINDOW)


def _nonce_valid(scope, value):
    if not isinstance(value, str):
        return False
    window = int(time.time()) // NONCE_WINDOW
    # A nonce made under a key just rotated out (SECRET_KEY_FALLBACKS) still holds for its window.
    return any(hmac.compare_digest(value, _nonce_at(scope, w, secret))
               for secret in (settings.SECRET_KEY, *settings.SECRET_KEY_FALLBACKS) for w in (window, window - 1))


def realm_nonce_scope(realm):
    return f"realm:{realm.pk}"


def with_nonce(request, response):
    """A fresh ``DPoP-Nonce`` on the answer when this request's proof needed one (RFC 9449 §8.2)."""
    scope = getattr(request, "dpop_nonce_scope", None)
    if scope is not None and "DPoP-Nonce" not in response:
        response["DPoP-Nonce"] = nonce(scope)
    return response


# Proofs ----------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=1024)  # the same few endpoint URLs, over and over
def normalize_url(url):
    """RFC 9449 §4.3: scheme and host lower-cased, the default port dropped, percent-encoding
    normalised (RFC 3986 §6.2.2-6.2.3), query and fragment ignored; None when not an http(s) URL."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except (ValueError, TypeError, AttributeError):
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        return None

    def unescape(match):
        char = chr(int(match.group(0)[1:], 16))
        return char if char in _UNRESERVED else match.group(0).upper()

    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    netloc = host if port in (None, _DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    return f"{scheme}://{netloc}{_PERCENT.sub(unescape, parts.path) or '/'}"


@functools.lru_cache(maxsize=4096)
def _public_key(canonical):
    # A client proves with the same key over and over: parse it once per process.
    return jwk.JWK(**json.loads(canonical))


def _key(header):
    found = header.get("jwk")
    if not isinstance(found, dict):
        raise InvalidDpopProof("No JWK in DPoP header")
    if any(name in found for name in _PRIVATE):
        raise InvalidDpopProof("Private key is present in DPoP header")
    required = _REQUIRED.get(found.get("kty"))
    if required is None or not all(isinstance(found.get(name), str) for name in required):
        raise InvalidDpopProof("Unsupported key type in DPoP header")
    # RFC 7638 §3: the required members in lexicographic order, no whitespace; its SHA-256 is the
    # thumbprint, and it is also all a public key needs to be parsed.
    canonical = json.dumps({name: found[name] for name in required}, separators=(",", ":"))
    try:
        key = _public_key(canonical)
    except (jwk.InvalidJWKValue, ValueError, TypeError):
        raise InvalidDpopProof("Unsupported key type in DPoP header") from None
    return key, jose.b64e(hashlib.sha256(canonical.encode()).digest())


def proof_jkt(request, url, *, access_token=None, nonce_scope=None) -> str:
    """Verify the request's DPoP proof for ``url`` (the endpoint's URL as this server publishes
    it) and return the thumbprint of its key. ``access_token``: the token presented with it
    (``ath``); ``nonce_scope``: when given, the proof must carry that scope's current nonce.
    Raises InvalidDpopProof (UseDpopNonce for a missing or stale nonce), as the token endpoint
    answers them; ``at_resource`` turns them into a resource's 401."""
    proof = request.META.get("HTTP_DPOP", "")
    if not proof.strip():
        raise InvalidDpopProof("DPoP proof is missing")
    if "," in proof:  # the server joined several DPoP headers (RFC 9449 §4.3: exactly one)
        raise InvalidDpopProof("Multiple DPoP proofs")
    if nonce_scope is not None:
        request.dpop_nonce_scope = nonce_scope
    try:
        header, claims, signing_input, signature = jose.parse(proof.strip())
    except jose.JoseError:
        raise InvalidDpopProof("DPoP header verification failure") from None
    if header.get("typ") != TYP:
        raise InvalidDpopProof(f"Invalid or missing type in DPoP header: {header.get('typ')}")
    alg = header.get("alg")
    if alg not in jose.ASYMMETRIC:
        raise InvalidDpopProof(f"Unsupported DPoP algorithm: {alg}")
    key, jkt = _key(header)
    try:
        jose.verify_signature(alg, key, signing_input, signature)
    except jose.JoseError:
        raise InvalidDpopProof("DPoP verification failure") from None
    iat, jti, htm, htu = (claims.get(name) for name in ("iat", "jti", "htm", "htu"))
    if not (isinstance(iat, int) and not isinstance(iat, bool) and jti and isinstance(jti, str)
            and htm and isinstance(htm, str) and htu and isinstance(htu, str)):
        raise InvalidDpopProof("DPoP mandatory claims are missing")
    target = normalize_url(htu)
    if target is None:
        raise InvalidDpopProof("Malformed HTTP URL in DPoP proof")
    if target != normalize_url(url):
        raise InvalidDpopProof("DPoP HTTP URL mismatch")
    if htm != request.method:
        raise InvalidDpopProof("DPoP HTTP method mismatch")
    now = int(time.time())
    if not now - PROOF_LIFETIME - CLOCK_SKEW <= iat <= now + CLOCK_SKEW:
        raise InvalidDpopProof("DPoP proof is not active")
    if access_token is not None:
        ath = claims.get("ath")
        if not isinstance(ath, str):
            raise InvalidDpopProof("No access token hash in DPoP proof")
        expected = jose.b64e(hashlib.sha256(access_token.encode("ascii", "replace")).digest())
        if not hmac.compare_digest(ath, expected):
            raise InvalidDpopProof("DPoP proof access token hash mismatch")
    if nonce_scope is not None and not _nonce_valid(nonce_scope, claims.get("nonce")):
        who = "Resource server" if access_token is not None else "Authorization server"
        raise UseDpopNonce(f"{who} requires nonce in DPoP proof", headers={"DPoP-Nonce": nonce(nonce_scope)})
    # Last, so that only a proof good in every other way is remembered: once per URL while its
    # iat is acceptable (Keycloak keys its single-use store the same way).
    replay_key = "oidc:dpop-jti:" + hashlib.sha256(f"{target}\0{jti}".encode()).hexdigest()
    if not cache.add(replay_key, 1, timeout=max(iat + PROOF_LIFETIME + CLOCK_SKEW - now, 0) + 1):
        raise InvalidDpopProof("DPoP proof has already been used")
    return jkt


def at_resource(exc):
    """A proof's refusal as a protected resource answers it (RFC 9449 §7.1): 401 with a DPoP challenge."""
    exc.status = 401
    exc.headers["WWW-Authenticate"] = dpop_challenge(exc.error, exc.description, ALGORITHMS)
    return exc


def resource_token_error(description):
    return InvalidToken(description, headers={
        "WWW-Authenticate": dpop_challenge("invalid_token", description, ALGORITHMS)})


def check_presentation(request, token, claims, url, *, nonce_scope=None):
    """A protected resource's check of an access token and its presentation (RFC 9449 §7): a
    DPoP-bound token (``cnf.jkt``) comes with the ``DPoP`` scheme and a proof of the same key for
    this request and this token; an unbound one with the Bearer scheme. Raises a 401 OAuthError."""
    scheme = request.META.get("HTTP_AUTHORIZATION", "")[:5].lower()
    bound = (claims.get("cnf") or {}).get("jkt")
    if bound is None:
        if scheme == "dpop ":
            raise resource_token_error("The access token type is not DPoP but Authorization Header is DPoP")
        return
    if scheme != "dpop ":
        raise resource_token_error("The access token type is DPoP but Authorization Header is not DPoP")
    try:
        proven = proof_jkt(request, url, access_token=token, nonce_scope=nonce_scope)
    except (InvalidDpopProof, UseDpopNonce) as exc:
        raise at_resource(exc) from None
    if not hmac.compare_digest(str(bound), proven):
        raise resource_token_error("DPoP confirmation doesn't match DPoP proof")


# oidc.binding's questions --------------------------------------------------------------------

def _requires(client, attribute):
    return client.attributes.get(attribute) == "true"


def token_request(request, exchange, binding):
    """A proof at the token endpoint binds the tokens issued (every grant comes through here)."""
    client = exchange.client_config.client
    if "HTTP_DPOP" not in request.META:
        if _requires(client, REQUIRE_DPOP):
            raise InvalidDpopProof("DPoP proof is missing")
        return
    scope = realm_nonce_scope(exchange.realm) if _requires(client, REQUIRE_NONCE) else None
    jkt = proof_jkt(request, f"{exchange.issuer}/protocol/openid-connect/token", nonce_scope=scope)
    binding.cnf = {**binding.cnf, "jkt": jkt}
    binding.token_type = TOKEN_TYPE
    if client.public_client:
        binding.refresh_cnf = {**binding.refresh_cnf, "jkt": jkt}


def check_refresh(refresh_claims, binding):
    """A DPoP-bound refresh token is refreshed only with a proof of its key (Keycloak: invalid_grant)."""
    bound = (refresh_claims.get("cnf") or {}).get("jkt")
    if bound is None:
        return
    proven = binding.cnf.get("jkt")
    if proven is None:
        raise InvalidGrant("DPoP proof is missing")
    if not hmac.compare_digest(str(bound), proven):
        raise InvalidGrant("DPoP confirmation doesn't match DPoP proof")


def check_resource_request(request, token, claims, url):
    """Userinfo: the token's presentation checked; a nonce where the token's client requires one."""
    scope = None
    if (claims.get("cnf") or {}).get("jkt") is not None:
        realm_config = get_realm(request.resolver_match.kwargs["realm"])
        config = realm_config.client(claims.get("azp", ""))
        if config is not None and _requires(config.client, REQUIRE_NONCE):
            scope = realm_nonce_scope(realm_config.realm)
    check_presentation(request, token, claims, url, nonce_scope=scope)
