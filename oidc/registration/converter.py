"""OpenID Connect client metadata (RFC 7591 §2, OpenID Connect Dynamic Client Registration) to
Keycloak's ClientRepresentation and back, as Keycloak's DescriptionConverter maps them: the
representation then goes through the same parsing the Admin API and import use
(``realms.representation.clients``). A value that cannot be mapped is ``invalid_client_metadata``
"Client metadata invalid", Keycloak's answer."""
import json

from jwcrypto import jwk
from jwcrypto.common import JWException

from ..errors import InvalidClientMetadata

METADATA_INVALID = "Client metadata invalid"
DELIMITER = "##"  # Keycloak's multivalued client attributes (Constants.CFG_DELIMITER)
CIBA = "urn:openid:params:grant-type:ciba"
DEVICE = "urn:ietf:params:oauth:grant-type:device_code"
UMA = "urn:ietf:params:oauth:grant-type:uma-ticket"
KNOWN_GRANTS = {"authorization_code", "implicit", "refresh_token", "password", "client_credentials", CIBA, DEVICE,
                UMA, "urn:ietf:params:oauth:grant-type:token-exchange",
                "urn:ietf:params:oauth:grant-type:jwt-bearer"}
# token_endpoint_auth_method -> Keycloak's client authenticator; back: the first method Keycloak names.
AUTH_METHODS = {"client_secret_basic": "client-secret", "client_secret_post": "client-secret",
                "client_secret_jwt": "client-secret-jwt", "private_key_jwt": "client-jwt",
                "tls_client_auth": "client-x509", "self_signed_tls_client_auth": "client-x509-self-signed",
                "none": "none"}
AUTH_METHOD_OF = {"client-secret": "client_secret_basic", "client-secret-jwt": "client_secret_jwt",
                  "client-jwt": "private_key_jwt", "client-x509": "tls_client_auth",
                  "client-x509-self-signed": "self_signed_tls_client_auth", "none": "none"}
# Metadata kept as one client attribute each (OIDCAdvancedConfigWrapper's names).
STRING_ATTRIBUTES = {
    "logo_uri": "logoUri", "policy_uri": "policyUri", "tos_uri": "tosUri",
    "token_endpoint_auth_signing_alg": "token.endpoint.auth.signing.alg",
    "id_token_signed_response_alg": "id.token.signed.response.alg",
    "id_token_encrypted_response_alg": "id.token.encrypted.response.alg",
    "id_token_encrypted_response_enc": "id.token.encrypted.response.enc",
    "userinfo_signed_response_alg": "user.info.response.signature.alg",
    "userinfo_encrypted_response_alg": "user.info.encrypted.response.alg",
    "userinfo_encrypted_response_enc": "user.info.encrypted.response.enc",
    "request_object_signing_alg": "request.object.signature.alg",
    "request_object_encryption_alg": "request.object.encryption.alg",
    "request_object_encryption_enc": "request.object.encryption.enc",
    "authorization_signed_response_alg": "authorization.signed.response.alg",
    "authorization_encrypted_response_alg": "authorization.encrypted.response.alg",
    "authorization_encrypted_response_enc": "authorization.encrypted.response.enc",
    "tls_client_auth_subject_dn": "x509.subjectdn",  # Keycloak's X509ClientAuthenticator.ATTR_SUBJECT_DN
    "backchannel_logout_uri": "backchannel.logout.url",
    "frontchannel_logout_uri": "frontchannel.logout.url",
    "backchannel_token_delivery_mode": "ciba.backchannel.token.delivery.mode",
    "backchannel_authentication_request_signing_alg": "ciba.backchannel.auth.request.signing.alg",
}
LIST_ATTRIBUTES = {"contacts": "contacts", "post_logout_redirect_uris": "post.logout.redirect.uris",
                   "request_uris": "request.uris", "default_acr_values": "default.acr.values"}
BOOL_ATTRIBUTES = {  # metadata -> (attribute, Keycloak's value when the metadata is absent, or None)
    "backchannel_logout_session_required": ("backchannel.logout.session.required", "true"),
    "backchannel_logout_revoke_offline_tokens": ("backchannel.logout.revoke.offline.tokens", "false"),
    "frontchannel_logout_session_required": ("frontchannel.logout.session.required", None),
    "tls_client_certificate_bound_access_tokens": ("tls.client.certificate.bound.access.tokens", None),
    "require_pushed_authorization_requests": ("require.pushed.authorization.requests", None),
}
RESPONSE_TYPES = {"code", "token", "id_token", "none"}


def _invalid():
    return InvalidClientMetadata(METADATA_INVALID, event_error="invalid_client_metadata")


def _str(meta, name):
    value = meta.get(name)
    if value is not None and not isinstance(value, str):
        raise _invalid()
    return value


def _list(meta, name):
    value = meta.get(name)
    if value is not None and (not isinstance(value, list) or not all(isinstance(v, str) for v in value)):
        raise _invalid()
    return value


def _response_types(values):
    """(standard flow, implicit flow) of ``response_types`` (Keycloak's OIDCResponseType.parse)."""
    standard = implicit = False
    for value in values or ["code"]:
        parts = set(value.split(" "))
        if not parts <= RESPONSE_TYPES or ("none" in parts and len(parts) > 1) or parts == {"token"}:
            raise _invalid()
        standard |= "code" in parts
        implicit |= bool(parts & {"token", "id_token"})
    return standard, implicit


def _jwks(value):
    """The JWKS as stored in ``jwks.string``; None when it has no signing key."""
    if not isinstance(value, dict):
        raise _invalid()
    try:
        keys = jwk.JWKSet.from_json(json.dumps(value))
    except (ValueError, TypeError, KeyError, JWException):
        raise _invalid() from None
    signing = [k for k in keys if k.get("use", "sig") == "sig" and not k.has_private]
    return json.dumps(value) if signing else None


def to_internal(meta):
    """ClientRepresentation (a JSON dict) of RFC 7591 metadata."""
    if not isinstance(meta, dict):
        raise _invalid()
    attrs = {}
    rep = {"clientId": _str(meta, "client_id"), "name": _str(meta, "client_name"),
           "redirectUris": _list(meta, "redirect_uris") or [], "baseUrl": _str(meta, "client_uri"),
           "protocol": "openid-connect", "attributes": attrs}
    scope = _str(meta, "scope")
    if scope is not None:
        rep["optionalClientScopes"] = [s for s in scope.split(" ") if s]
    rep["standardFlowEnabled"], rep["implicitFlowEnabled"] = _response_types(_list(meta, "response_types"))
    grants = _list(meta, "grant_types")
    if grants is not None:
        if not set(grants) <= KNOWN_GRANTS:
            raise _invalid()
        rep["directAccessGrantsEnabled"] = "password" in grants
        rep["serviceAccountsEnabled"] = "client_credentials" in grants
        attrs["oidc.ciba.grant.enabled"] = str(CIBA in grants).lower()
        attrs["oauth2.device.authorization.grant.enabled"] = str(DEVICE in grants).lower()
        attrs["use.refresh.tokens"] = str("refresh_token" in grants).lower()
        if UMA in grants:
            rep["authorizationServicesEnabled"] = True
    method = _str(meta, "token_endpoint_auth_method")
    if method is not None and method not in AUTH_METHODS:
        raise _invalid()
    rep["clientAuthenticatorType"] = AUTH_METHODS[method or "client_secret_basic"]
    rep["publicClient"] = method == "none"
    jwks, jwks_uri = meta.get("jwks"), _str(meta, "jwks_uri")
    if jwks is not None and jwks_uri is not None:
        raise _invalid()  # "Illegal to use both jwks_uri and jwks"
    key_set = False
    if jwks is not None:
        text = _jwks(jwks)
        if text is not None:
            attrs.update({"use.jwks.string": "true", "jwks.string": text, "use.jwks.url": "false"})
            key_set = True
    elif jwks_uri is not None:
        attrs.update({"use.jwks.url": "true", "jwks.url": jwks_uri})
        key_set = True
    if method in ("private_key_jwt", "self_signed_tls_client_auth") and not key_set:
        raise _invalid()  # "Didn't find key of supported keyType for use sig"
    for name, attribute in STRING_ATTRIBUTES.items():
        value = _str(meta, name)
        if value is not None:
            attrs[attribute] = value
    if "x509.subjectdn" in attrs:
        # RFC 8705 §2.1.2: the DN itself, never a pattern (Keycloak's DescriptionConverter too).
        attrs["x509.allow.regex.pattern.comparison"] = "false"
    elif method == "tls_client_auth":
        raise _invalid()  # a client no certificate could ever authenticate
    for name, attribute in LIST_ATTRIBUTES.items():
        value = _list(meta, name)
        if value is not None:
            attrs[attribute] = DELIMITER.join(value)
    for name, (attribute, default) in BOOL_ATTRIBUTES.items():
        value = meta.get(name)
        if value is not None and not isinstance(value, bool):
            raise _invalid()
        if value is not None or default is not None:
            attrs[attribute] = default if value is None else str(value).lower()
    if meta.get("frontchannel_logout_uri"):
        rep["frontchannelLogout"] = True
    mode = attrs.get("ciba.backchannel.token.delivery.mode")
    if mode is not None and mode not in ("poll", "ping"):
        raise _invalid()  # "Unsupported requested backchannel_token_delivery_mode"
    return {k: v for k, v in rep.items() if v is not None}


def _grant_types(rep):
    attrs = rep.get("attributes") or {}
    on = lambda name: attrs.get(name) == "true"  # noqa: E731
    grants = [g for g, enabled in (
        ("authorization_code", rep.get("standardFlowEnabled")), ("implicit", rep.get("implicitFlowEnabled")),
        ("password", rep.get("directAccessGrantsEnabled")), ("client_credentials", rep.get("serviceAccountsEnabled")),
        (DEVICE, on("oauth2.device.authorization.grant.enabled")), (CIBA, on("oidc.ciba.grant.enabled")),
        (UMA, rep.get("authorizationServicesEnabled")),
        ("refresh_token", attrs.get("use.refresh.tokens", "true") == "true")) if enabled]
    return grants


def _response_types_of(rep):
    out = []
    standard, implicit = rep.get("standardFlowEnabled"), rep.get("implicitFlowEnabled")
    if standard:
        out += ["code", "none"]
    if implicit:
        out += ["id_token", "id_token token"]
    if standard and implicit:
        out += ["code id_token", "code token", "code id_token token"]
    return out


def to_external(rep, uri, registration_access_token=None):
    """RFC 7591 §3.2.1 / RFC 7592 §3 metadata of a client's representation."""
    attrs = rep.get("attributes") or {}
    authenticator = rep.get("clientAuthenticatorType") or "client-secret"
    if rep.get("publicClient"):
        authenticator = "none"
    out = {"client_id": rep["clientId"], "token_endpoint_auth_method": AUTH_METHOD_OF.get(authenticator, authenticator)}
    if authenticator in ("client-secret", "client-secret-jwt") and rep.get("secret"):
        out.update(client_secret=rep["secret"], client_secret_expires_at=0)
    out.update({"client_name": rep.get("name") or None, "client_uri": rep.get("baseUrl") or None,
                "redirect_uris": rep.get("redirectUris") or [], "registration_client_uri": uri,
                "response_types": _response_types_of(rep), "grant_types": _grant_types(rep)})
    if registration_access_token:
        out["registration_access_token"] = registration_access_token
    scopes = rep.get("optionalClientScopes")
    if scopes:
        out["scope"] = " ".join(scopes)
    if attrs.get("use.jwks.url") == "true":
        out["jwks_uri"] = attrs.get("jwks.url", "")
    elif attrs.get("use.jwks.string") == "true" and attrs.get("jwks.string"):
        try:
            out["jwks"] = json.loads(attrs["jwks.string"])
        except ValueError:
            pass
    for name, attribute in STRING_ATTRIBUTES.items():
        if attrs.get(attribute):
            out[name] = attrs[attribute]
    for name, attribute in LIST_ATTRIBUTES.items():
        if attrs.get(attribute):
            out[name] = attrs[attribute].split(DELIMITER)
    for name, (attribute, default) in BOOL_ATTRIBUTES.items():
        value = attrs.get(attribute, default)
        if value is not None:
            out[name] = value == "true"
    out["tls_client_certificate_bound_access_tokens"] = attrs.get("tls.client.certificate.bound.access.tokens") == "true"
    out["require_pushed_authorization_requests"] = attrs.get("require.pushed.authorization.requests") == "true"
    out["subject_type"] = "public"
    return {k: v for k, v in out.items() if v is not None}
