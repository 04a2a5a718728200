"""Test peers: a SAML service provider built with pysaml2 (signatures checked by the xmlsec1
binary), and a plain HTTP "browser" (requests) that carries messages between it and the live
server the way a browser without JavaScript would."""
import base64
import html
import re
import shutil
from datetime import UTC, datetime, timedelta, timezone
from urllib.parse import urljoin

import requests
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT
from saml2.client import Saml2Client
from saml2.config import SPConfig

PASSWORD = "saml-interop-password"


def key_pair(common_name):
    """(private key PEM, certificate PEM, certificate base64 DER) of a fresh self-signed RSA key."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.now(UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - timedelta(days=1))
            .not_valid_after(now + timedelta(days=30)).sign(key, hashes.SHA256()))
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return key_pem, cert.public_bytes(serialization.Encoding.PEM), base64.b64encode(
        cert.public_bytes(serialization.Encoding.DER)).decode()


RSA_SHA256 = "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256"
SHA256 = "http://www.w3.org/2001/04/xmlenc#sha256"


def pysaml2_sp(tmp_path, *, entity_id, acs, slo, idp_metadata, key_pem, cert_pem, name_id_format=None,
               want_response_signed=True, want_assertions_signed=False, signing_algorithm=RSA_SHA256,
               digest_algorithm=SHA256):
    key_file, cert_file = tmp_path / "sp.key", tmp_path / "sp.crt"
    key_file.write_bytes(key_pem)
    cert_file.write_bytes(cert_pem)
    sp = {
        "endpoints": {"assertion_consumer_service": [(acs, BINDING_HTTP_POST), (acs, BINDING_HTTP_REDIRECT)],
                      "single_logout_service": [(slo, BINDING_HTTP_REDIRECT), (slo, BINDING_HTTP_POST)]},
        "authn_requests_signed": True, "logout_requests_signed": True,
        "want_assertions_signed": want_assertions_signed, "want_response_signed": want_response_signed,
        "allow_unsolicited": True, "signing_algorithm": signing_algorithm, "digest_algorithm": digest_algorithm,
    }
    if name_id_format:
        sp["name_id_format"] = name_id_format
    config = SPConfig()
    config.load({
        "entityid": entity_id, "xmlsec_binary": shutil.which("xmlsec1"),
        "key_file": str(key_file), "cert_file": str(cert_file),
        "encryption_keypairs": [{"key_file": str(key_file), "cert_file": str(cert_file)}],
        "metadata": {"inline": [idp_metadata]}, "service": {"sp": sp}, "allow_unknown_attributes": True,
        "accepted_time_diff": 5,
    })
    return Saml2Client(config)


def form_fields(text):
    """(action, {name: value}) of the first form of an auto-submitting page."""
    action = html.unescape(re.search(r'<form[^>]*action="([^"]*)"', text).group(1))
    fields = {html.unescape(n): html.unescape(v)
              for n, v in re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', text)}
    return action, fields


def submit_login(browser, page, username, password=PASSWORD):
    """Fill the realm's login form; returns the page that follows (the SAML form post)."""
    assert page.status_code == 200 and 'name="password"' in page.text, page.text[:300]
    action = html.unescape(re.search(r'<form method="post" action="([^"]+)"', page.text).group(1))
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    return browser.post(urljoin(page.url, action), data={"csrfmiddlewaretoken": token, "username": username,
                                                        "password": password},
                        headers={"Referer": page.url}, timeout=10)


def send(browser, binding, http_info):
    """Carry a pysaml2 message to the IdP like a browser: follow the Redirect, or post the form."""
    if binding == BINDING_HTTP_REDIRECT:
        location = dict(http_info["headers"])["Location"]
        return browser.get(location, timeout=10, allow_redirects=False)
    action, fields = form_fields(http_info["data"])
    return browser.post(action, data=fields, timeout=10, allow_redirects=False)


def saml_response_of(page):
    """The SAMLResponse (and RelayState) the IdP's auto-submitting page carries."""
    assert page.status_code == 200, page.text[:500]
    action, fields = form_fields(page.text)
    return action, fields["SAMLResponse"], fields.get("RelayState", "")


def idp_certificate(metadata):
    """The first signing certificate (base64 DER) of the IdP's metadata."""
    return re.search(r"<ds:X509Certificate>([^<]+)</ds:X509Certificate>", metadata).group(1)


def new_browser():
    browser = requests.Session()
    browser.trust_env = False
    return browser
