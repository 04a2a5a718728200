"""Every check of the provider's answer refuses what breaks it, with the message the person reads
(never the provider's text) and the reason in the log's detail: signatures, the assertion's
audience, our request's id, lifetimes and the allowed clock skew, Destination and Recipient, the
issuer, encryption, the status, and the hardened XML code's refusals (DTD, signature wrapping)."""
import base64
import copy
from datetime import timedelta

import pytest
from django.utils import timezone
from lxml import etree
from saml2 import BINDING_HTTP_POST
from saml2.samlp import STATUS_AUTHN_FAILED

from realms.brokering.providers import BrokerError
from saml import constants as c

from ..sp import key_pair
from .conftest import saml_request_of

NS = {"saml": c.NS_SAML, "samlp": c.NS_SAMLP, "ds": c.NS_DS}


@pytest.fixture
def started(make_idp, trip, upstream):
    """``started(**config)``: (idp, broker, AuthnRequest as pysaml2 read it)."""

    def start(upstream_options=None, **config):
        idp = make_idp(upstream_options, **config)
        broker, response = trip(idp)
        message = upstream.server.parse_authn_request(saml_request_of(response)[0], BINDING_HTTP_POST).message
        return idp, broker, message

    return start


def refused(answer, idp, broker, text, message_key="invalidRequesterMessage"):
    with pytest.raises(BrokerError) as caught:
        answer(idp, broker, text)
    assert caught.value.message_key == message_key, caught.value.detail
    return caught.value


def test_tampered_signed_assertion_is_refused(started, answer, upstream):
    idp, broker, message = started()
    text = upstream.authn_response(message.id, broker.redirect_uri, message.issuer.text)
    error = refused(answer, idp, broker, text.replace("ada@example.org", "eve@example.org"))
    assert error.error == "invalid_signature"


def test_a_certificate_other_than_the_configured_one_is_refused(started, answer, upstream):
    idp, broker, message = started()
    idp.config = {**idp.config, "signingCertificate": key_pair("someone-else")[2]}
    text = upstream.authn_response(message.id, broker.redirect_uri, message.issuer.text)
    assert refused(answer, idp, broker, text).error == "invalid_signature"


def test_unsigned_answer_is_refused_when_signatures_are_validated(started, answer, upstream):
    idp, broker, message = started(wantAssertionsSigned="false")
    text = upstream.authn_response(message.id, broker.redirect_uri, message.issuer.text, sign_response=False,
                                   sign_assertion=False)
    assert "Signature" not in text
    assert refused(answer, idp, broker, text).detail == "The answer is not signed."
    # ... and accepted once the admin switched validation off (the setting takes effect).
    idp.config = {**idp.config, "validateSignature": "false"}
    assert answer(idp, broker, text).id == "u-1001"


def test_want_assertions_signed_refuses_a_response_signed_alone(started, answer, upstream):
    idp, broker, message = started()
    text = upstream.authn_response(message.id, broker.redirect_uri, message.issuer.text, sign_assertion=False)
    assert refused(answer, idp, broker, text).detail == "The assertion is not signed."
    idp.config = {**idp.config, "wantAssertionsSigned": "false"}
    assert answer(idp, broker, text).id == "u-1001"


def test_wrong_audience_is_refused(started, answer, upstream):
    idp, broker, message = started()
    text = upstream.authn_response(message.id, broker.redirect_uri, message.issuer.text)
    idp.config = {**idp.config, "entityId": "urn:another:service-provider"}
    error = refused(answer, idp, broker, text, "expiredCodeMessage")
    assert error.detail == "The assertion is meant for another audience."


def test_answer_to_another_request_is_refused(started, answer, upstream):
    idp, broker, message = started()
    text = upstream.authn_response("ID_not_ours", broker.redirect_uri, message.issuer.text)
    assert "InResponseTo" in refused(answer, idp, broker, text).detail


def test_wrong_destination_is_refused(started, answer, upstream):
    idp, broker, message = started()
    text = upstream.authn_response(message.id, "http://testserver/realms/acme/broker/other/endpoint",
                                   message.issuer.text)
    assert refused(answer, idp, broker, text).detail == "The SAML message was sent to another destination."


def test_wrong_issuer_is_refused(started, answer, upstream):
    idp, broker, message = started()
    text = upstream.authn_response(message.id, broker.redirect_uri, message.issuer.text)
    idp.config = {**idp.config, "idpEntityId": "https://another-idp.example/metadata"}
    assert refused(answer, idp, broker, text).detail == "The answer was issued by another identity provider."


def test_expired_assertion_is_refused(started, answer, upstream, monkeypatch):
    idp, broker, message = started()
    text = upstream.authn_response(message.id, broker.redirect_uri, message.issuer.text)
    later = timezone.now() + timedelta(hours=1)
    monkeypatch.setattr("saml.broker.response.timezone.now", lambda: later)
    assert refused(answer, idp, broker, text, "expiredCodeMessage").error == "expired_code"


def test_allowed_clock_skew_takes_effect(started, answer, upstream, monkeypatch):
    idp, broker, message = started()
    text = upstream.authn_response(message.id, broker.redirect_uri, message.issuer.text)
    earlier = timezone.now() - timedelta(seconds=30)
    monkeypatch.setattr("saml.broker.response.timezone.now", lambda: earlier)
    assert refused(answer, idp, broker, text, "expiredCodeMessage").detail == "The assertion is not valid yet."
    idp.config = {**idp.config, "allowedClockSkew": "60"}
    assert answer(idp, broker, text).id == "u-1001"


def test_assertion_encrypted_to_another_key_is_refused(started, answer, upstream):
    other_cert = key_pair("not-the-realm")[2]
    idp, broker, message = started(wantAssertionsEncrypted="true")
    text = upstream.authn_response(message.id, broker.redirect_uri, message.issuer.text, encrypt_assertion=True,
                                   encrypt_cert=other_cert)
    assert refused(answer, idp, broker, text).detail == "The assertion was not encrypted to a key of this realm."


def test_plain_assertion_refused_when_encryption_is_wanted(started, answer, upstream):
    idp, broker, message = started(wantAssertionsEncrypted="true")
    text = upstream.authn_response(message.id, broker.redirect_uri, message.issuer.text)
    assert refused(answer, idp, broker, text).detail == "The assertion is not encrypted, which is required."


def test_error_status_is_shown_as_our_message(started, answer, upstream):
    idp, broker, message = started()
    response = upstream.server.create_error_response(message.id, broker.redirect_uri,
                                                     (STATUS_AUTHN_FAILED, "<b>raw upstream text</b>"), sign=True)
    error = refused(answer, idp, broker, str(response), "identityProviderUnexpectedErrorMessage")
    assert STATUS_AUTHN_FAILED in error.detail and "raw upstream" not in error.message_key


def test_document_type_declarations_are_refused(started, answer, upstream):
    idp, broker, message = started()
    text = upstream.authn_response(message.id, broker.redirect_uri, message.issuer.text)
    xxe = '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>' + text.split("?>", 1)[-1]
    assert "Document type" in refused(answer, idp, broker, xxe).detail


def _wrapped(text, keep_signature):
    """A signature-wrapping forgery: the signed assertion hidden in Extensions, an altered copy
    (same ID) where the reader looks."""
    root = etree.fromstring(text.encode())
    signed = root.find("saml:Assertion", NS)
    evil = copy.deepcopy(signed)
    evil.find("saml:Subject/saml:NameID", NS).text = "admin"
    if not keep_signature:
        evil.remove(evil.find("ds:Signature", NS))
    extensions = etree.Element(etree.QName(c.NS_SAMLP, "Extensions"))
    root.replace(signed, evil)
    root.find("saml:Issuer", NS).addnext(extensions)
    extensions.append(signed)
    return etree.tostring(root)


@pytest.mark.parametrize("keep_signature", [True, False])
def test_signature_wrapping_is_refused(started, answer, upstream, keep_signature):
    idp, broker, message = started()
    text = upstream.authn_response(message.id, broker.redirect_uri, message.issuer.text, sign_response=False)
    error = refused(answer, idp, broker, _wrapped(text, keep_signature))
    assert error.error == "invalid_signature"


def test_a_second_assertion_is_refused(started, answer, upstream):
    idp, broker, message = started()
    text = upstream.authn_response(message.id, broker.redirect_uri, message.issuer.text, sign_response=False)
    root = etree.fromstring(text.encode())
    root.append(copy.deepcopy(root.find("saml:Assertion", NS)))
    assert refused(answer, idp, broker, etree.tostring(root)).detail == "The answer must carry exactly one assertion."


@pytest.mark.parametrize("principal_type, attribute, expected", [
    ("ATTRIBUTE", "urn:oid:0.9.2342.19200300.100.1.3", "ada@example.org"),
    ("FRIENDLY_ATTRIBUTE", "givenName", "Ada"),
])
def test_principal_from_an_attribute(started, answer, upstream, principal_type, attribute, expected):
    idp, broker, message = started(principalType=principal_type, principalAttribute=attribute)
    text = upstream.authn_response(message.id, broker.redirect_uri, message.issuer.text)
    assert answer(idp, broker, text).id == expected
    idp.config = {**idp.config, "principalAttribute": "absent"}
    assert "no principal" in refused(answer, idp, broker, text).detail


def test_duplicated_saml_response_is_refused(started, rf, realm, saml_type, upstream):
    idp, broker, message = started()
    text = upstream.authn_response(message.id, broker.redirect_uri, message.issuer.text)
    encoded = base64.b64encode(text.encode()).decode()
    request = rf.post("/x", {"SAMLResponse": [encoded, encoded], "RelayState": broker.state})
    with pytest.raises(BrokerError):
        saml_type.authenticated(request, realm, idp, broker)
