"""Request objects (RFC 9101, OIDC Core §6): the authorization request as a JWT the client signs,
sent by value (``request``) or by reference (``request_uri``,
fetched from a URL the client registered in ``request.uris``).

Keycloak's client attributes decide what is accepted: ``request.object.signature.alg`` (the one
algorithm allowed; unset or ``any``: any asymmetric one, or HS* keyed with the client secret;
``none`` only when it names ``none``), ``request.object.required`` and ``request.uris``. The
object's claims take the place of the query's parameters of the same name (Keycloak's merge).
An object may be encrypted (a nested JWT, RFC 9101 §6.1) to one of the realm's
``rsa-enc-generated`` keys in its JWKS (RSA-OAEP, RSA-OAEP-256); ``request.object.encryption.alg``
and ``.enc``, when set, are the only ones accepted and the object must then be encrypted, as in
Keycloak (decision 0084).
Each refusal is ``invalid_request_object`` or ``invalid_request_uri`` (RFC 9101 §7).

A pushed request (RFC 9126) is a reference too: ``urn:ietf:params:oauth:request_uri:<random>``,
kept in its table (``PushedAuthorization``) until the authorization endpoint takes it, once,
for the client that pushed it, within the realm's ``parRequestUriLifespan``.
"""
import hashlib
import json
import secrets
import time
from datetime import timedelta

from django.core.cache import cache
from django.http import QueryDict
from django.utils import timezone

from realms.data.keys import realm_keys
from realms.http.outbound import OutboundError, fetch
from realms.http.redirects import is_valid_redirect_uri

from . import client_auth, codes, jose
from .errors import InvalidClient, InvalidRequest, OAuthError
from .models import PushedAuthorization

SIGNATURE_ALG = "request.object.signature.alg"
ENCRYPTION_ALG = "request.object.encryption.alg"
ENCRYPTION_ENC = "request.object.encryption.enc"
REQUIRED = "request.object.required"
REQUEST_URIS = "request.uris"
NOT_REQUIRED, REQUEST_OR_URI, REQUEST_ONLY, URI_ONLY = (
    "not required", "request or request_uri", "request only", "request_uri only")
REQUIRED_VALUES = (NOT_REQUIRED, REQUEST_OR_URI, REQUEST_ONLY, URI_ONLY)
ANY, NONE = "any", "none"
SIGNING_ALGS = sorted(jose.ASYMMETRIC | jose.SYMMETRIC) + [NONE]
LEEWAY = 10
JTI_TTL_WITHOUT_EXP = 3600
MEDIA_TYPE = "application/oauth-authz-req+jwt"
URIS_DELIMITER = "##"  # Keycloak's delimiter of a multi-valued client attribute
PUSHED_PREFIX = "urn:ietf:params:oauth:request_uri:"
PAR_LIFESPAN = "parRequestUriLifespan"  # Keycloak's realm attribute (ParConfig), seconds
PAR_REQUIRED = "require.pushed.authorization.requests"  # Keycloak's client attribute (ParConfig)
DEFAULT_PAR_LIFESPAN = 60


class InvalidRequestObject(OAuthError):
    error = "invalid_request_object"


class InvalidRequestUri(OAuthError):
    error = "invalid_request_uri"


def claim_text(value):
    """A claim as a request parameter, as Keycloak reads it: text as is, anything else as JSON."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    return str(value) if isinstance(value, int | float) else json.dumps(value)


def check_attributes(protocol, attributes):
    """The refusal of a client's request object or PAR attribute this server cannot honour (an
    import, the Admin API), or None."""
    if protocol != "openid-connect":
        return None
    allowed = {REQUIRED: REQUIRED_VALUES, SIGNATURE_ALG: (ANY, *SIGNING_ALGS), PAR_REQUIRED: ("true", "false"),
               ENCRYPTION_ALG: jose.JWE_DECRYPT_ALGS, ENCRYPTION_ENC: jose.JWE_ENCS}
    for name, values in allowed.items():
        value = attributes.get(name)
        if value not in (None, "") and value not in values:
            return f"Unsupported value of {name}: {value!r}; one of: {', '.join(values)}"
    return None


def par_lifespan(realm):
    value = (realm.attributes or {}).get(PAR_LIFESPAN)
    return int(value) if str(value or "").isdigit() and int(value) > 0 else DEFAULT_PAR_LIFESPAN


def store_pushed(realm, client, params, claims):
    """Keep a validated pushed request; (its ``request_uri``, seconds it lives)."""
    lifespan = par_lifespan(realm)
    now = timezone.now()
    key = secrets.token_urlsafe(32)
    PushedAuthorization.objects.create(
        digest=codes.digest(key), realm=realm, client=client, params=dict(params.lists()), request_object=claims,
        expires_at=now + timedelta(seconds=lifespan))
    return PUSHED_PREFIX + key, lifespan


def take_pushed(realm, client, request_uri):
    """(parameters, request object claims or None) of the pushed request ``request_uri``, which
    is gone afterwards; InvalidRequestUri when it was not pushed by this client, is used or expired."""
    digest = codes.digest(request_uri[len(PUSHED_PREFIX):])
    mine = PushedAuthorization.objects.filter(pk=digest, realm=realm, client=client)
    row = mine.first()
    # The delete decides between two concurrent uses; another client's attempt leaves it alone.
    if row is None or not mine.delete()[0]:
        raise InvalidRequestUri("PAR not found. not issued or used multiple times.")
    if row.expires_at <= timezone.now():
        raise InvalidRequestUri("PAR expired.")
    params = QueryDict(mutable=True)
    for name, values in row.params.items():
        params.setlist(name, values)
    return params, row.request_object


def required(client):
    return (client.attributes or {}).get(REQUIRED) or NOT_REQUIRED


def check_required(client, *, request, request_uri):
    """Keycloak's refusal of a request without the object the client's ``request.object.required``
    asks for (a pushed request's ``request_uri`` counts as one, as in Keycloak)."""
    if request and request_uri:
        raise InvalidRequest("Illegal to use both 'request' and 'request_uri' parameters together")
    need = required(client)
    if need == REQUEST_OR_URI and not request and not request_uri:
        raise InvalidRequestObject("Client is required to use 'request' or 'request_uri' parameter.")
    if need == REQUEST_ONLY and not request:
        raise InvalidRequestObject("Client is required to use 'request' parameter.")
    if need == URI_ONLY and not request_uri:
        raise InvalidRequestObject("Client is required to use 'request_uri' parameter.")


def merged(params, claims):
    """The request's parameters with the object's claims in place of those of the same name; the
    object's ``request``/``request_uri`` never count (RFC 9101 §4)."""
    out = QueryDict(mutable=True)
    for name, values in params.lists():
        out.setlist(name, values)
    for name in ("request", "request_uri"):
        out.pop(name, None)
    for name, value in claims.items():
        if value is None:
            continue
        # A JSON array of a repeatable parameter (RFC 8707 ``resource``) is its values.
        out.setlist(name, [claim_text(v) for v in value] if isinstance(value, list) and name == "resource"
                    else [claim_text(value)])
    return out


def fetch_by_reference(client, request_uri):
    """The request object at ``request_uri``: only from a URL the client registered in
    ``request.uris`` (wildcards as redirect URIs), fetched through the SSRF-safe client."""
    allowed = [u for u in (client.attributes or {}).get(REQUEST_URIS, "").split(URIS_DELIMITER) if u]
    if not is_valid_redirect_uri(allowed, request_uri):
        raise InvalidRequestUri("Specified 'request_uri' not allowed for this client.")
    try:
        return fetch(request_uri, accept=MEDIA_TYPE).decode()
    except (OutboundError, UnicodeDecodeError):
        raise InvalidRequestUri("Request object could not be fetched from 'request_uri'") from None


def _decrypted(realm, attrs, token):
    """The signed object inside an encrypted one, decrypted with the realm's key its header names;
    an object the client's ``request.object.encryption.*`` asks to be encrypted and is not, or is
    with other algorithms, is refused."""
    wanted_alg, wanted_enc = attrs.get(ENCRYPTION_ALG), attrs.get(ENCRYPTION_ENC)
    if token.count(".") != 4:
        if wanted_alg or wanted_enc:
            raise InvalidRequestObject("Request object not encrypted")
        return token
    try:
        header = jose.jwe_header(token)
    except jose.JoseError:
        raise InvalidRequestObject("Invalid request object") from None
    if wanted_alg and header.get("alg") != wanted_alg or wanted_enc and header.get("enc") != wanted_enc:
        raise InvalidRequestObject("Request object encrypted with different algorithm than client requested")
    key = realm_keys(realm).decryption_key(header.get("kid"), header.get("alg"))
    if key is None:
        raise InvalidRequestObject("No realm key to decrypt the request object")
    try:
        return jose.decrypt(token, key)
    except jose.JoseError:
        raise InvalidRequestObject("Failed to decrypt the request object") from None


def verify(realm, client, issuer, token):
    """The claims of the client's request object ``token`` once decrypted (when it is a JWE) and
    verified; raises InvalidRequestObject."""
    if not isinstance(token, str) or not token:
        raise InvalidRequestObject("Invalid request object")
    attrs = client.attributes or {}
    token = _decrypted(realm, attrs, token)
    try:
        header, claims, signing_input, signature = jose.parse(token)
    except jose.JoseError:
        raise InvalidRequestObject("Invalid request object") from None
    alg = header.get("alg")
    if not alg:
        raise InvalidRequestObject("Request object signed algorithm not specified")
    wanted = attrs.get(SIGNATURE_ALG) or ANY
    if alg == NONE and wanted != NONE:
        raise InvalidRequestObject("None signed algorithm is not allowed")
    if wanted != ANY and alg != wanted:
        raise InvalidRequestObject("Request object signed with different algorithm than client requested algorithm")
    if alg != NONE:  # ``none`` only reaches here when the client asked for it
        _verify_signature(client, header, alg, signing_input, signature)
        if claims.get("iss") != client.client_id:
            raise InvalidRequestObject("Invalid request object: iss must be the client_id")
        aud = claims.get("aud")
        if issuer not in (aud if isinstance(aud, list) else [aud]):
            raise InvalidRequestObject("Invalid request object: aud must include the issuer")
    elif signature:
        raise InvalidRequestObject("Invalid request object")
    if "request_uri" in claims or "request" in claims:
        raise InvalidRequestObject("The request_uri claim should not be set in the request object")
    if claims.get("client_id") is not None and claims.get("client_id") != client.client_id:
        raise InvalidRequestObject("The client_id parameter doesn't match the one from OIDC 'request' or 'request_uri'")
    _check_times(claims)
    _check_jti(realm, client, claims)
    return claims


def _verify_signature(client, header, alg, signing_input, signature):
    if alg in jose.SYMMETRIC:
        secret = "" if client.public_client else client.get_secret()
        if not secret:
            raise InvalidRequestObject("Failed to verify signature on 'request' object")
        key = secret.encode()
    elif alg in jose.ASYMMETRIC:
        try:
            key = client_auth.client_key(client, header.get("kid"))
        except InvalidClient:
            raise InvalidRequestObject("Failed to verify signature on 'request' object") from None
    else:
        raise InvalidRequestObject("Request object signed with an unsupported algorithm")
    try:
        jose.verify_signature(alg, key, signing_input, signature)
    except jose.JoseError:
        raise InvalidRequestObject("Failed to verify signature on 'request' object") from None


def _check_times(claims):
    now = int(time.time())
    exp = claims.get("exp")
    if exp is not None and (not isinstance(exp, int) or exp + LEEWAY <= now):
        raise InvalidRequestObject("Request object expired")
    for name in ("nbf", "iat"):
        value = claims.get(name)
        if value is not None and (not isinstance(value, int) or value - LEEWAY > now):
            raise InvalidRequestObject(f"Request object {name} is in the future")


def _check_jti(realm, client, claims):
    """A request object with a ``jti`` is used once (until it expires; an hour without ``exp``)."""
    jti = claims.get("jti")
    if jti is None:
        return
    if not isinstance(jti, str) or not jti:
        raise InvalidRequestObject("Invalid request object: bad jti")
    exp = claims.get("exp")
    ttl = max(exp - int(time.time()), 0) + LEEWAY if exp is not None else JTI_TTL_WITHOUT_EXP
    key = "oidc:request-object-jti:" + hashlib.sha256(f"{realm.pk}\0{client.pk}\0{jti}".encode()).hexdigest()
    if not cache.add(key, 1, timeout=ttl):
        raise InvalidRequestObject("Request object already used (jti replay)")
