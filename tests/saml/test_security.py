"""Requests the IdP must refuse, each with an error page (400) and nothing half-done: no
authentication session, no SSO session, no recorded request id. And the trusted-but-refused
cases that get a SAML status Response instead."""
import base64
from datetime import timedelta

import pytest
from django.test import Client as HttpClient
from lxml import etree

from realms.models import Client, Event, Realm, UserSession
from realms.representation.services import add_default_client_scopes, create_realm
from realms.sso import auth_sessions
from saml import constants as c
from saml.models import SeenRequest
from tests.conftest import once_per_module

from . import messages as m
from .sp import key_pair

SP = "https://sp.example/metadata"
ACS = "https://sp.example/acs"


@pytest.fixture(scope="module")
def keys():
    key_pem, cert_pem, cert_b64 = key_pair("negative-sp")
    return m.load_key(key_pem, cert_pem), cert_b64


@pytest.fixture(scope="module")
def acme(django_db_setup, django_db_blocker, keys):
    """Realm ``acme`` and the SP's client, made once for the module (the realm's built-ins were most
    of each test's time); each test reads them again, its changes rolled back with it."""
    def make():
        realm = create_realm("acme", events_enabled=True)
        client = Client.objects.create(realm=realm, client_id=SP, protocol=c.PROTOCOL,
                                       redirect_uris=["https://sp.example/*"],
                                       attributes={c.ATTR_SIGNING_CERTIFICATE: keys[1], c.ATTR_ACS_POST: ACS})
        add_default_client_scopes(client)
        return realm.pk, client.pk

    yield from once_per_module(django_db_blocker, make)


@pytest.fixture
def realm(acme, db):
    return Realm.objects.get(pk=acme[0])


@pytest.fixture
def sp_client(acme, db):
    return Client.objects.get(pk=acme[1])


@pytest.fixture
def http():
    return HttpClient()


def post(http, form):
    return http.post("/realms/acme/protocol/saml", form)


def assert_refused(response, text):
    assert response.status_code == 400, response.content[:300]
    assert text in response.content.decode()
    assert auth_sessions.COOKIE not in response.cookies
    assert not UserSession.objects.exists() and not SeenRequest.objects.exists()


def test_signed_post_request_opens_the_login_page(http, sp_client, keys):
    response = post(http, m.post_form(m.sign(m.authn_request(SP, acs=ACS), keys[0])))
    assert response.status_code == 200 and 'name="password"' in response.content.decode()
    assert SeenRequest.objects.count() == 1


def test_signed_redirect_request_opens_the_login_page(http, sp_client, keys):
    query = m.redirect_query(m.authn_request(SP, acs=ACS), keys[0], relay_state="rs")
    assert http.get(f"/realms/acme/protocol/saml?{query}").status_code == 200


def test_unknown_issuer(http, sp_client, keys):
    assert_refused(post(http, m.post_form(m.sign(m.authn_request("https://evil.example", acs=ACS), keys[0]))),
                   "Unknown login requester.")
    event = Event.objects.get(type="LOGIN_ERROR")
    assert event.error == "client_not_found" and event.details["protocol"] == "saml"


def test_unregistered_acs_url(http, sp_client, keys):
    forged = m.sign(m.authn_request(SP, acs="https://evil.example/acs"), keys[0])
    assert_refused(post(http, m.post_form(forged)), "assertion consumer service URL is not registered")


@pytest.mark.parametrize("tail", [
    "%2e%2e/admin", "%2E%2E/admin", ".%2e/admin", "..%2fadmin", "..%5cadmin", "%252e%252e/admin", "../admin",
    "..;/admin",
])
def test_acs_url_cannot_leave_a_wildcard(http, sp_client, keys, tail):
    # sp_client registers https://sp.example/* as a valid redirect URI.
    forged = m.sign(m.authn_request(SP, acs=f"https://sp.example/{tail}"), keys[0])
    assert_refused(post(http, m.post_form(forged)), "assertion consumer service URL is not registered")
    inside = m.sign(m.authn_request(SP, acs="https://sp.example/other/acs"), keys[0])
    assert post(http, m.post_form(inside)).status_code == 200


def test_missing_signature_when_required(http, sp_client):
    assert_refused(post(http, m.post_form(m.authn_request(SP, acs=ACS))), "Missing signature.")
    query = m.redirect_query(m.authn_request(SP, acs=ACS))
    assert_refused(http.get(f"/realms/acme/protocol/saml?{query}"), "Missing signature.")


def test_unsigned_request_accepted_when_the_client_does_not_require_signatures(http, sp_client):
    sp_client.attributes = {**sp_client.attributes, c.ATTR_CLIENT_SIGNATURE: "false"}
    sp_client.save()
    assert post(http, m.post_form(m.authn_request(SP, acs=ACS))).status_code == 200


def test_bad_signature(http, sp_client, keys):
    signed = m.sign(m.authn_request(SP, acs=ACS), keys[0])
    signed.set("ForceAuthn", "true")  # changed after signing
    assert_refused(post(http, m.post_form(signed)), "Invalid signature.")
    other_key = m.load_key(*key_pair("someone-else")[:2])
    assert_refused(post(http, m.post_form(m.sign(m.authn_request(SP, acs=ACS), other_key))), "Invalid signature.")
    query = m.redirect_query(m.authn_request(SP, acs=ACS), keys[0], relay_state="rs")
    assert_refused(http.get(f"/realms/acme/protocol/saml?{query.replace('RelayState=rs', 'RelayState=rx')}"),
                   "Invalid signature.")


def test_sha1_refused_unless_the_client_opts_in(http, sp_client, keys):
    assert_refused(post(http, m.post_form(m.sign(m.authn_request(SP, acs=ACS), keys[0], "RSA_SHA1"))),
                   "Invalid signature.")
    query = m.redirect_query(m.authn_request(SP, acs=ACS), keys[0], "RSA_SHA1")
    assert_refused(http.get(f"/realms/acme/protocol/saml?{query}"), "Signature algorithm not allowed.")
    sp_client.attributes = {**sp_client.attributes, c.ATTR_SIGNATURE_ALGORITHM: "RSA_SHA1"}
    sp_client.save()
    assert post(http, m.post_form(m.sign(m.authn_request(SP, acs=ACS), keys[0], "RSA_SHA1"))).status_code == 200
    query = m.redirect_query(m.authn_request(SP, acs=ACS), keys[0], "RSA_SHA1")
    assert http.get(f"/realms/acme/protocol/saml?{query}").status_code == 200


def test_replayed_request_id(http, sp_client, keys):
    form = m.post_form(m.sign(m.authn_request(SP, acs=ACS, request_id="_once"), keys[0]))
    assert post(http, form).status_code == 200
    response = post(HttpClient(), form)
    assert response.status_code == 400 and "already used" in response.content.decode()
    assert SeenRequest.objects.count() == 1


@pytest.mark.parametrize("delta", [timedelta(minutes=-10), timedelta(minutes=5)])
def test_stale_or_future_issue_instant(http, sp_client, keys, delta):
    request = m.authn_request(SP, acs=ACS, issued=m.instant(delta))
    assert_refused(post(http, m.post_form(m.sign(request, keys[0]))), "stale or from the future")


def test_wrong_destination(http, sp_client, keys):
    request = m.authn_request(SP, acs=ACS, destination="https://other-idp.example/saml")
    assert_refused(post(http, m.post_form(m.sign(request, keys[0]))), "another destination")


def _wrapping_forgeries(keys):
    """A genuine signed request, and two documents that carry it while asking for something
    else (an ACS URL the client's wildcard redirect URI would allow)."""
    genuine = m.sign(m.authn_request(SP, acs=ACS, request_id="_genuine"), keys[0])
    # 1: a new root with its own ID keeps the genuine signature (referencing #_genuine) as its
    # direct child and hides the genuine request in Extensions.
    forged = m.authn_request(SP, acs="https://sp.example/evil", request_id="_forged")
    signature = genuine.find(f"{{{c.NS_DS}}}Signature")
    genuine.remove(signature)
    forged.find(f"{{{c.NS_SAML}}}Issuer").addnext(signature)
    extensions = etree.SubElement(forged, etree.QName(c.NS_SAMLP, "Extensions"))
    extensions.append(m.sign(m.authn_request(SP, acs=ACS, request_id="_genuine"), keys[0]))
    # 2: the forged root takes the genuine ID too, so the reference would resolve to either.
    twin = m.authn_request(SP, acs="https://sp.example/evil", request_id="_genuine2")
    original = m.sign(m.authn_request(SP, acs=ACS, request_id="_genuine2"), keys[0])
    twin.find(f"{{{c.NS_SAML}}}Issuer").addnext(original.find(f"{{{c.NS_DS}}}Signature"))
    etree.SubElement(twin, etree.QName(c.NS_SAMLP, "Extensions")).append(original)
    return [forged, twin]


def test_signature_wrapping_refused(http, sp_client, keys):
    for forged in _wrapping_forgeries(keys):
        assert_refused(post(http, m.post_form(forged)), "Invalid signature.")


BOMB = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
<!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
<!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">]>
<samlp:AuthnRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion"
 ID="_bomb" Version="2.0" IssueInstant="%s"><saml:Issuer>&lol5;</saml:Issuer></samlp:AuthnRequest>"""

XXE = b"""<?xml version="1.0"?>
<!DOCTYPE r [<!ENTITY xxe SYSTEM "file:///etc/hostname">]>
<samlp:AuthnRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion"
 ID="_xxe" Version="2.0" IssueInstant="%s"><saml:Issuer>&xxe;</saml:Issuer></samlp:AuthnRequest>"""


@pytest.mark.parametrize("document", [BOMB, XXE], ids=["billion-laughs", "xxe"])
def test_xml_bomb_and_external_entities_refused(http, sp_client, document):
    form = {"SAMLRequest": base64.b64encode(document % m.instant().encode()).decode()}
    assert_refused(post(http, form), "Document type declarations are not allowed")


def test_utf16_doctype_still_refused():
    from saml import xml
    from saml.errors import UntrustedRequest

    with pytest.raises(UntrustedRequest):
        xml.parse((XXE % m.instant().encode()).decode().replace('version="1.0"', 'version="1.0" encoding="UTF-16"',
                                                               1).encode("utf-16"))


def test_not_xml_and_oversized(http, sp_client):
    assert_refused(post(http, {"SAMLRequest": base64.b64encode(b"<not-closed").decode()}), "not well-formed")
    assert_refused(post(http, {"SAMLRequest": "%%%"}), "not valid base64")
    assert_refused(http.get("/realms/acme/protocol/saml"), "Missing parameter: SAMLRequest")
    import zlib

    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    bomb = base64.b64encode(compressor.compress(b" " * 2_000_000) + compressor.flush()).decode()
    assert_refused(http.get("/realms/acme/protocol/saml", {"SAMLRequest": bomb}), "too large")


def _saml_response(response):
    from saml import xml

    body = response.content.decode()
    import re

    value = re.search(r'name="SAMLResponse" value="([^"]+)"', body).group(1)
    return xml.parse(base64.b64decode(value))


def test_passive_request_without_session_gets_no_passive_status(http, sp_client, keys):
    response = post(http, m.post_form(m.sign(m.authn_request(SP, acs=ACS, IsPassive="true"), keys[0])))
    root = _saml_response(response)
    codes = [e.get("Value") for e in root.iter(f"{{{c.NS_SAMLP}}}StatusCode")]
    assert codes == [c.STATUS_RESPONDER, c.STATUS_NO_PASSIVE]
    assert root.find(f"{{{c.NS_SAML}}}Assertion") is None and not UserSession.objects.exists()
    assert Event.objects.get(type="LOGIN_ERROR").error == "login_required"


def test_unsupported_name_id_policy_gets_a_status(http, sp_client, keys):
    request = m.authn_request(SP, acs=ACS)
    etree.SubElement(request, etree.QName(c.NS_SAMLP, "NameIDPolicy"), Format="urn:example:unknown")
    root = _saml_response(post(http, m.post_form(m.sign(request, keys[0]))))
    codes = [e.get("Value") for e in root.iter(f"{{{c.NS_SAMLP}}}StatusCode")]
    assert codes == [c.STATUS_REQUESTER, c.STATUS_INVALID_NAMEID_POLICY]
    assert root.get("InResponseTo") == request.get("ID") and root.get("Destination") == ACS


def test_metadata(http, realm):
    response = http.get("/realms/acme/protocol/saml/descriptor")
    assert response.status_code == 200 and response["Content-Type"] == "application/samlmetadata+xml"
    root = etree.fromstring(response.content)
    assert root.get("entityID") == "http://testserver/realms/acme"
    ns = {"md": c.NS_MD, "ds": c.NS_DS}
    bindings = sorted((e.tag.rsplit("}")[1], e.get("Binding"), e.get("Location"))
                      for e in root.xpath("//md:SingleSignOnService|//md:SingleLogoutService", namespaces=ns))
    endpoint = "http://testserver/realms/acme/protocol/saml"
    assert bindings == sorted((kind, b, endpoint) for kind in ("SingleLogoutService", "SingleSignOnService")
                              for b in (c.BINDING_POST, c.BINDING_REDIRECT))
    assert len(root.xpath("//md:KeyDescriptor[@use='signing']//ds:X509Certificate", namespaces=ns)) == 1


def test_wrong_password_in_a_saml_sign_in_is_a_saml_login_error(http, sp_client, keys):
    from realms.users.accounts import create_user

    from .sp import submit_login

    create_user(sp_client.realm, "alice", password="right password")
    page = post(http, m.post_form(m.sign(m.authn_request(SP, acs=ACS), keys[0])))
    page.text, page.url = page.content.decode(), "http://testserver/realms/acme/protocol/saml"
    answer = submit_login(http, page, "alice", "wrong password")
    assert answer.status_code == 200 and "Invalid username or password." in answer.content.decode()
    event = Event.objects.get(type="LOGIN_ERROR")
    assert (event.error, event.details["protocol"], event.details["redirect_uri"]) == (
        "invalid_user_credentials", "saml", ACS)
    assert not UserSession.objects.exists()


def test_disabled_client_refused(http, sp_client, keys):
    assert post(HttpClient(), m.post_form(m.sign(m.authn_request(SP, acs=ACS), keys[0]))).status_code == 200
    SeenRequest.objects.all().delete()
    sp_client.enabled = False  # the client's row is in the realm's cached configuration: dropped now
    sp_client.save()
    assert_refused(post(http, m.post_form(m.sign(m.authn_request(SP, acs=ACS), keys[0]))),
                   "Login requester not enabled.")


@pytest.mark.parametrize("attributes, requested, expected", [
    ({}, "", "username"),
    ({c.ATTR_NAME_ID_FORMAT: "email"}, c.NAMEID_UNSPECIFIED, "email"),
    ({}, c.NAMEID_PERSISTENT, "persistent"),
    ({c.ATTR_NAME_ID_FORMAT: "username", c.ATTR_FORCE_NAME_ID_FORMAT: "true"}, c.NAMEID_TRANSIENT, "username"),
])
def test_name_id_format_requested_or_forced(sp_client, attributes, requested, expected):
    from saml.clients import SamlClient
    from saml.sso import _requested_format

    sp_client.attributes = {**sp_client.attributes, **attributes}
    request = m.authn_request(SP)
    if requested:
        etree.SubElement(request, etree.QName(c.NS_SAMLP, "NameIDPolicy"), Format=requested)
    assert _requested_format(SamlClient(sp_client), request) == expected
