"""A real service provider (pysaml2, whose signature checks run the xmlsec1 binary) against the
live server: SP-initiated SSO through the Redirect and POST bindings with the login form,
mapped attributes, NameID formats, SSO from an existing session, encryption, IdP-initiated SSO
and single logout."""
from urllib.parse import parse_qs, urlsplit

import pytest
from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT
from saml2.saml import NAMEID_FORMAT_EMAILADDRESS, NAMEID_FORMAT_PERSISTENT, NAMEID_FORMAT_TRANSIENT
from saml2.sigver import verify_redirect_signature

from realms.models import ClientSession, Event, User, UserSession
from saml import constants as c

from .sp import idp_certificate, saml_response_of, send, submit_login

pytestmark = pytest.mark.django_db(transaction=True)


def sign_in(sp, browser, base, binding, relay_state="rs-1", **kwargs):
    req_id, info = sp.prepare_for_authenticate(entityid=f"{base}/realms/acme", relay_state=relay_state,
                                               binding=binding, **kwargs)
    page = send(browser, binding, info)
    if 'name="password"' in page.text:
        page = submit_login(browser, page, "alice")
    action, saml_response, relay = saml_response_of(page)
    return req_id, action, saml_response, relay


def test_redirect_binding_sso_attributes_and_single_logout(sp_factory, user, browser, base, idp_metadata):
    client, sp = sp_factory()
    req_id, action, saml_response, relay = sign_in(sp, browser, base, BINDING_HTTP_REDIRECT)
    assert action == f"{base}/sp/acs" and relay == "rs-1"

    authn = sp.parse_authn_request_response(saml_response, BINDING_HTTP_POST, outstanding={req_id: "/"})
    assert authn.in_response_to == req_id
    assert authn.name_id.text == "alice" and authn.name_id.format == c.NAMEID_UNSPECIFIED
    assert authn.ava["email"] == ["alice@example.org"]
    assert authn.ava["department"] == ["research"]
    assert authn.ava["groups"] == ["/staff/ops"]
    assert "default-roles-acme" in authn.ava["Role"] and "offline_access" in authn.ava["Role"]
    assertion = authn.assertion
    assert assertion.conditions.audience_restriction[0].audience[0].text == client.client_id
    assert assertion.authn_statement[0].session_index == ClientSession.objects.get(client=client).pk
    assert assertion.subject.subject_confirmation[0].subject_confirmation_data.recipient == f"{base}/sp/acs"
    login = Event.objects.get(type="LOGIN")
    assert login.details["protocol"] == "saml" and login.client_id == client.client_id

    # Single logout, SP-initiated through the Redirect binding; the client registered only a
    # Redirect logout URL, so the signed LogoutResponse goes back that way.
    responses = sp.global_logout(authn.name_id)
    binding, info = responses[f"{base}/realms/acme"]
    assert binding == BINDING_HTTP_REDIRECT
    page = send(browser, binding, info)
    assert page.status_code == 302 and page.headers["Location"].startswith(f"{base}/sp/slo?SAMLResponse=")
    query = parse_qs(urlsplit(page.headers["Location"]).query)
    assert query["SigAlg"] == ["http://www.w3.org/2001/04/xmldsig-more#rsa-sha256"]
    signed = {k: v[0] for k, v in query.items()}
    assert verify_redirect_signature(signed, sp.sec.sec_backend, cert=idp_certificate(idp_metadata))
    logout = sp.parse_logout_request_response(query["SAMLResponse"][0], BINDING_HTTP_REDIRECT)
    assert logout.status_ok()
    assert not UserSession.objects.exists()
    event = Event.objects.get(type="LOGOUT")
    assert event.details["protocol"] == "saml" and event.user_id == user.pk


def test_post_binding_signed_response_encrypted_assertion_email_name_id(sp_factory, user, browser, base):
    client, sp = sp_factory(**{c.ATTR_ENCRYPT: "true", c.ATTR_ASSERTION_SIGNATURE: "true",
                               c.ATTR_NAME_ID_FORMAT: "email"},
                            sp_options={"want_assertions_signed": True})
    req_id, _, saml_response, _ = sign_in(sp, browser, base, BINDING_HTTP_POST)
    assert "EncryptedAssertion" in __import__("base64").b64decode(saml_response).decode()
    authn = sp.parse_authn_request_response(saml_response, BINDING_HTTP_POST, outstanding={req_id: "/"})
    assert authn.name_id.text == "alice@example.org" and authn.name_id.format == NAMEID_FORMAT_EMAILADDRESS
    assert authn.ava["email"] == ["alice@example.org"]

    # Same browser, SSO session: a second request gets a Response without the form.
    req_id, info = sp.prepare_for_authenticate(entityid=f"{base}/realms/acme", binding=BINDING_HTTP_POST)
    page = send(browser, BINDING_HTTP_POST, info)
    assert 'name="password"' not in page.text
    authn = sp.parse_authn_request_response(saml_response_of(page)[1], BINDING_HTTP_POST, outstanding={req_id: "/"})
    assert authn.in_response_to == req_id
    assert UserSession.objects.count() == 1


@pytest.mark.parametrize("requested, expected_prefix", [(NAMEID_FORMAT_PERSISTENT, "G-"), (NAMEID_FORMAT_TRANSIENT, "G-")])
def test_requested_name_id_formats(sp_factory, user, browser, base, requested, expected_prefix):
    _, sp = sp_factory(sp_options={"name_id_format": requested})
    req_id, _, saml_response, _ = sign_in(sp, browser, base, BINDING_HTTP_REDIRECT, nameid_format=requested)
    authn = sp.parse_authn_request_response(saml_response, BINDING_HTTP_POST, outstanding={req_id: "/"})
    assert authn.name_id.format == requested and authn.name_id.text.startswith(expected_prefix)
    stored = User.objects.get(pk=user.pk).attributes.get(f"saml.persistent.name.id.for.{sp.config.entityid}")
    assert (stored == [authn.name_id.text]) == (requested == NAMEID_FORMAT_PERSISTENT)


def test_idp_initiated_sso(sp_factory, user, browser, base):
    _, sp = sp_factory(**{c.ATTR_IDP_INITIATED_NAME: "wiki", c.ATTR_IDP_INITIATED_RELAY_STATE: "/home"})
    page = browser.get(f"{base}/realms/acme/protocol/saml/clients/wiki", timeout=10)
    action, saml_response, relay = saml_response_of(submit_login(browser, page, "alice"))
    assert action == f"{base}/sp/acs" and relay == "/home"
    authn = sp.parse_authn_request_response(saml_response, BINDING_HTTP_POST)
    assert authn.in_response_to is None and authn.name_id.text == "alice"
    assert browser.get(f"{base}/realms/acme/protocol/saml/clients/nope", timeout=10).status_code == 400


def test_response_by_redirect_binding_and_force_authn(sp_factory, user, browser, base, idp_metadata):
    _, sp = sp_factory(**{c.ATTR_FORCE_POST_BINDING: "false", c.ATTR_ASSERTION_SIGNATURE: "true"},
                       sp_options={"want_response_signed": False, "want_assertions_signed": True})
    req_id, info = sp.prepare_for_authenticate(entityid=f"{base}/realms/acme", binding=BINDING_HTTP_REDIRECT,
                                               response_binding=BINDING_HTTP_REDIRECT)
    landed = submit_login(browser, send(browser, BINDING_HTTP_REDIRECT, info), "alice")
    assert landed.url.startswith(f"{base}/sp/acs?SAMLResponse=")  # the SP's ACS (a 404 page here)
    query = {k: v[0] for k, v in parse_qs(urlsplit(landed.url).query).items()}
    assert verify_redirect_signature(query, sp.sec.sec_backend, cert=idp_certificate(idp_metadata))
    authn = sp.parse_authn_request_response(query["SAMLResponse"], BINDING_HTTP_REDIRECT, outstanding={req_id: "/"})
    assert authn.name_id.text == "alice"

    # ForceAuthn: the SSO session does not answer; the user proves themselves again.
    _, info = sp.prepare_for_authenticate(entityid=f"{base}/realms/acme", binding=BINDING_HTTP_REDIRECT,
                                          force_authn="true")
    assert 'name="password"' in send(browser, BINDING_HTTP_REDIRECT, info).text
