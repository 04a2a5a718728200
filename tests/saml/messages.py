"""Hand-made SAML requests for the negative tests (forgeries need hand-made XML): built with
lxml, signed with signxml through ``saml.signatures`` using the SP's key, encoded per binding."""
import base64
import secrets
from datetime import UTC, datetime, timedelta, timezone
from urllib.parse import urlencode

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from lxml import etree

from saml import constants as c
from saml import signatures, xml

ENDPOINT = "http://testserver/realms/acme/protocol/saml"


def instant(delta=timedelta()):
    return (datetime.now(UTC) + delta).strftime("%Y-%m-%dT%H:%M:%SZ")


def authn_request(issuer, *, acs=None, request_id=None, issued=None, destination=ENDPOINT, **attrs):
    root = etree.Element(etree.QName(c.NS_SAMLP, "AuthnRequest"), nsmap={"samlp": c.NS_SAMLP, "saml": c.NS_SAML},
                         ID=request_id or "_" + secrets.token_hex(8), Version="2.0",
                         IssueInstant=issued or instant(), Destination=destination,
                         ProtocolBinding=c.BINDING_POST, **attrs)
    if acs:
        root.set("AssertionConsumerServiceURL", acs)
    etree.SubElement(root, etree.QName(c.NS_SAML, "Issuer")).text = issuer
    return root


def logout_request(issuer, name_id, session_index, destination=ENDPOINT):
    root = etree.Element(etree.QName(c.NS_SAMLP, "LogoutRequest"), nsmap={"samlp": c.NS_SAMLP, "saml": c.NS_SAML},
                         ID="_" + secrets.token_hex(8), Version="2.0", IssueInstant=instant(), Destination=destination)
    etree.SubElement(root, etree.QName(c.NS_SAML, "Issuer")).text = issuer
    etree.SubElement(root, etree.QName(c.NS_SAML, "NameID")).text = name_id
    etree.SubElement(root, etree.QName(c.NS_SAMLP, "SessionIndex")).text = session_index
    return root


def load_key(key_pem, cert_pem):
    return (serialization.load_pem_private_key(key_pem, password=None), x509.load_pem_x509_certificate(cert_pem))


def sign(root, keys, algorithm="RSA_SHA256"):
    key, cert = keys
    return signatures.sign_element(root, key=key, cert=cert, algorithm=algorithm)


def post_form(root_or_bytes, relay_state=""):
    data = root_or_bytes if isinstance(root_or_bytes, bytes) else xml.serialize(root_or_bytes)
    form = {"SAMLRequest": base64.b64encode(data).decode()}
    if relay_state:
        form["RelayState"] = relay_state
    return form


def redirect_query(root, keys=None, algorithm="RSA_SHA256", relay_state=""):
    params = [("SAMLRequest", xml.encode_redirect(xml.serialize(root))), ("RelayState", relay_state)]
    if keys is None:
        return urlencode([(k, v) for k, v in params if v])
    return signatures.sign_query(params, keys[0], algorithm)
