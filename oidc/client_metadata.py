"""OAuth Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document), as Keycloak's
experimental ``client-id-metadata-document`` feature has them (its CIMD client policy executor).

A ``client_id`` that is an https URL names a JSON document the client publishes about itself. At
the authorization endpoint, while the feature is on and the URL's host is one the realm allows
(realm attribute ``cimd-allow-permitted-domains``: host names, ``*.example.com`` for a domain and
its subdomains, separated by ``##``, commas or spaces; empty, the default, allows none), the
document is fetched through ``realms.http.outbound`` (the SSRF-safe client: public addresses
only, no redirects; ``MAX_BYTES`` and ``TIMEOUT``), checked, and kept as a Client row of the realm
marked by the attribute ``cimd.document.sha256`` (the digest of the document it was made from):
sessions and codes reference Client rows, so the token endpoint and everything after it treat it
as any other client. The row is rewritten only when the document changes; when to fetch again
is kept in the shared cache, from the answer's Cache-Control within ``MIN_TTL``..``MAX_TTL``.

The document must name the URL as its ``client_id`` exactly, list ``redirect_uris`` holding the
request's, carry no ``client_secret``; ``token_endpoint_auth_method`` ``none`` (also when absent:
no secret exists to hold) makes a public client, ``private_key_jwt`` a confidential one with the
document's ``jwks_uri``. As Keycloak's executor does by default, the client requires consent
(realm attribute ``cimd-consent-required``, "true" unless "false") and has full scope off.
http URLs are accepted exactly when outbound calls may use http (dev mode, or
``IDP_OUTBOUND_ALLOW_HTTP``); decision 0074. With the feature off, such a row is not a client.
"""
import hashlib
import json
import logging
import re
from urllib.parse import urlsplit

from django.core.cache import cache
from django.db import transaction

from realms import features
from realms.audit.events import emit
from realms.http import outbound
from realms.models import Client
from realms.representation.services import add_default_client_scopes

from .errors import OidcError

logger = logging.getLogger("idp.oidc.cimd")

FEATURE = "client-id-metadata-document"
MARKER = "cimd.document.sha256"
ALLOWED_HOSTS = "cimd-allow-permitted-domains"
CONSENT_REQUIRED = "cimd-consent-required"
MAX_BYTES = 16 * 1024
TIMEOUT, CONNECT_TIMEOUT = 5.0, 3.0
DEFAULT_TTL, MIN_TTL, MAX_TTL = 300, 0, 24 * 3600
MAX_CLIENT_ID = 255  # the clientId column

# Keycloak's descriptions (AbstractClientIdMetadataDocumentExecutor).
ERR_MALFORMED_URL = "Invalid Client ID: malformed URL."
ERR_INVALID_URL_SCHEME = "Invalid Client ID: invalid scheme."
ERR_EMPTY_URL_PATH = "Invalid Client ID: empty path."
ERR_URL_PATH_TRAVERSAL = "Invalid Client ID: path traverse segment included."
ERR_URL_FRAGMENT = "Invalid Client ID: fragment included."
ERR_URL_USERINFO = "Invalid Client ID: userinfo included."
ERR_URL_QUERY = "Invalid Client ID: query included."
ERR_PRIVATE_ADDRESS = "Invalid Client ID: private address is not allowed."
ERR_NOTALLOWED_DOMAIN = "Invalid Client ID: domain not allowed."
ERR_FETCH = "Invalid Client ID: client metadata could not be fetched."
ERR_METADATA_NOCONTENT = "Invalid Client Metadata: no content."
ERR_METADATA_NOCLIENTID = "Invalid Client Metadata: no client_id."
ERR_METADATA_CLIENTID_UNMATCH = "Invalid Client Metadata: client_id property does not exactly match client_id parameter."
ERR_METADATA_NOTALLOWED_CLIENTAUTH = ("Invalid Client Metadata: token_endpoint_auth_method property in client "
                                      "metadata is not-allowed authentication method.")
ERR_METADATA_JWKS = "Invalid Client Metadata: jwks_uri property is required."
ERR_METADATA_CLIENTSECRET = ("Invalid Client Metadata: client_secret or client_secret_expires_at property in client "
                             "metadata is must not included.")
ERR_METADATA_REDIRECTURI = ("Invalid Client Metadata: redirect_uri parameter does not exactly match the one of "
                            "redirect_uris property in client metadata.")


class MetadataRefused(OidcError):
    """The client id's document cannot make a client; ``description`` says why."""

    def __init__(self, description):
        super().__init__(description)
        self.description = description


def is_candidate(client_id):
    return client_id.startswith(("https://", "http://"))


def usable(client):
    """Whether a Client row may act: rows made from a document only while the feature is on."""
    return MARKER not in (client.attributes or {}) or features.enabled(FEATURE)


def _patterns(realm):
    raw = (realm.attributes or {}).get(ALLOWED_HOSTS) or ""
    return [p.strip().lower() for p in re.split(r"##|[,\s]+", raw) if p.strip()]


def host_allowed(realm, host):
    host = (host or "").lower()
    for pattern in _patterns(realm):
        if pattern.startswith("*."):
            if host == pattern[2:] or host.endswith(pattern[1:]):
                return True
        elif host == pattern:
            return True
    return False


def check_client_id(realm, client_id):
    """The draft's rules for a client identifier URL, then the realm's host policy."""
    try:
        parts = urlsplit(client_id)
        parts.port  # noqa: B018 -- raises ValueError for a bad port
    except ValueError:
        raise MetadataRefused(ERR_MALFORMED_URL) from None
    if len(client_id) > MAX_CLIENT_ID or not parts.hostname:
        raise MetadataRefused(ERR_MALFORMED_URL)
    if not parts.path or parts.path == "/":
        raise MetadataRefused(ERR_EMPTY_URL_PATH)
    if any(segment in (".", "..") for segment in parts.path.split("/")):
        raise MetadataRefused(ERR_URL_PATH_TRAVERSAL)
    if "#" in client_id:
        raise MetadataRefused(ERR_URL_FRAGMENT)
    if "@" in parts.netloc:
        raise MetadataRefused(ERR_URL_USERINFO)
    if "?" in client_id:
        raise MetadataRefused(ERR_URL_QUERY)
    try:
        outbound.check_url(client_id)  # https only unless outbound calls may use http (dev mode)
    except outbound.TargetRefused:
        raise MetadataRefused(ERR_INVALID_URL_SCHEME) from None
    if not host_allowed(realm, parts.hostname):
        raise MetadataRefused(ERR_NOTALLOWED_DOMAIN)


def cache_ttl(headers):
    """Seconds the document stays fresh, from Cache-Control (s-maxage over max-age; no-store and
    no-cache: fetch again next time), bounded to MIN_TTL..MAX_TTL."""
    value = next((v for k, v in headers.items() if k.lower() == "cache-control"), None)
    if value is None:
        return DEFAULT_TTL
    directives = {}
    for item in value.lower().replace(" ", "").split(","):
        name, _, arg = item.partition("=")
        directives[name] = arg.strip('"')
    if "no-store" in directives or "no-cache" in directives:
        return MIN_TTL
    for name in ("s-maxage", "max-age"):
        if directives.get(name, "").isdigit():
            return max(MIN_TTL, min(MAX_TTL, int(directives[name])))
    return DEFAULT_TTL


def fetch(client_id):
    """(document bytes, ttl): one GET through the SSRF-safe client, bounded in size and time."""
    try:
        target = outbound.prepare(client_id)
    except outbound.TargetRefused:
        raise MetadataRefused(ERR_PRIVATE_ADDRESS) from None
    try:
        response = outbound.request("GET", target, headers={"Accept": "application/json"}, timeout=TIMEOUT,
                                    connect_timeout=CONNECT_TIMEOUT, body_limit=MAX_BYTES + 1)
    except (outbound.HTTPError, OSError) as exc:
        logger.info("cimd: fetching %s failed: %s", client_id, exc.__class__.__name__)
        raise MetadataRefused(ERR_FETCH) from None
    if response.status != 200 or len(response.body) > MAX_BYTES:
        logger.info("cimd: %s answered %s (%d bytes)", client_id, response.status, len(response.body))
        raise MetadataRefused(ERR_FETCH)
    return response.body, cache_ttl(response.headers)


def validate(client_id, body, redirect_uri):
    """The document as a dict, once it may describe this client for this redirect URI."""
    try:
        doc = json.loads(body)
    except ValueError:
        raise MetadataRefused(ERR_METADATA_NOCONTENT) from None
    if not isinstance(doc, dict) or not doc:
        raise MetadataRefused(ERR_METADATA_NOCONTENT)
    if not doc.get("client_id"):
        raise MetadataRefused(ERR_METADATA_NOCLIENTID)
    if doc["client_id"] != client_id:  # simple string comparison (RFC 3986 §6.2.1)
        raise MetadataRefused(ERR_METADATA_CLIENTID_UNMATCH)
    method = doc.get("token_endpoint_auth_method") or "none"
    if method not in ("none", "private_key_jwt"):
        raise MetadataRefused(ERR_METADATA_NOTALLOWED_CLIENTAUTH)
    if method == "private_key_jwt" and not (isinstance(doc.get("jwks_uri"), str) and doc["jwks_uri"]):
        raise MetadataRefused(ERR_METADATA_JWKS)
    if "client_secret" in doc or "client_secret_expires_at" in doc:
        raise MetadataRefused(ERR_METADATA_CLIENTSECRET)
    uris = doc.get("redirect_uris")
    if (not isinstance(uris, list) or not all(isinstance(u, str) and u for u in uris)
            or redirect_uri not in uris):
        raise MetadataRefused(ERR_METADATA_REDIRECTURI)
    return doc


def _fresh_key(realm, client_id):
    return "oidc:cimd:fresh:" + hashlib.sha256(f"{realm.pk}\x00{client_id}".encode()).hexdigest()


def _fields(realm, doc, digest):
    private_key_jwt = doc.get("token_endpoint_auth_method") == "private_key_jwt"
    attributes = {MARKER: digest, "pkce.code.challenge.method": "S256"}
    if private_key_jwt:
        attributes.update({"jwks.url": doc["jwks_uri"], "use.jwks.url": "true"})
    for key, attribute in (("logo_uri", "logoUri"), ("policy_uri", "policyUri"), ("tos_uri", "tosUri")):
        if isinstance(doc.get(key), str):
            attributes[attribute] = doc[key][:2048]
    name = doc.get("client_name") if isinstance(doc.get("client_name"), str) else ""
    client_uri = doc.get("client_uri") if isinstance(doc.get("client_uri"), str) else ""
    return {
        "name": name[:255], "base_url": client_uri[:1024], "protocol": "openid-connect",
        "public_client": not private_key_jwt, "client_authenticator_type": "client-jwt" if private_key_jwt
        else "client-secret", "redirect_uris": list(doc["redirect_uris"]), "web_origins": ["+"],
        "standard_flow_enabled": True, "implicit_flow_enabled": False, "direct_access_grants_enabled": False,
        "service_accounts_enabled": False, "bearer_only": False, "enabled": True, "full_scope_allowed": False,
        "consent_required": (realm.attributes or {}).get(CONSENT_REQUIRED, "true") != "false",
        "attributes": attributes,
    }


def ensure(realm, client_id, redirect_uri, ip_address=""):
    """Make the realm's Client row for a client id metadata document current; True when the row
    was written. Nothing (False) for a client id that is no document's (feature off, not a URL,
    or a client the realm has of its own). MetadataRefused when the document cannot be used."""
    if not features.enabled(FEATURE) or not is_candidate(client_id):
        return False
    existing = Client.objects.filter(realm=realm, client_id=client_id).first()
    if existing is not None and MARKER not in (existing.attributes or {}):
        return False  # a client configured in the realm (a SAML entity id, an OIDC client) stays as it is
    event = "CLIENT_UPDATE"
    error_event = "CLIENT_UPDATE_ERROR"
    if existing is None:  # Keycloak's executor records the registration of a document's client
        event = "CLIENT_REGISTER"
        error_event = "CLIENT_REGISTER_ERROR"
    try:
        check_client_id(realm, client_id)
        fresh = cache.get(_fresh_key(realm, client_id))
        if existing is not None and fresh == existing.attributes.get(MARKER):
            if redirect_uri not in (existing.redirect_uris or []):
                raise MetadataRefused(ERR_METADATA_REDIRECTURI)
            return False
        body, ttl = fetch(client_id)
        doc = validate(client_id, body, redirect_uri)
    except MetadataRefused as exc:
        emit(realm, error_event, client_id=client_id[:255], ip_address=ip_address,
             error="invalid_client_metadata", details={"reason": exc.description})
        raise
    digest = hashlib.sha256(body).hexdigest()
    written = existing is None or existing.attributes.get(MARKER) != digest
    if written:
        with transaction.atomic():
            if existing is None:
                client = Client.objects.create(realm=realm, client_id=client_id, **_fields(realm, doc, digest))
                add_default_client_scopes(client)
            else:
                for name, value in _fields(realm, doc, digest).items():
                    setattr(existing, name, value)
                existing.save()
            emit(realm, event, client_id=client_id, ip_address=ip_address, details={"cimd": "true"})
    if ttl:
        cache.set(_fresh_key(realm, client_id), digest, timeout=ttl)
    else:
        cache.delete(_fresh_key(realm, client_id))
    return written
