"""The ``saml`` identity provider type against pysaml2's identity provider: our signed
AuthnRequest is accepted there, its signed (and encrypted) Response here, with the identity and
the session notes single logout needs."""
from urllib.parse import urlsplit

from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT

from saml import constants as c
from saml.broker.logout import NOTE_ISSUER, NOTE_NAME_ID, NOTE_SESSION_INDEX, NOTE_SUBJECT

from .conftest import STATE, saml_request_of


def test_signed_post_authn_request_and_signed_response(make_idp, trip, answer, upstream):
    idp = make_idp(fields={"store_token": True})
    broker, response = trip(idp)
    saml_request, relay_state, binding, _ = saml_request_of(response)
    assert binding == "post" and relay_state == STATE
    parsed = upstream.server.parse_authn_request(saml_request, BINDING_HTTP_POST)  # xmlsec1 checks our signature
    message = parsed.message
    assert message.id == broker.notes["request_id"]
    assert message.assertion_consumer_service_url == broker.redirect_uri
    assert message.protocol_binding == c.BINDING_POST
    assert message.issuer.text == "http://testserver/realms/acme"
    assert message.name_id_policy.format == c.NAMEID_PERSISTENT and message.name_id_policy.allow_create == "true"
    assert message.signature is not None
    text = upstream.authn_response(message.id, broker.redirect_uri, message.issuer.text)
    identity = answer(idp, broker, text)
    assert identity.id == identity.username == "u-1001"
    assert identity.claims["mail"] == ["ada@example.org"] and identity.claims["urn:oid:2.5.4.42"] == ["Ada"]
    assert identity.context["name_id"] == "u-1001" and ":Assertion " in identity.context["assertion"]
    notes = identity.session_notes
    assert notes[NOTE_SUBJECT] == "u-1001" and notes[NOTE_SESSION_INDEX] == upstream.sessions["u-1001"]
    assert "NameQualifier" in notes[NOTE_NAME_ID] and notes[NOTE_ISSUER] == "http://testserver/realms/acme"
    assert identity.token  # storeToken keeps the SAMLResponse as it arrived


def test_signed_redirect_authn_request(make_idp, trip, upstream):
    idp = make_idp(postBindingAuthnRequest="false", forceAuthn="true", nameIDPolicyFormat=c.NAMEID_EMAIL,
                   allowCreate="false", signatureAlgorithm="RSA_SHA512")
    broker, response = trip(idp)
    saml_request, relay_state, binding, query = saml_request_of(response)
    assert binding == "redirect" and query["SigAlg"][0].endswith("rsa-sha512")
    parsed = upstream.server.parse_authn_request(saml_request, BINDING_HTTP_REDIRECT, relay_state=relay_state,
                                                 sigalg=query["SigAlg"][0], signature=query["Signature"][0])
    message = parsed.message
    assert message.force_authn == "true" and message.name_id_policy.format == c.NAMEID_EMAIL
    assert message.name_id_policy.allow_create == "false"


def test_encrypted_assertion_decrypted_with_the_realm_key(make_idp, trip, answer, upstream, rf, realm):
    from saml import keys

    idp = make_idp(wantAssertionsEncrypted="true")
    upstream.options.update(encrypt_assertion=True, encrypt_cert=keys.signing_credential(realm).certificate_b64)
    broker, response = trip(idp)
    message = upstream.server.parse_authn_request(saml_request_of(response)[0], BINDING_HTTP_POST).message
    text = upstream.authn_response(message.id, broker.redirect_uri, message.issuer.text)
    assert "EncryptedAssertion" in text and "u-1001" not in text.split("EncryptedAssertion")[1]
    assert answer(idp, broker, text).id == "u-1001"


def test_response_by_redirect_binding_signed_on_the_query(make_idp, trip, upstream, rf, realm, saml_type):
    import pytest

    from realms.brokering.providers import BrokerError

    idp = make_idp(postBindingResponse="false", wantAssertionsSigned="false")
    broker, response = trip(idp)
    message = upstream.server.parse_authn_request(saml_request_of(response)[0], BINDING_HTTP_POST).message
    assert message.protocol_binding == c.BINDING_REDIRECT
    text = upstream.authn_response(message.id, broker.redirect_uri, message.issuer.text, sign_response=False,
                                   sign_assertion=False)
    info = upstream.server.apply_binding(BINDING_HTTP_REDIRECT, text, broker.redirect_uri, STATE, response=True,
                                         sign=True, sigalg="http://www.w3.org/2001/04/xmldsig-more#rsa-sha256")
    location = urlsplit(dict(info["headers"])["Location"])
    assert "Signature=" in location.query
    identity = saml_type.authenticated(rf.get(f"{location.path}?{location.query}"), realm, idp, broker)
    assert identity.id == "u-1001"
    tampered = location.query.replace("RelayState=", "RelayState=x")
    with pytest.raises(BrokerError) as caught:
        saml_type.authenticated(rf.get(f"{location.path}?{tampered}"), realm, idp, broker)
    assert caught.value.error == "invalid_signature"


def test_login_hint_authn_context_and_prompt_are_sent_where_configured(make_idp, trip, upstream):
    idp = make_idp(loginHint="true", attributeConsumingServiceIndex="2", authnContextComparisonType="minimum",
                   authnContextClassRefs='["urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport"]')
    broker, response = trip(idp, login_hint="ada@example.org", prompt="login")
    message = upstream.server.parse_authn_request(saml_request_of(response)[0], BINDING_HTTP_POST).message
    assert message.subject.name_id.text == "ada@example.org"
    assert message.attribute_consuming_service_index == "2" and message.force_authn == "true"
    context = message.requested_authn_context
    assert context.comparison == "minimum"
    assert [r.text for r in context.authn_context_class_ref] == [
        "urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport"]
    idp.config = {**idp.config, "loginHint": "false"}
    broker, response = trip(idp, login_hint="ada@example.org", prompt="none")
    message = upstream.server.parse_authn_request(saml_request_of(response)[0], BINDING_HTTP_POST).message
    assert message.subject is None and message.is_passive == "true" and message.force_authn is None


def test_expired_metadata_refuses_the_sign_in(make_idp, trip):
    import pytest

    from realms.brokering.providers import BrokerError

    idp = make_idp(enabledFromMetadata="false")
    with pytest.raises(BrokerError):
        trip(idp)
