"""Keycloak's config keys of the OpenID Connect and OAuth 2 provider types (OIDCIdentityProviderConfig,
OAuth2IdentityProviderConfig), checked before they are stored and read with Keycloak's defaults,
and the config map read from a discovery document (Keycloak's import-config).

Every key accepted takes effect. Keys of features this server does not implement (forwarding
arbitrary request parameters, token exchange, re-reading metadata from its URL) are refused
when set, so an admin never believes a setting works that
does not."""
import json
import re
from urllib.parse import urlsplit

TRUE, FALSE = "true", "false"
CLIENT_AUTH_METHODS = ("client_secret_post", "client_secret_basic", "client_secret_jwt", "private_key_jwt")
HMAC_ALGS = ("HS256", "HS384", "HS512")
# What a realm key can sign a private_key_jwt with (realms.data.keys).
KEY_ALGS = ("RS256", "ES256", "EdDSA")
PKCE_METHODS = ("plain", "S256")
# The identity provider model's own keys, kept in the same map (realms.brokering).
GENERIC = ("syncMode", "guiOrder", "hideOnLoginPage", "caseSensitiveOriginalUsername")
OAUTH2_BOOLEANS = ("pkceEnabled", "loginHint", "uiLocales", "passMaxAge", "acceptsPromptNoneForwardFromClient",
                   "disableUserInfo")
OAUTH2_URLS = ("authorizationUrl", "tokenUrl", "userInfoUrl")
OAUTH2_TEXTS = ("clientId", "clientSecret", "clientAuthMethod", "clientAssertionSigningAlg",
                "clientAssertionAudience", "defaultScope", "pkceMethod", "prompt", "allowedClockSkew")
# Keycloak 26's generic OAuth v2: where the user's fields are in the userinfo JSON.
CLAIM_PATHS = ("userIDClaim", "userNameClaim", "emailClaim", "fullNameClaim", "givenNameClaim", "familyNameClaim")
OIDC_BOOLEANS = ("validateSignature", "useJwksUrl", "disableNonce", "disableTypeClaimCheck", "backchannelSupported",
                 "sendIdTokenOnLogout", "sendClientIdOnLogout", "filteredByClaim",
                 # Keycloak's JWT authorization grant trust (read by oidc.jwt_grant).
                 "jwtAuthorizationGrantEnabled", "jwtAuthorizationGrantAssertionReuseAllowed",
                 "jwtAuthorizationGrantLimitAccessTokenExp")
OIDC_URLS = ("jwksUrl", "logoutUrl", "metadataDescriptorUrl")
OIDC_TEXTS = ("issuer", "publicKeySignatureVerifier", "publicKeySignatureVerifierKeyId", "claimFilterName",
              "claimFilterValue", "jwtAuthorizationGrantMaxAllowedAssertionExpiration",
              "jwtAuthorizationGrantAssertionSignatureAlg")
# Keycloak's keys of features this server lacks: accepted empty or "false" (as Keycloak exports
# them), refused when set, with the reason.
UNSUPPORTED = {
    "forwardParameters": "forwarding request parameters to the provider is not supported by this server",
    "isAccessTokenJWT": "token exchange with JWT access tokens is not supported by this server",
    "useMetadataDescriptorUrl": "re-reading metadata from metadataDescriptorUrl is not supported by this server",
    "jwtX509HeadersEnabled": "X.509 headers in client assertions are not supported by this server",
    "tokenIntrospectionUrl": "token exchange (introspecting the provider's tokens) is not supported by this server",
    "supportsClientAssertions": "the provider's client assertions (JWT authorization grant) are not supported by "
                                "this server",
    "supportsClientAssertionReuse": "the provider's client assertions (JWT authorization grant) are not supported "
                                    "by this server",
    "requiresShortStateParameter": "a short state parameter is not supported by this server",
}
PROMPTS = ("", "none", "login", "consent", "select_account", "unspecified")


class Settings:
    """Typed reads of one provider's config, with Keycloak's defaults."""

    def __init__(self, idp):
        self.idp = idp
        self.config = idp.config or {}

    def get(self, name, default=""):
        return self.config.get(name) or default

    def flag(self, name, default=False):
        value = self.config.get(name)
        return default if value in (None, "") else value == TRUE

    @property
    def client_auth_method(self):
        return self.get("clientAuthMethod", "client_secret_post")

    @property
    def clock_skew(self):
        try:
            return max(0, int(self.config.get("allowedClockSkew") or 0))
        except ValueError:
            return 0

    @property
    def pkce_method(self):
        return self.get("pkceMethod", "S256")

    @property
    def send_id_token_on_logout(self):
        return self.flag("sendIdTokenOnLogout", default=True)  # Keycloak's default


def _refuse(message):
    raise ValueError(message)


def _url(name, value):
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        _refuse(f"{name} must be an http or https URL")


def clean(config, *, oidc, extra=(), extra_booleans=(), required=("authorizationUrl", "tokenUrl", "clientId"),
          preset=""):
    """The map to store, or ValueError naming what is wrong (the Admin API shows the message).
    ``oidc``: the OpenID Connect keys are allowed; ``extra``, ``extra_booleans``: a type's own
    keys. A social ``preset`` has its endpoints and claims built in: those keys are refused."""
    config = {k: ("" if v is None else str(v)) for k, v in dict(config or {}).items()}
    booleans = OAUTH2_BOOLEANS + tuple(extra_booleans) + (OIDC_BOOLEANS if oidc and not preset else ())
    urls = () if preset else OAUTH2_URLS + (OIDC_URLS if oidc else ())
    texts = OAUTH2_TEXTS + (() if preset else OIDC_TEXTS if oidc else CLAIM_PATHS) + tuple(extra)
    kind = f"a {preset}" if preset else "an OpenID Connect" if oidc else "an OAuth 2"
    for name, value in config.items():
        if name in UNSUPPORTED:
            if value not in ("", FALSE):
                _refuse(f"{name}: {UNSUPPORTED[name]}")
        elif name not in booleans + urls + texts + GENERIC:
            _refuse(f"Unsupported configuration for {kind} identity provider: {name}")
        elif name in booleans and value not in ("", TRUE, FALSE):
            _refuse(f"{name} must be true or false")
        elif name in urls and value:
            _url(name, value)
    for name in required:
        if not config.get(name):
            _refuse(f"{name} is required")
    method = config.get("clientAuthMethod") or "client_secret_post"
    if method not in CLIENT_AUTH_METHODS:
        _refuse("clientAuthMethod must be one of " + ", ".join(CLIENT_AUTH_METHODS))
    alg = config.get("clientAssertionSigningAlg", "")
    if alg and method == "client_secret_jwt" and alg not in HMAC_ALGS:
        _refuse("clientAssertionSigningAlg must be one of " + ", ".join(HMAC_ALGS) + " for client_secret_jwt")
    if alg and method == "private_key_jwt" and alg not in KEY_ALGS:
        _refuse("clientAssertionSigningAlg must be one of " + ", ".join(KEY_ALGS) + " for private_key_jwt")
    if config.get("pkceMethod", "") not in ("", *PKCE_METHODS):
        _refuse("pkceMethod must be one of " + ", ".join(PKCE_METHODS))
    if config.get("prompt", "") not in PROMPTS:
        _refuse("prompt must be one of " + ", ".join(p for p in PROMPTS if p))
    skew = config.get("allowedClockSkew", "")
    if skew and (not skew.isdigit()):
        _refuse("allowedClockSkew must be a number of seconds, 0 or more")
    if oidc and not preset:
        _clean_oidc(config)
    return config


def _clean_oidc(config):
    if config.get("validateSignature") == TRUE:
        # Unset: the configured key when there is one (Keycloak's default off), else the JWKS.
        if config.get("useJwksUrl", FALSE if config.get("publicKeySignatureVerifier") else TRUE) == TRUE:
            if not config.get("jwksUrl"):
                _refuse("jwksUrl is required when validateSignature and useJwksUrl are on")
        elif not config.get("publicKeySignatureVerifier"):
            _refuse("publicKeySignatureVerifier is required when validateSignature is on and useJwksUrl is off")
    if config.get("filteredByClaim") == TRUE:
        if not config.get("claimFilterName"):
            _refuse("claimFilterName is required when filteredByClaim is on")
        try:
            re.compile(config.get("claimFilterValue", ""))
        except re.error:
            _refuse("claimFilterValue must be a regular expression")
    key = config.get("publicKeySignatureVerifier")
    if key:
        from .jose import configured_key

        try:
            configured_key(key)
        except ValueError as exc:
            _refuse(f"publicKeySignatureVerifier: {exc}")


# import-config --------------------------------------------------------------------------------

def from_discovery(document):
    """Keycloak's import-config of an OpenID Connect discovery document: the endpoints, the issuer,
    the JWKS URL with signature validation on, and the logout endpoint."""
    try:
        data = json.loads(document) if isinstance(document, (str, bytes)) else dict(document)
    except ValueError as exc:
        raise ValueError(f"Failed to import config: the document is not JSON ({exc})") from None
    if not isinstance(data, dict) or not data.get("authorization_endpoint"):
        raise ValueError("Failed to import config: not an OpenID Connect discovery document")
    config = {"authorizationUrl": data.get("authorization_endpoint", ""), "tokenUrl": data.get("token_endpoint", ""),
              "userInfoUrl": data.get("userinfo_endpoint", ""), "issuer": data.get("issuer", ""),
              "logoutUrl": data.get("end_session_endpoint", ""), "jwksUrl": data.get("jwks_uri", ""),
              "metadataDescriptorUrl": ""}
    if config["jwksUrl"]:
        config.update(validateSignature=TRUE, useJwksUrl=TRUE)
    # Keycloak offers back-channel logout when the provider supports it with session ids.
    config["backchannelSupported"] = str(bool(data.get("backchannel_logout_supported"))).lower()
    return {k: v for k, v in config.items() if v}


def claim_path(value):
    """A claim path of Keycloak's mappers and OAuth 2 claim keys: dots separate levels, ``\\.``
    is a literal dot."""
    return [part.replace("\\.", ".") for part in re.split(r"(?<!\\)\.", value)] if value else []


def read_claim(claims, path):
    """The value at a claim path (``address.country``), or None."""
    value = claims
    for part in claim_path(path):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value
