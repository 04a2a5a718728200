"""A SAML identity provider's settings: Keycloak's SAMLIdentityProviderConfig keys read from the
provider's string map (``Settings``), checked before they are stored (``clean_config``), and read
from the provider's metadata (``import_config``, Keycloak's parseConfig).

Every key accepted here takes effect; the keys of features this server does not implement
(artifact binding, the key-info extension, reloading metadata from its URL) are refused when
switched on (Keycloak writes them as "false" or empty, which is accepted), so an admin never believes
a setting works that does not. ``encryptionAlgorithm`` names the key transport our decryption
accepts (RSA-OAEP; RSA1_5 is refused); ``encryptionPublicKey`` and ``metadataDescriptorUrl`` are
what the provider's metadata said and where it came from, kept as Keycloak keeps them (nothing is
encrypted to the provider, and the metadata is read again only by an import)."""
import json
from datetime import UTC, datetime
from urllib.parse import urlsplit

from .. import constants as c
from .. import signatures, xml
from ..errors import UntrustedRequest
from ..inbound import parse_instant

TRUE, FALSE = "true", "false"
PRINCIPAL_TYPES = ("SUBJECT", "ATTRIBUTE", "FRIENDLY_ATTRIBUTE")
KEY_NAME_TRANSFORMERS = ("NONE", "KEY_ID", "CERT_SUBJECT")
COMPARISON_TYPES = ("exact", "minimum", "maximum", "better")
BOOLEANS = ("postBindingResponse", "postBindingAuthnRequest", "postBindingLogout", "wantAuthnRequestsSigned",
            "wantAssertionsSigned", "wantAssertionsEncrypted", "validateSignature", "forceAuthn", "allowCreate",
            "backchannelSupported", "signSpMetadata", "loginHint", "enabledFromMetadata")
URLS = ("singleSignOnServiceUrl", "singleLogoutServiceUrl", "metadataDescriptorUrl")
TEXTS = ("entityId", "idpEntityId", "nameIDPolicyFormat", "principalAttribute", "attributeConsumingServiceName",
         "signingCertificate", "authnContextClassRefs", "authnContextDeclRefs", "authnContextComparisonType",
         "principalType", "signatureAlgorithm", "xmlSigKeyInfoKeyNameTransformer", "allowedClockSkew",
         "attributeConsumingServiceIndex", "encryptionAlgorithm", "encryptionPublicKey")
# Features of Keycloak's SAML provider this server does not implement: refused when on.
UNSUPPORTED_WHEN_ON = ("artifactBindingResponse", "addExtensionsElementWithKeyInfo", "useMetadataDescriptorUrl",
                       "sendClientIdOnLogout", "sendIdTokenOnLogout", "artifactResolutionServiceUrl")
# The key transport our decryption accepts (Keycloak's encryptionAlgorithm): RSA-OAEP only.
ENCRYPTION_ALGORITHMS = ("RSA-OAEP",)
# The identity provider model's own keys, kept in the same map (``realms.brokering``).
GENERIC = ("syncMode", "guiOrder", "hideOnLoginPage", "caseSensitiveOriginalUsername")


class Settings:
    """Typed reads of one provider's config, with Keycloak's defaults."""

    def __init__(self, idp):
        self.idp = idp
        self.config = idp.config or {}

    def flag(self, name, default=False):
        value = self.config.get(name)
        return default if value in (None, "") else value == TRUE

    @property
    def post_binding_logout(self):
        # Keycloak: unset follows postBindingResponse.
        if self.config.get("postBindingLogout") in (None, ""):
            return self.flag("postBindingResponse")
        return self.flag("postBindingLogout")

    def entity_id(self, issuer):
        """Our entity id at the provider: ``entityId``, else the realm's issuer URL."""
        return self.config.get("entityId") or issuer

    @property
    def name_id_format(self):
        return self.config.get("nameIDPolicyFormat") or c.NAMEID_PERSISTENT

    @property
    def principal_type(self):
        value = self.config.get("principalType") or "SUBJECT"
        return value if value in PRINCIPAL_TYPES else "SUBJECT"

    @property
    def algorithm(self):
        value = self.config.get("signatureAlgorithm") or signatures.DEFAULT_ALGORITHM
        return value if value in signatures.KEYCLOAK_ALGORITHMS else signatures.DEFAULT_ALGORITHM

    @property
    def key_name_transformer(self):
        # Keycloak's default for identity providers: NONE (no KeyName in the signature).
        value = self.config.get("xmlSigKeyInfoKeyNameTransformer") or "NONE"
        return value if value in KEY_NAME_TRANSFORMERS else "NONE"

    @property
    def clock_skew(self):
        return _non_negative(self.config.get("allowedClockSkew")) or 0

    @property
    def attribute_consuming_service_index(self):
        return _non_negative(self.config.get("attributeConsumingServiceIndex"))

    def certificates(self):
        """The provider's signing certificates (``signingCertificate``, comma separated)."""
        found = []
        for text in (self.config.get("signingCertificate") or "").split(","):
            cert = signatures.certificate_from_attribute(text)
            if cert is not None:
                found.append(cert)
        return found

    def authn_context(self):
        """(comparison, class refs, decl refs) of the RequestedAuthnContext to send."""
        return (self.config.get("authnContextComparisonType") or "exact", _json_list(
            self.config.get("authnContextClassRefs")), _json_list(self.config.get("authnContextDeclRefs")))


def _non_negative(value):
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if number >= 0 else None


def _json_list(value):
    if not value:
        return []
    try:
        parsed = json.loads(value)
    except ValueError:
        return []
    return [str(v) for v in parsed if v] if isinstance(parsed, list) else []


def _refuse(message):
    raise ValueError(message)


def clean_config(config):
    """The map to store, or ValueError naming what is wrong (the Admin API shows the message)."""
    config = {k: ("" if v is None else str(v)) for k, v in dict(config or {}).items()}
    for name, value in config.items():
        if name in UNSUPPORTED_WHEN_ON:
            if value and value.lower() != FALSE:
                _refuse(f"{name} is not supported by this server")
        elif name not in BOOLEANS + URLS + TEXTS + GENERIC:
            _refuse(f"Unsupported configuration for a SAML identity provider: {name}")
        elif name in BOOLEANS and value not in ("", TRUE, FALSE):
            _refuse(f"{name} must be true or false")
    for name in URLS:
        url = config.get(name, "")
        if url and (urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).netloc):
            _refuse(f"{name} must be an http or https URL")
    if not config.get("singleSignOnServiceUrl"):
        _refuse("singleSignOnServiceUrl is required")
    principal = config.get("principalType") or "SUBJECT"
    if principal not in PRINCIPAL_TYPES:
        _refuse("principalType must be one of " + ", ".join(PRINCIPAL_TYPES))
    if principal != "SUBJECT" and not config.get("principalAttribute"):
        _refuse("principalAttribute is required when principalType is " + principal)
    if config.get("nameIDPolicyFormat") == c.NAMEID_TRANSIENT and principal == "SUBJECT":
        _refuse("Can not have Transient NameID Policy Format together with SUBJECT Principal Type")
    if config.get("signatureAlgorithm", "") not in ("", *signatures.KEYCLOAK_ALGORITHMS):
        _refuse("signatureAlgorithm must be one of " + ", ".join(signatures.KEYCLOAK_ALGORITHMS))
    if config.get("xmlSigKeyInfoKeyNameTransformer", "") not in ("", *KEY_NAME_TRANSFORMERS):
        _refuse("xmlSigKeyInfoKeyNameTransformer must be one of " + ", ".join(KEY_NAME_TRANSFORMERS))
    if config.get("authnContextComparisonType", "") not in ("", *COMPARISON_TYPES):
        _refuse("authnContextComparisonType must be one of " + ", ".join(COMPARISON_TYPES))
    for name in ("authnContextClassRefs", "authnContextDeclRefs"):
        if config.get(name) and not isinstance(_loads(config[name]), list):
            _refuse(f"{name} must be a JSON array of strings")
    for name in ("allowedClockSkew", "attributeConsumingServiceIndex"):
        if config.get(name) and _non_negative(config[name]) is None:
            _refuse(f"{name} must be a number, 0 or more")
    if config.get("encryptionAlgorithm", "") not in ("", *ENCRYPTION_ALGORITHMS):
        _refuse("encryptionAlgorithm must be RSA-OAEP (RSA1_5 key transport is not accepted)")
    if config.get("encryptionPublicKey") and signatures.certificate_from_attribute(config["encryptionPublicKey"]) is None:
        _refuse("encryptionPublicKey is not an X.509 certificate")
    texts = [t for t in config.get("signingCertificate", "").split(",") if t.strip()]
    if any(signatures.certificate_from_attribute(t) is None for t in texts):
        _refuse("signingCertificate holds a value that is not an X.509 certificate")
    if config.get("validateSignature") == TRUE and not texts:
        _refuse("signingCertificate is required when validateSignature is on")
    return config


def _loads(value):
    try:
        return json.loads(value)
    except ValueError:
        return None


# Metadata -------------------------------------------------------------------------------------

def _endpoint(descriptor, tag):
    """(location, POST?) of the service Keycloak picks: the first POST one, else a Redirect one."""
    location, post = "", False
    for element in descriptor.findall(f"{{{c.NS_MD}}}{tag}"):
        if element.get("Binding") == c.BINDING_POST:
            return element.get("Location", ""), True
        if element.get("Binding") == c.BINDING_REDIRECT:
            location = element.get("Location", "")
    return location, post


def import_config(data):
    """Keycloak's import-config from an IdP's SAML metadata (an EntityDescriptor, or the first
    entity with an IDPSSODescriptor of an EntitiesDescriptor). Parsed hardened (no DTD)."""
    raw = data.encode() if isinstance(data, str) else bytes(data)
    try:
        root = xml.parse(raw.strip())
    except UntrustedRequest as exc:
        raise ValueError(f"Could not parse IdP SAML Metadata: {exc.message}") from exc
    entities = [root] if root.tag == f"{{{c.NS_MD}}}EntityDescriptor" else root.iter(f"{{{c.NS_MD}}}EntityDescriptor")
    for entity in entities:
        descriptor = entity.find(f"{{{c.NS_MD}}}IDPSSODescriptor")
        if descriptor is not None:
            return _config_of(entity, descriptor)
    return {}


def _config_of(entity, descriptor):
    sso, post_response = _endpoint(descriptor, "SingleSignOnService")
    slo, post_logout = _endpoint(descriptor, "SingleLogoutService")
    want_signed = descriptor.get("WantAuthnRequestsSigned") in (TRUE, "1")
    config = {"idpEntityId": entity.get("entityID", ""), "singleSignOnServiceUrl": sso, "singleLogoutServiceUrl": slo,
              "wantAuthnRequestsSigned": str(want_signed).lower(), "validateSignature": str(want_signed).lower(),
              "postBindingResponse": str(post_response).lower(), "postBindingAuthnRequest": str(post_response).lower(),
              "postBindingLogout": str(post_logout).lower(), "loginHint": FALSE}
    formats = [(f.text or "").strip() for f in descriptor.findall(f"{{{c.NS_MD}}}NameIDFormat")]
    if formats and formats[0]:
        config["nameIDPolicyFormat"] = formats[0]
    signing, default = [], []
    for key in descriptor.findall(f"{{{c.NS_MD}}}KeyDescriptor"):
        cert = key.find(f".//{{{c.NS_DS}}}X509Certificate")
        text = "".join((cert.text or "").split()) if cert is not None else ""
        if not text:
            continue
        if key.get("use") == "signing":
            signing.append(text)
        elif key.get("use") is None:
            default.append(text)
    certificates = signing or default[:1]
    if certificates:
        config["signingCertificate"] = ",".join(certificates)
        config["validateSignature"] = TRUE
    valid_until = entity.get("validUntil")
    expires = parse_instant(valid_until) if valid_until else None
    config["enabledFromMetadata"] = str(expires is None or expires > datetime.now(UTC)).lower()
    return config

