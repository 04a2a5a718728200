"""Mutual TLS (RFC 8705): the client certificate of a request, client authentication by it, and
the tokens bound to it.

Where the certificate comes from: the TLS terminating proxy in front (nginx, Apache, HAProxy,
Envoy) verifies the client's certificate and passes it on in the request header named by
``IDP_CLIENT_CERT_HEADER`` (Keycloak's ``--spi-x509cert-lookup-provider``). That header is believed
only when the TCP peer is one of ``IDP_TRUSTED_PROXIES``; from anyone else it is ignored, so a
client cannot claim a certificate it does not hold. The server itself (Granian) can ask for a
client certificate but hands it to no application, so there is no other source (decision 0082).
The header carries the PEM, URL-encoded or not (nginx ``$ssl_client_escaped_cert``, Apache
``%{SSL_CLIENT_CERT}s``), base64 DER (HAProxy ``%[ssl_c_der,base64]``), or, when the header is
``x-forwarded-client-cert``, Envoy's element whose ``Cert`` is the URL-encoded PEM.

Client authentication (``oidc.client_auth``): ``client-x509`` (Keycloak's authenticator,
``tls_client_auth``) matches the certificate's subject DN against the client's ``x509.subjectdn``,
exactly in RFC 2253 form, or as a regular expression while
``x509.allow.regex.pattern.comparison`` is not "false" (Keycloak's default, kept for its exports).
``client-x509-self-signed`` (``self_signed_tls_client_auth``, which Keycloak lacks) matches the
certificate's public key against the keys the client registered.

Bound tokens: a client with ``tls.client.certificate.bound.access.tokens`` "true" gets access and
refresh tokens carrying ``cnf: {"x5t#S256": ...}`` (the SHA-256 of the certificate's DER), as
Keycloak binds both; each later use of them must come with the same certificate.
"""
import base64
import binascii
import functools
import hashlib
import hmac
import re
from urllib.parse import unquote

from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding
from cryptography.x509.oid import NameOID
from django.conf import settings

from realms.http.web import from_trusted_proxy

from .errors import InvalidGrant, InvalidRequest, InvalidToken

BOUND_TOKENS = "tls.client.certificate.bound.access.tokens"
SUBJECT_DN = "x509.subjectdn"
ALLOW_REGEX = "x509.allow.regex.pattern.comparison"
TLS_CLIENT_AUTH = "client-x509"  # Keycloak's X509ClientAuthenticator
SELF_SIGNED = "client-x509-self-signed"
THUMBPRINT = "x5t#S256"
ENVOY_HEADER = "x-forwarded-client-cert"
MISSING = "Client Certification missing for MTLS HoK Token Binding"  # Keycloak's description
MISMATCH = "Client certificate missing, or its thumbprint and the token's do not match"

# Attributes RFC 4514 does not name but certificates of open banking profiles carry (Keycloak
# accepts them expanded or as OIDs in x509.subjectdn): one spelling on both sides of a comparison.
_NAMED_OIDS = {NameOID.SERIAL_NUMBER: "SERIALNUMBER", NameOID.BUSINESS_CATEGORY: "BUSINESSCATEGORY",
               NameOID.JURISDICTION_COUNTRY_NAME: "JURISDICTIONCOUNTRYNAME"}
_NAME_PARSING = {**{name: oid for oid, name in _NAMED_OIDS.items()},
                 "serialNumber": NameOID.SERIAL_NUMBER, "businessCategory": NameOID.BUSINESS_CATEGORY,
                 "jurisdictionCountryName": NameOID.JURISDICTION_COUNTRY_NAME}
_SEPARATOR = re.compile(r"(?<!\\)\s*([,+])\s*")
_PEM = re.compile(r"-----BEGIN CERTIFICATE-----(.*?)-----END CERTIFICATE-----", re.S)


# The certificate ---------------------------------------------------------------------------------

@functools.lru_cache(maxsize=256)  # a client sends the same certificate request after request
def parse_certificate(text):
    """The certificate in ``text`` (PEM, possibly URL-encoded, or base64 DER), else None."""
    text = text.strip().strip('"')
    if "%" in text:
        text = unquote(text)
    found = _PEM.search(text)
    body = found.group(1) if found else text
    try:
        return x509.load_der_x509_certificate(base64.b64decode("".join(body.split()), validate=True))
    except (binascii.Error, ValueError):
        return None


def _envoy_cert(value):
    """The ``Cert`` of the last element of an ``x-forwarded-client-cert`` header (the one the
    trusted Envoy added for its own client); quoted values may hold commas and semicolons."""
    elements, fields, current, quoted = [], {}, "", False
    for char in value + ",":
        if char == '"':
            quoted = not quoted
        elif char in ";," and not quoted:
            key, _, val = current.partition("=")
            fields[key.strip().lower()] = val
            current = ""
            if char == ",":
                elements.append(fields)
                fields = {}
            continue
        current += char
    return elements[-1].get("cert", "") if elements else ""


def enabled():
    """Whether client certificates can reach the server at all (what discovery says)."""
    return bool(getattr(settings, "IDP_CLIENT_CERT_HEADER", ""))


def client_certificate(request):
    """The client certificate of this request (``x509.Certificate``) or None: the configured
    header, from a trusted proxy only."""
    name = getattr(settings, "IDP_CLIENT_CERT_HEADER", "")
    if not name:
        return None
    value = request.META.get("HTTP_" + name.upper().replace("-", "_"), "")
    if not value or not from_trusted_proxy(request):
        return None
    if name.lower() == ENVOY_HEADER:
        value = _envoy_cert(value)
    return parse_certificate(value) if value else None


def thumbprint(certificate):
    """RFC 8705 §3.1: base64url SHA-256 of the certificate's DER."""
    digest = hashlib.sha256(certificate.public_bytes(Encoding.DER)).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


# tls_client_auth: the subject DN -------------------------------------------------------------------

def _dn(name):
    return name.rfc4514_string(_NAMED_OIDS)


@functools.lru_cache(maxsize=256)
def _expected_dn(text):
    # Keycloak (X500Principal) also reads RFC 1779's spaces after the separators.
    text = _SEPARATOR.sub(r"\1", text.strip())
    return _dn(x509.Name.from_rfc4514_string(text, _NAME_PARSING))


@functools.lru_cache(maxsize=256)
def _pattern(text):
    return re.compile(text)


def subject_matches(attributes, certificate):
    """Whether the certificate's subject is the client's ``x509.subjectdn`` (Keycloak's
    X509ClientAuthenticator: only the client's own certificate, never the rest of its chain)."""
    expected = attributes.get(SUBJECT_DN) or ""
    if not expected.strip():
        return False
    subject = _dn(certificate.subject)
    try:
        if attributes.get(ALLOW_REGEX, "true") != "false":
            # Keycloak matches the DN as Java prints it (", " between RDNs); RFC 2253 has none.
            pattern = _pattern(expected)
            return bool(pattern.fullmatch(subject) or pattern.fullmatch(
                ", ".join(rdn.rfc4514_string(_NAMED_OIDS) for rdn in reversed(certificate.subject.rdns))))
        return hmac.compare_digest(_expected_dn(expected), subject)
    except (re.error, ValueError):  # stored before writes were checked: matches nothing
        return False


def check_attributes(protocol, attributes):
    """A client's mutual TLS attributes, refused where they are written when they could never work."""
    if protocol != "openid-connect":
        return None
    if attributes.get(BOUND_TOKENS) not in (None, "", "true", "false"):
        return f"{BOUND_TOKENS} must be true or false"
    if attributes.get(ALLOW_REGEX) not in (None, "", "true", "false"):
        return f"{ALLOW_REGEX} must be true or false"
    expected = attributes.get(SUBJECT_DN)
    if expected:
        try:
            if attributes.get(ALLOW_REGEX, "true") != "false":
                _pattern(expected)
            else:
                _expected_dn(expected)
        except (re.error, ValueError) as exc:
            return f"{SUBJECT_DN} is not a valid {'distinguished name' if isinstance(exc, ValueError) else 'pattern'}"
    return None


# oidc.binding's questions ------------------------------------------------------------------------

def token_request(request, exchange, binding):
    """A client with certificate-bound tokens gets its access and refresh tokens bound to the
    certificate of this request; without one, Keycloak's 400 invalid_request."""
    if exchange.client_config.client.attributes.get(BOUND_TOKENS) != "true":
        return
    certificate = client_certificate(request)
    if certificate is None:
        raise InvalidRequest(MISSING)
    bound = {THUMBPRINT: thumbprint(certificate)}
    binding.cnf = {**binding.cnf, **bound}
    binding.refresh_cnf = {**binding.refresh_cnf, **bound}


def _proves(bound, proven):
    return proven is not None and hmac.compare_digest(str(bound), proven)


def check_refresh(refresh_claims, binding):
    """A certificate-bound refresh token is refreshed only with the same certificate (RFC 8705 §3)."""
    bound = (refresh_claims.get("cnf") or {}).get(THUMBPRINT)
    if bound is not None and not _proves(bound, binding.cnf.get(THUMBPRINT)):
        raise InvalidGrant(MISMATCH)


def check_presentation(request, claims):
    """A certificate-bound access token is honoured only with its certificate (RFC 8705 §3):
    401 invalid_token otherwise."""
    bound = (claims.get("cnf") or {}).get(THUMBPRINT)
    if bound is None:
        return
    certificate = client_certificate(request)
    if not _proves(bound, thumbprint(certificate) if certificate is not None else None):
        raise InvalidToken(MISMATCH)


def check_resource_request(request, token, claims, url):
    check_presentation(request, claims)
