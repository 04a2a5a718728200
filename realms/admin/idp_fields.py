"""The settings each identity provider type's page shows, in the order, sections and words of
Keycloak's admin console (``identity-providers/add``: OIDCGeneralSettings, DiscoverySettings,
OIDCAuthentication, ExtendedNonDiscoverySettings, SamlGeneralSettings, DescriptorSettings,
ReqAuthnConstraintsSettings, the social providers' pages). Each entry is one key of the
provider's config string map; the provider types themselves (``realms.brokering.providers``)
check the values when the form is saved, so a page never accepts what the type refuses.

A type the registry does not hold gets no page: ``sections`` answers only for registered types,
and a registered type this module does not describe gets the fields every provider has."""
from dataclasses import dataclass, replace

from django import forms

from .keyed import Key
from .secrets import MASK


@dataclass(frozen=True)
class Setting:
    key: str  # Keycloak's config key
    label: str
    kind: str = "text"  # text, url, bool, secret, choice, number, textarea
    help: str = ""
    choices: tuple = ()
    default: str = ""
    required: bool = False


def _b(key, label, help="", default=""):
    return Setting(key, label, "bool", help, default=default)


# What a client assertion can be signed with here: HMAC for client_secret_jwt, a realm key's
# algorithm for private_key_jwt (the types refuse the others).
SIGNATURE_ALGORITHMS = ("HS256", "HS384", "HS512", "RS256", "ES256", "EdDSA")
CLIENT_AUTHENTICATIONS = (("client_secret_post", "Client secret sent as post"),
                          ("client_secret_basic", "Client secret sent as basic auth"),
                          ("client_secret_jwt", "JWT signed with client secret"),
                          ("private_key_jwt", "JWT signed with private key"))
PROMPTS = (("", "unspecified"), ("none", "none"), ("consent", "consent"), ("login", "login"),
           ("select_account", "select_account"))
SYNC_MODES = (("IMPORT", "Import"), ("LEGACY", "Legacy"), ("FORCE", "Force"))

CLIENT_ID = Setting("clientId", "Client ID", required=True, help="The client identifier registered with the "
                    "identity provider.")
CLIENT_SECRET = Setting("clientSecret", "Client Secret", "secret", help="The client secret registered with the "
                        "identity provider. Never shown again: leave it empty to keep the stored one.")
SCOPES = Setting("defaultScope", "Scopes", help="The scopes to be sent when asking for authorization, separated "
                 "by spaces.")

OIDC_ENDPOINTS = (
    Setting("authorizationUrl", "Authorization URL", "url", required=True),
    Setting("tokenUrl", "Token URL", "url", required=True),
    Setting("logoutUrl", "Logout URL", "url", help="End session endpoint to use to logout user from external "
            "IDP."),
    Setting("userInfoUrl", "User Info URL", "url"),
    Setting("issuer", "Issuer", help="The issuer identifier for the issuer of the response. If not provided, "
            "no validation will be performed."),
    _b("validateSignature", "Validate Signatures", "Enable/disable signature validation of external IDP "
       "signatures."),
    _b("useJwksUrl", "Use JWKS URL", "If the switch is on, identity provider public keys will be downloaded "
       "from given JWKS URL."),
    Setting("jwksUrl", "JWKS URL", "url", help="URL where identity provider keys in JWK format are stored."),
    Setting("publicKeySignatureVerifier", "Validating public key", "textarea", help="The public key in PEM format "
            "that must be used to verify external IDP signatures (when JWKS URL is off)."),
    Setting("publicKeySignatureVerifierKeyId", "Validating public key id", help="Explicit ID of the validating "
            "public key given above if the key ID. Leave blank if the key above should be used always."),
    _b("pkceEnabled", "Use PKCE", "Use PKCE (Proof of Key-code exchange) for IdP Brokering."),
    Setting("pkceMethod", "PKCE Method", "choice", choices=(("plain", "plain"), ("S256", "S256")), default="S256"),
)
OIDC_CLIENT = (
    Setting("clientAuthMethod", "Client authentication", "choice", "The client authentication method.",
            CLIENT_AUTHENTICATIONS, default="client_secret_post"),
    CLIENT_ID,
    CLIENT_SECRET,
    Setting("clientAssertionSigningAlg", "Client assertion signature algorithm", "choice",
            "Signature algorithm to create JWT assertion as client authentication.",
            (("", "Algorithm not specified"), *((a, a) for a in SIGNATURE_ALGORITHMS))),
    Setting("clientAssertionAudience", "Client assertion audience", help="The audience to use for the client "
            "assertion. The default value is the IDP token endpoint URL."),
)
OIDC_ADVANCED = (
    _b("loginHint", "Pass login_hint", "Pass login_hint to identity provider."),
    _b("passMaxAge", "Pass max_age", "Pass max_age to identity provider."),
    _b("uiLocales", "Pass current locale", "Pass the current locale to the identity provider as a ui_locales "
       "parameter."),
    _b("backchannelSupported", "Backchannel logout", "Does the external IDP support backchannel logout?"),
    _b("sendIdTokenOnLogout", "Send 'id_token_hint' in logout requests", default="true"),
    _b("sendClientIdOnLogout", "Send 'client_id' in logout requests"),
    _b("disableUserInfo", "Disable user info", "Disable usage of User Info service to obtain additional user "
       "information?"),
    _b("disableNonce", "Disable nonce", "Do not send the nonce parameter in the authentication request."),
    _b("disableTypeClaimCheck", "Disable type claim check", "Do not check the ID token's typ claim."),
    SCOPES,
    Setting("prompt", "Prompt", "choice", "Specifies whether the Authorization Server prompts the End-User for "
            "reauthentication and consent.", PROMPTS),
    _b("acceptsPromptNoneForwardFromClient", "Accepts prompt=none forward from client"),
    Setting("allowedClockSkew", "Allowed clock skew", "number", "Clock skew in seconds that is tolerated when "
            "validating identity provider tokens. Default value is zero."),
)
OAUTH2_CLAIMS = (
    Setting("userIDClaim", "ID Claim", default="sub"),
    Setting("userNameClaim", "Username Claim", default="preferred_username"),
    Setting("emailClaim", "Email Claim", default="email"),
    Setting("fullNameClaim", "Name Claim", default="name"),
    Setting("givenNameClaim", "Given name Claim", default="given_name"),
    Setting("familyNameClaim", "Family name Claim", default="family_name"),
)

NAME_ID_FORMATS = (
    ("urn:oasis:names:tc:SAML:2.0:nameid-format:persistent", "Persistent"),
    ("urn:oasis:names:tc:SAML:2.0:nameid-format:transient", "Transient"),
    ("urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress", "Email"),
    ("urn:oasis:names:tc:SAML:2.0:nameid-format:kerberos", "Kerberos"),
    ("urn:oasis:names:tc:SAML:1.1:nameid-format:X509SubjectName", "X.509 Subject Name"),
    ("urn:oasis:names:tc:SAML:1.1:nameid-format:WindowsDomainQualifiedName", "Windows Domain Qualified Name"),
    ("urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified", "Unspecified"),
)
SAML_SETTINGS = (
    Setting("entityId", "Service provider entity ID", help="The Entity ID that will be used to uniquely identify "
            "this SAML Service Provider (empty: the realm's issuer)."),
    Setting("idpEntityId", "Identity provider entity ID", help="The Entity ID used to validate the Issuer for "
            "received SAML assertions. If empty, no Issuer validation is performed."),
    Setting("singleSignOnServiceUrl", "Single Sign-On service URL", "url", required=True),
    Setting("singleLogoutServiceUrl", "Single logout service URL", "url"),
    _b("backchannelSupported", "Backchannel logout"),
    Setting("nameIDPolicyFormat", "NameID policy format", "choice", choices=NAME_ID_FORMATS,
            default=NAME_ID_FORMATS[0][0]),
    Setting("principalType", "Principal type", "choice", "Way to identify and track external users from the "
            "assertion.", (("SUBJECT", "Subject NameID"), ("ATTRIBUTE", "Attribute [Name]"),
                          ("FRIENDLY_ATTRIBUTE", "Attribute [Friendly Name]")), default="SUBJECT"),
    Setting("principalAttribute", "Principal attribute", help="Name or Friendly Name of the attribute used to "
            "identify external users."),
    _b("allowCreate", "Allow create", default="true"),
    _b("postBindingResponse", "HTTP-POST binding response"),
    _b("postBindingAuthnRequest", "HTTP-POST binding for AuthnRequest"),
    _b("postBindingLogout", "HTTP-POST binding logout"),
    _b("wantAuthnRequestsSigned", "Want AuthnRequests signed"),
    Setting("signatureAlgorithm", "Signature algorithm", "choice", choices=tuple(
        (a, a) for a in ("RSA_SHA256", "RSA_SHA1", "RSA_SHA512")), default="RSA_SHA256"),
    Setting("xmlSigKeyInfoKeyNameTransformer", "SAML signature key name", "choice", choices=tuple(
        (a, a) for a in ("NONE", "KEY_ID", "CERT_SUBJECT")), default="NONE"),
    _b("wantAssertionsSigned", "Want Assertions signed"),
    _b("wantAssertionsEncrypted", "Want Assertions encrypted"),
    _b("forceAuthn", "Force authentication"),
    _b("validateSignature", "Validate Signatures"),
    Setting("signingCertificate", "Validating X509 certificates", "textarea", "The certificates in PEM format "
            "that must be used to check for signatures, separated by commas."),
    _b("signSpMetadata", "Sign service provider metadata"),
    _b("loginHint", "Pass subject", "Forward the login_hint as the AuthnRequest's Subject."),
    Setting("allowedClockSkew", "Allowed clock skew", "number"),
    Setting("attributeConsumingServiceIndex", "Attribute Consuming Service Index", "number"),
    Setting("attributeConsumingServiceName", "Attribute Consuming Service Name"),
)
SAML_AUTHN_CONTEXT = (
    Setting("authnContextComparisonType", "Comparison", "choice", choices=tuple(
        (a, a.capitalize()) for a in ("exact", "minimum", "maximum", "better")), default="exact"),
    Setting("authnContextClassRefs", "AuthnContext ClassRefs", help='As Keycloak stores them: a JSON list, '
            'e.g. ["urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport"].'),
    Setting("authnContextDeclRefs", "AuthnContext DeclRefs", help="A JSON list, as the class refs."),
)

# The social providers' own settings beside the client id and secret (Keycloak's pages of each).
SOCIAL_EXTRAS = {
    "google": (Setting("hostedDomain", "Hosted domain", help="Set 'hd' query parameter when logging in with "
                       "Google. Google will list accounts only for this domain."),
               _b("offlineAccess", "Request refresh token", "Set 'access_type' query parameter to 'offline' when "
                  "redirecting to google authorization endpoint, to get a refresh token back.")),
    "github": (Setting("baseUrl", "Base URL", "url", help="Override the default Base URL for this identity "
                       "provider (GitHub Enterprise)."),
               Setting("apiUrl", "API URL", "url", help="Override the default API URL for this identity provider."),
               _b("githubJsonFormat", "JSON format", "Ask GitHub's token endpoint for a JSON answer.")),
    "microsoft": (Setting("tenantId", "Tenant ID", help="Using a tenant ID limits the login to the given "
                          "tenant."),),
    "facebook": (Setting("fetchedFields", "Additional user's profile fields", help="Provide additional fields "
                         "which would be fetched using the profile request, separated by commas."),),
    "stackoverflow": (Setting("key", "Key", required=True),),
    "paypal": (_b("sandbox", "Target sandbox"),),
}

def _only(settings, keys, required=()):
    """The ``settings`` among ``keys`` (an OAuth 2 provider has a subset of OpenID Connect's)."""
    return tuple(replace(s, required=True) if s.key in required else s for s in settings if s.key in keys)


# Keycloak's JwtAuthorizationGrantSettings of an OpenID Connect provider (read by oidc.jwt_grant).
JWT_AUTHORIZATION_GRANT = (
    _b("jwtAuthorizationGrantEnabled", "JWT Authorization Grant", "Trust JWTs this provider signs as "
       "authorization grants (RFC 7523) from the clients that allow it."),
    _b("jwtAuthorizationGrantAssertionReuseAllowed", "Allow assertion reuse", "If off, an assertion (its jti) is "
       "accepted once."),
    Setting("jwtAuthorizationGrantMaxAllowedAssertionExpiration", "Max allowed assertion expiration", "number",
            "Maximum time in seconds an assertion may be used after its iat (or before its exp without iat).",
            default="300"),
    Setting("jwtAuthorizationGrantAssertionSignatureAlg", "Assertion signature algorithm", "choice",
            "The only algorithm accepted for assertions (any asymmetric one when not specified).",
            (("", "Algorithm not specified"), *((a, a) for a in ("ES256", "ES384", "ES512", "EdDSA", "PS256", "PS384",
                                                                 "PS512", "RS256", "RS384", "RS512")))),
    _b("jwtAuthorizationGrantLimitAccessTokenExp", "Limit access token expiration", "The access token expires no "
       "later than the assertion."),
)

SECTIONS = {
    "oidc": (("OpenID Connect settings", OIDC_ENDPOINTS + OIDC_CLIENT), ("Advanced", OIDC_ADVANCED),
             ("JWT Authorization Grant", JWT_AUTHORIZATION_GRANT)),
    "oauth2": (("OAuth 2.0 settings", _only(OIDC_ENDPOINTS + OIDC_CLIENT, (
        "authorizationUrl", "tokenUrl", "userInfoUrl", "pkceEnabled", "pkceMethod", "clientAuthMethod", "clientId",
        "clientSecret", "clientAssertionSigningAlg", "clientAssertionAudience"), required=("userInfoUrl",))),
               ("User profile claims", OAUTH2_CLAIMS),
               ("Advanced", _only(OIDC_ADVANCED, ("loginHint", "passMaxAge", "uiLocales", "disableUserInfo",
                                                  "defaultScope", "prompt", "acceptsPromptNoneForwardFromClient",
                                                  "allowedClockSkew")))),
    "saml": (("SAML settings", SAML_SETTINGS), ("Requested AuthnContext Constraints", SAML_AUTHN_CONTEXT)),
}
SECTIONS["keycloak-oidc"] = SECTIONS["oidc"]
# The title of the type's own section on a social provider's page.
SOCIAL_TITLE = "Provider details"
# The config key the metadata of an importing type is read from, and its label (Keycloak's
# "Discovery endpoint" for OpenID Connect, "SAML entity descriptor" for SAML).
IMPORT_LABELS = {"saml": "SAML entity descriptor"}
IMPORT_LABEL = "Discovery endpoint"
# Keycloak's own order of the types in "Add provider": the protocols, then the social ones by name.
PROTOCOL_ORDER = ("keycloak-oidc", "oidc", "oauth2", "saml")
GUI_ORDER = Setting("guiOrder", "Display order", "number", "Number defining the order of the providers in GUI "
                    "(for example, on the Login page). The lowest number will be applied first.")
SYNC_MODE = Setting("syncMode", "Sync mode", "choice", "Default sync mode for all mappers. The sync mode "
                    "determines when user data will be synced using the mappers.", SYNC_MODES, default="IMPORT")
CASE_SENSITIVE = _b("caseSensitiveOriginalUsername", "Case-sensitive username", "If enabled, the original "
                    "username from the identity provider is kept as is when federating users.")


def sections(provider_type):
    """(title, settings) of the type's own sections, for a registered type."""
    if provider_type.provider_id in SECTIONS:
        return SECTIONS[provider_type.provider_id]
    if provider_type.social:
        return ((SOCIAL_TITLE, (CLIENT_ID, CLIENT_SECRET, *social_extras(provider_type))),
                ("Advanced", (SCOPES, *_only(OIDC_ADVANCED, ("acceptsPromptNoneForwardFromClient", "disableUserInfo")))))
    return ()


def social_extras(provider_type):
    """A social type's own settings: those it declares (``extra``, ``extra_booleans``: the keys
    its config accepts), in Keycloak's words where Keycloak's page has them."""
    declared = [*getattr(provider_type, "extra", ()), *getattr(provider_type, "extra_booleans", ())]
    known = {s.key: s for s in SOCIAL_EXTRAS.get(provider_type.provider_id, ())}
    booleans = set(getattr(provider_type, "extra_booleans", ()))
    return tuple(known.get(key) or Setting(key, key, "bool" if key in booleans else "text") for key in declared)


def ordered(types):
    """The registered types as Keycloak's "Add provider" lists them."""
    rank = {pid: n for n, pid in enumerate(PROTOCOL_ORDER)}
    return sorted(types, key=lambda t: (t.provider_id not in rank, rank.get(t.provider_id, 0),
                                        (t.name or t.provider_id).lower()))


def form_name(key):
    return f"config_{key}"


class WriteOnlyKey(Key):
    """A secret the page never shows: the field is always empty; left empty, the stored secret is
    kept; Keycloak's mask posted back (an old page) keeps it too."""

    def from_json(self, value):
        return ""

    def to_json(self, value, stored):
        return stored if value in ("", None, MASK) else value


def form_field(setting, *, adding):
    """The form field of one setting, as Keycloak's console draws it."""
    common = {"label": setting.label, "help_text": setting.help, "required": setting.required}
    if setting.kind == "bool":
        common["required"] = False
        return forms.BooleanField(**common)
    if setting.kind == "secret":
        common["required"] = False
        return forms.CharField(widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
                               **common)
    if setting.kind == "choice":
        return forms.ChoiceField(choices=setting.choices, **{**common, "required": False})
    if setting.kind == "number":
        return forms.IntegerField(min_value=0, **{**common, "required": setting.required})
    if setting.kind == "url":
        return forms.URLField(assume_scheme="https", widget=forms.URLInput(attrs={"size": 60}), **common)
    if setting.kind == "textarea":
        return forms.CharField(widget=forms.Textarea(attrs={"rows": 4, "cols": 60}), **common)
    return forms.CharField(widget=forms.TextInput(attrs={"size": 40}), **common)


def keys_of(settings, *, adding):
    """{form field name: keyed.Key} for ``settings`` (Keycloak's string map: "true", "587")."""
    keys = {}
    for setting in settings:
        field = form_field(setting, adding=adding)
        if adding and setting.default:
            field.initial = setting.default == "true" if setting.kind == "bool" else setting.default
        kind = WriteOnlyKey if setting.kind == "secret" else Key
        keys[form_name(setting.key)] = kind("config", setting.key, field, as_string=True, omit_empty=True)
    return keys
