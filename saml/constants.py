"""Names from the SAML 2.0 core and bindings specifications and Keycloak's client attributes."""

PROTOCOL = "saml"

NS_SAMLP = "urn:oasis:names:tc:SAML:2.0:protocol"
NS_SAML = "urn:oasis:names:tc:SAML:2.0:assertion"
NS_MD = "urn:oasis:names:tc:SAML:2.0:metadata"
NS_DS = "http://www.w3.org/2000/09/xmldsig#"
NS_XENC = "http://www.w3.org/2001/04/xmlenc#"
NS_XENC11 = "http://www.w3.org/2009/xmlenc11#"
NS_XSI = "http://www.w3.org/2001/XMLSchema-instance"
NS_XS = "http://www.w3.org/2001/XMLSchema"
NS_SOAP = "http://schemas.xmlsoap.org/soap/envelope/"
NSMAP = {"samlp": NS_SAMLP, "saml": NS_SAML}

BINDING_REDIRECT = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect"
BINDING_POST = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST"
BINDING_SOAP = "urn:oasis:names:tc:SAML:2.0:bindings:SOAP"

VERSION = "2.0"

# Status codes (SAML core §3.2.2.2).
STATUS_SUCCESS = "urn:oasis:names:tc:SAML:2.0:status:Success"
STATUS_REQUESTER = "urn:oasis:names:tc:SAML:2.0:status:Requester"
STATUS_RESPONDER = "urn:oasis:names:tc:SAML:2.0:status:Responder"
STATUS_AUTHN_FAILED = "urn:oasis:names:tc:SAML:2.0:status:AuthnFailed"
STATUS_NO_PASSIVE = "urn:oasis:names:tc:SAML:2.0:status:NoPassive"
STATUS_INVALID_NAMEID_POLICY = "urn:oasis:names:tc:SAML:2.0:status:InvalidNameIDPolicy"
STATUS_REQUEST_DENIED = "urn:oasis:names:tc:SAML:2.0:status:RequestDenied"
STATUS_PARTIAL_LOGOUT = "urn:oasis:names:tc:SAML:2.0:status:PartialLogout"

# Name identifier formats (SAML core §8.3) and Keycloak's short names for them.
NAMEID_UNSPECIFIED = "urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified"
NAMEID_EMAIL = "urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress"
NAMEID_PERSISTENT = "urn:oasis:names:tc:SAML:2.0:nameid-format:persistent"
NAMEID_TRANSIENT = "urn:oasis:names:tc:SAML:2.0:nameid-format:transient"
NAMEID_FORMATS = {
    "username": NAMEID_UNSPECIFIED,
    "email": NAMEID_EMAIL,
    "persistent": NAMEID_PERSISTENT,
    "transient": NAMEID_TRANSIENT,
}

ATTRNAME_BASIC = "urn:oasis:names:tc:SAML:2.0:attrname-format:basic"
ATTRNAME_URI = "urn:oasis:names:tc:SAML:2.0:attrname-format:uri"
ATTRNAME_UNSPECIFIED = "urn:oasis:names:tc:SAML:2.0:attrname-format:unspecified"
# Keycloak's admin console stores the display names; imports may carry the URNs.
ATTRNAME_FORMATS = {"Basic": ATTRNAME_BASIC, "URI Reference": ATTRNAME_URI, "Unspecified": ATTRNAME_UNSPECIFIED}

AUTHN_CONTEXT_PASSWORD = "urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport"
AUTHN_CONTEXT_UNSPECIFIED = "urn:oasis:names:tc:SAML:2.0:ac:classes:unspecified"
CONFIRMATION_BEARER = "urn:oasis:names:tc:SAML:2.0:cm:bearer"
LOGOUT_REASON_USER = "urn:oasis:names:tc:SAML:2.0:logout:user"

# Keycloak SAML client attributes.
ATTR_ACS_POST = "saml_assertion_consumer_url_post"
ATTR_ACS_REDIRECT = "saml_assertion_consumer_url_redirect"
ATTR_SLO_POST = "saml_single_logout_service_url_post"
ATTR_SLO_REDIRECT = "saml_single_logout_service_url_redirect"
ATTR_SLO_SOAP = "saml_single_logout_service_url_soap"
ATTR_IDP_INITIATED_NAME = "saml_idp_initiated_sso_url_name"
ATTR_IDP_INITIATED_RELAY_STATE = "saml_idp_initiated_sso_relay_state"
ATTR_NAME_ID_FORMAT = "saml_name_id_format"
ATTR_FORCE_NAME_ID_FORMAT = "saml_force_name_id_format"
ATTR_FORCE_POST_BINDING = "saml.force.post.binding"
ATTR_SERVER_SIGNATURE = "saml.server.signature"
ATTR_ASSERTION_SIGNATURE = "saml.assertion.signature"
ATTR_CLIENT_SIGNATURE = "saml.client.signature"
ATTR_ENCRYPT = "saml.encrypt"
ATTR_SIGNATURE_ALGORITHM = "saml.signature.algorithm"
ATTR_SIGNING_CERTIFICATE = "saml.signing.certificate"
ATTR_ENCRYPTION_CERTIFICATE = "saml.encryption.certificate"
ATTR_CANONICALIZATION = "saml_signature_canonicalization_method"
ATTR_AUTHNSTATEMENT = "saml.authnstatement"
ATTR_ONETIMEUSE = "saml.onetimeuse.condition"
ATTR_ASSERTION_LIFESPAN = "saml.assertion.lifespan"
ATTR_KEYINFO_KEYNAME = "saml.server.signature.keyinfo.xmlSigKeyInfoKeyNameTransformer"
PERSISTENT_NAME_ID_ATTRIBUTE = "saml.persistent.name.id.for.{client_id}"

EXC_C14N = "http://www.w3.org/2001/10/xml-exc-c14n#"
