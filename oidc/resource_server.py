"""Local access-token validation for APIs (resource servers), spec 1 §4 "Resource server call".

An API validates each bearer token itself, without calling the identity provider: the signature
against the realm's JWKS (fetched over HTTP from the certs URL, cached, fetched again when a token
names an unknown ``kid``, at most once per ``REFETCH_INTERVAL``), then ``iss``, ``aud``, ``exp``
(with a small leeway), the algorithm (asymmetric allow-list only: never ``none``, never HMAC with
a public key) and the scope or role the endpoint requires. Failures answer 401 with
``WWW-Authenticate: Bearer error="invalid_token"``; a valid token without the required scope or
role answers 403 ``insufficient_scope`` (RFC 6750 §3.1).

Use ``require_bearer(realm="demo", audience="my-api", scope="read")`` on a Django view (the
issuer is ``{OIDC_RESOURCE_SERVER_BASE_URL or IDP_BASE_URL}/realms/{realm}``, from settings only),
or ``BearerAuthentication`` in Django REST framework (settings ``OIDC_RESOURCE_SERVER``:
``{"ISSUER": ..., "AUDIENCE": ...}``).

OAuth 2.0 Protected Resource Metadata (RFC 9728), what an MCP client starts from: serve
``protected_resource_view(resource="https://api.example/mcp", realm="demo", scopes_supported=[...])``
at ``metadata_url(resource)`` (``/.well-known/oauth-protected-resource`` inserted before the
resource's path), and pass ``resource_metadata=metadata_url(resource)`` to ``require_bearer``: its
401 and 403 answers then carry ``WWW-Authenticate: Bearer resource_metadata="..."`` (RFC 9728
§5.1). The token's audience to require is then the resource itself (RFC 8707: the identity
provider puts the requested ``resource`` in ``aud``).

DPoP (RFC 9449 §7): a token bound to a key (``cnf.jkt``) is honoured only with the ``DPoP``
scheme and a proof of that key for this request (``htm``, ``htu``: the API's base URL as
``realms.http.web.base_url`` gives it plus the request's path, ``ath``, a ``jti`` used once: the
API's Django cache remembers it, so several processes of one API need a shared cache); sent as
Bearer it is refused with a ``WWW-Authenticate: DPoP`` challenge. A token bound to a client
certificate (``cnf.x5t#S256``, RFC 8705 §3) is honoured only when the API's TLS terminating proxy
passes that certificate (``IDP_CLIENT_CERT_HEADER`` from ``IDP_TRUSTED_PROXIES``, as ``oidc.mtls``
reads it).
``require_bearer(..., dpop_nonce=True)`` also asks for this API's nonce in every proof (RFC 9449
§9), named in a ``DPoP-Nonce`` header of every answer to a DPoP request. Plain bearer tokens take the same path as
before, one dictionary look-up more.
"""
import functools
import threading
import time
from urllib.parse import urlsplit, urlunsplit

import requests
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpResponse, JsonResponse
from django.views.decorators.http import require_http_methods
from jwcrypto import jwk
from rest_framework import authentication, exceptions

from realms.http import cors
from realms.http.web import base_url

from . import dpop, jose, mtls
from .errors import InsufficientScope, InvalidToken, OAuthError, error_response

DEFAULT_ALGORITHMS = ("RS256", "ES256", "EdDSA", "PS256")
LEEWAY = 30
JWKS_TTL = 600
REFETCH_INTERVAL = 10
FETCH_TIMEOUT = (3, 5)


class JWKSCache:
    """The issuer's public keys by kid, fetched over HTTP and kept ``JWKS_TTL`` seconds."""

    def __init__(self, url, session=None):
        self.url = url
        self.keys = {}
        self.fetched_at = None
        self._lock = threading.Lock()
        self._session = session or requests.Session()

    def _fetch(self):
        response = self._session.get(self.url, timeout=FETCH_TIMEOUT)
        response.raise_for_status()
        keys = {}
        for entry in response.json().get("keys", []):
            if entry.get("use", "sig") != "sig" or not entry.get("kid"):
                continue
            try:
                key = jwk.JWK(**entry)
            except (jwk.InvalidJWKValue, TypeError, ValueError):
                continue
            if not key.has_private:
                keys[entry["kid"]] = key
        self.keys = keys

    def get(self, kid):
        now = time.monotonic()
        stale = self.fetched_at is None or now - self.fetched_at > JWKS_TTL
        if not stale and kid in self.keys:
            return self.keys[kid]
        # Unknown kid (a key rotation) or stale set: fetch again, but never more often than
        # REFETCH_INTERVAL, so garbage kids cannot make the API hammer the identity provider.
        if stale or now - self.fetched_at >= REFETCH_INTERVAL:
            with self._lock:
                if self.fetched_at is None or time.monotonic() - self.fetched_at >= REFETCH_INTERVAL or stale:
                    try:
                        self._fetch()
                    except (requests.RequestException, ValueError):
                        if self.fetched_at is None:
                            raise InvalidToken("Signing keys unavailable") from None
                    self.fetched_at = time.monotonic()
        return self.keys.get(kid)


class BearerValidator:
    def __init__(self, *, issuer, audience, algorithms=DEFAULT_ALGORITHMS, leeway=LEEWAY, jwks_url=None):
        bad = [a for a in algorithms if a not in jose.ASYMMETRIC]
        if bad:
            raise ValueError(f"algorithms not allowed for bearer tokens: {bad}")
        self.issuer = issuer
        self.audience = audience
        self.algorithms = frozenset(algorithms)
        self.leeway = leeway
        self.jwks = JWKSCache(jwks_url or f"{issuer}/protocol/openid-connect/certs")

    def validate(self, token) -> dict:
        """The token's claims; InvalidToken unless signature, iss, aud, exp and alg are right."""
        try:
            header, claims, signing_input, signature = jose.parse(token)
        except jose.JoseError:
            raise InvalidToken("Malformed token") from None
        alg = header.get("alg")
        if alg not in self.algorithms:
            raise InvalidToken("Algorithm not allowed")
        if header.get("typ", "JWT") not in ("JWT", "at+jwt", "application/at+jwt"):
            raise InvalidToken("Not an access token")
        key = self.jwks.get(header.get("kid"))
        if key is None:
            raise InvalidToken("Unknown signing key")
        try:
            jose.verify_signature(alg, key, signing_input, signature)
        except jose.JoseError:
            raise InvalidToken("Invalid signature") from None
        if claims.get("iss") != self.issuer:
            raise InvalidToken("Wrong issuer")
        aud = claims.get("aud")
        if self.audience not in (aud if isinstance(aud, list) else [aud]):
            raise InvalidToken("Wrong audience")
        now = time.time()
        exp = claims.get("exp")
        if not isinstance(exp, (int, float)) or exp + self.leeway < now:
            raise InvalidToken("Token expired")
        nbf = claims.get("nbf")
        if isinstance(nbf, (int, float)) and nbf - self.leeway > now:
            raise InvalidToken("Token not yet valid")
        if claims.get("typ", "Bearer") != "Bearer":
            raise InvalidToken("Not an access token")
        return claims


def check_scope_and_role(claims, scope=None, role=None):
    """InsufficientScope unless every scope in ``scope`` is granted and the token carries
    ``role`` (a realm role, or ``client:role`` for a client role)."""
    if scope:
        granted = set(str(claims.get("scope", "")).split())
        missing = [s for s in scope.split() if s not in granted]
        if missing:
            raise InsufficientScope("Missing scope", scope=scope)
    if role:
        if ":" in role:
            client_id, name = role.split(":", 1)
            roles = ((claims.get("resource_access") or {}).get(client_id) or {}).get("roles") or []
        else:
            name, roles = role, (claims.get("realm_access") or {}).get("roles") or []
        if name not in roles:
            raise InsufficientScope("Missing role")


_validators = {}
_validators_lock = threading.Lock()


def validator(issuer, audience, algorithms=DEFAULT_ALGORITHMS) -> BearerValidator:
    """One validator (and one JWKS cache) per issuer and audience in the process."""
    key = (issuer, audience, tuple(algorithms))
    found = _validators.get(key)
    if found is None:
        with _validators_lock:
            found = _validators.setdefault(key, BearerValidator(issuer=issuer, audience=audience, algorithms=algorithms))
    return found


def _issuer(realm, issuer):
    """The issuer a token must name and whose JWKS is fetched: a trust anchor, so it comes from
    configuration only, never from the request (a forged Host would choose both)."""
    if issuer:
        return issuer
    base = getattr(settings, "OIDC_RESOURCE_SERVER_BASE_URL", "") or settings.IDP_BASE_URL
    if not base:
        raise ImproperlyConfigured(
            "require_bearer(realm=...) needs OIDC_RESOURCE_SERVER_BASE_URL or IDP_BASE_URL "
            "(or an explicit issuer): the issuer is never taken from the request's Host")
    return f"{base.rstrip('/')}/realms/{realm}"


def bearer_token(request):
    """The access token of the Authorization header: the Bearer or the DPoP scheme (RFC 9449 §7.1)."""
    header = request.META.get("HTTP_AUTHORIZATION", "")
    if header[:7].lower() == "bearer " and header[7:].strip():
        return header[7:].strip()
    if header[:5].lower() == "dpop " and header[5:].strip():
        return header[5:].strip()
    raise InvalidToken("Missing bearer token")


def validate_request(bearer_validator, request, *, dpop_nonce=False):
    """The claims of the request's access token, checked with its presentation: a DPoP-bound
    token (or the DPoP scheme) needs a valid proof of the token's key for this request."""
    token = bearer_token(request)
    claims = bearer_validator.validate(token)
    if "cnf" in claims or request.META["HTTP_AUTHORIZATION"][:5].lower() == "dpop ":
        scope = f"api:{bearer_validator.issuer}\0{bearer_validator.audience}" if dpop_nonce else None
        dpop.check_presentation(request, token, claims, base_url(request) + request.path_info, nonce_scope=scope)
        mtls.check_presentation(request, claims)
    return claims


def require_bearer(realm=None, audience=None, scope=None, role=None, *, issuer=None, algorithms=DEFAULT_ALGORITHMS,
                   resource_metadata=None, dpop_nonce=False):
    """View decorator: the view runs only for a valid token; its claims are ``request.token``.
    ``resource_metadata``: the URL of the API's protected resource metadata, named in the
    challenge of every refusal (RFC 9728 §5.1). ``dpop_nonce``: DPoP proofs must carry this
    API's current nonce (RFC 9449 §9)."""
    if not (realm or issuer) or not audience:
        raise ValueError("require_bearer needs realm (or issuer) and audience")

    def decorate(view):
        @functools.wraps(view)
        def wrapper(request, *args, **kwargs):
            try:
                claims = validate_request(validator(_issuer(realm, issuer), audience, algorithms), request,
                                          dpop_nonce=dpop_nonce)
                check_scope_and_role(claims, scope, role)
            except OAuthError as exc:
                return dpop.with_nonce(request, with_resource_metadata(error_response(exc), resource_metadata))
            request.token = claims
            return dpop.with_nonce(request, view(request, *args, **kwargs))
        return wrapper
    return decorate


class TokenUser:
    """The caller as DRF sees it: authenticated, identified by the token's subject."""

    is_authenticated = True
    is_anonymous = False

    def __init__(self, claims):
        self.claims = claims
        self.pk = self.id = claims.get("sub")
        self.username = claims.get("preferred_username", "")

    def __str__(self):
        return self.username or str(self.pk)


class BearerAuthentication(authentication.BaseAuthentication):
    """DRF authentication: ``request.user`` is a TokenUser, ``request.auth`` the claims.

    Configure with settings.OIDC_RESOURCE_SERVER = {"ISSUER": ..., "AUDIENCE": ...}; a view may
    set ``required_scope`` / ``required_role``. DPoP-bound tokens are checked as by
    ``require_bearer``, without nonces (DRF's answers have no place for a ``DPoP-Nonce``)."""

    def authenticate(self, request):
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if header[:7].lower() != "bearer " and header[:5].lower() != "dpop ":
            return None
        conf = settings.OIDC_RESOURCE_SERVER
        try:
            claims = validate_request(
                validator(conf["ISSUER"], conf["AUDIENCE"], conf.get("ALGORITHMS", DEFAULT_ALGORITHMS)),
                request._request)
        except OAuthError as exc:
            # DRF answers 401 with authenticate_header's challenge: a DPoP refusal names its own.
            request.dpop_challenge = exc.headers.get("WWW-Authenticate", "")
            raise exceptions.AuthenticationFailed(exc.description) from None
        view = request.parser_context.get("view") if getattr(request, "parser_context", None) else None
        try:
            check_scope_and_role(claims, getattr(view, "required_scope", None), getattr(view, "required_role", None))
        except InsufficientScope as exc:
            raise exceptions.PermissionDenied(exc.description) from None
        return TokenUser(claims), claims

    def authenticate_header(self, request):
        if getattr(request, "dpop_challenge", "").startswith("DPoP"):
            return request.dpop_challenge
        header = 'Bearer realm="api", error="invalid_token"'
        url = getattr(settings, "OIDC_RESOURCE_SERVER", {}).get("RESOURCE_METADATA")
        return f'{header}, resource_metadata="{url}"' if url else header


# Protected resource metadata (RFC 9728) --------------------------------------------------------

WELL_KNOWN = "/.well-known/oauth-protected-resource"
METADATA_METHODS = ["GET", "HEAD", "OPTIONS"]


def metadata_url(resource):
    """RFC 9728 §3.1: the well-known path inserted between the resource's host and its path."""
    parts = urlsplit(resource)
    return urlunsplit((parts.scheme, parts.netloc, WELL_KNOWN + parts.path.rstrip("/"), parts.query, ""))


def with_resource_metadata(response, url):
    """Name the metadata URL in the answer's Bearer challenge (RFC 9728 §5.1)."""
    challenge = response.get("WWW-Authenticate", "")
    if url and challenge.startswith("Bearer"):
        response["WWW-Authenticate"] = f'{challenge}, resource_metadata="{url}"'
    return response


def protected_resource_metadata(resource, authorization_servers, *, scopes_supported=None,
                                bearer_methods_supported=("header",), **extra):
    """The RFC 9728 §2 document of ``resource`` (its identifier: https, no fragment), whose tokens
    ``authorization_servers`` (issuer URLs) issue. ``extra``: other §2 members (resource_name,
    resource_documentation, jwks_uri ...); None values are left out."""
    parts = urlsplit(resource)
    if parts.scheme not in ("https", "http") or not parts.netloc or parts.fragment:
        raise ValueError("a protected resource is an http(s) URL without fragment")
    document = {"resource": resource, "authorization_servers": list(authorization_servers),
                "bearer_methods_supported": list(bearer_methods_supported)}
    if scopes_supported is not None:
        document["scopes_supported"] = list(scopes_supported)
    document.update({k: v for k, v in extra.items() if v is not None})
    return document


def protected_resource_view(resource, authorization_servers=None, *, realm=None, issuer=None, **metadata):
    """A Django view answering the metadata of ``resource`` (GET, HEAD; CORS for any origin, as
    the identity provider's discovery has). The authorization server is ``issuer`` or the
    realm's issuer from settings (``require_bearer``'s), unless ``authorization_servers`` is given."""
    servers = authorization_servers or [_issuer(realm, issuer)]
    document = protected_resource_metadata(resource, servers, **metadata)

    @require_http_methods(METADATA_METHODS)
    def view(request, *args, **kwargs):
        if request.method == "OPTIONS":
            return cors.preflight(request, HttpResponse(), METADATA_METHODS)
        return cors.add(request, JsonResponse(document), None, any_origin=True)
    return view
