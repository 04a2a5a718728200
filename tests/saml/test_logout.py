"""Single logout propagation, both ways: an OIDC logout reaches the SAML clients of the session
(front-channel through our logout-step page, back-channel by a SOAP LogoutRequest posted to a
real HTTP server on loopback), and a SAML LogoutRequest that fails its checks ends nothing."""
import base64
import re

import pytest
from django.test import Client as HttpClient
from lxml import etree

from realms.models import Client, ClientSession, Event, UserSession
from realms.representation.services import add_default_client_scopes, create_realm
from realms.users.accounts import create_user
from saml import constants as c
from saml import keys as idp_keys
from saml import signatures, xml
from tests import servers

from . import messages as m
from .sp import PASSWORD, form_fields, key_pair, submit_login

FRONT = "https://front.example/metadata"
BACK = "https://back.example/metadata"


class SoapReceiver(servers.Receiver):
    """A SAML SP's back end on 127.0.0.1 that records SOAP bodies."""

    @property
    def bodies(self):
        return [(r["headers"]["Content-Type"], r["body"]) for r in self.requests]


@pytest.fixture
def receiver(outbound_loopback):
    server = SoapReceiver()
    yield server
    server.close()


@pytest.fixture(scope="module")
def keys():
    key_pem, cert_pem, cert_b64 = key_pair("logout-sp")
    return m.load_key(key_pem, cert_pem), cert_b64


@pytest.fixture
def realm(db):
    realm = create_realm("acme", events_enabled=True)
    create_user(realm, "alice", password=PASSWORD, email="alice@example.org")
    return realm


def saml_client(realm, entity_id, cert_b64, **fields):
    client = Client.objects.create(realm=realm, client_id=entity_id, protocol=c.PROTOCOL, **fields)
    client.attributes = {c.ATTR_SIGNING_CERTIFICATE: cert_b64, c.ATTR_ACS_POST: f"{entity_id}/acs",
                         **client.attributes}
    client.save()
    add_default_client_scopes(client)
    return client


def sign_in(http, entity_id, keys, password=True):
    response = http.post("/realms/acme/protocol/saml",
                         m.post_form(m.sign(m.authn_request(entity_id, acs=f"{entity_id}/acs"), keys)))
    if password:
        response = submit_login(http, _Page(response), "alice")
        response = _Page(response)
    _, fields = form_fields(response.text)
    return xml.parse(base64.b64decode(fields["SAMLResponse"]))


class _Page:
    """The attributes of a requests response that ``submit_login`` reads, over a test response."""

    def __init__(self, response):
        self.status_code = response.status_code
        self.text = response.content.decode()
        self.url = "http://testserver/realms/acme/protocol/saml"


def _name_id_and_index(response_root):
    assertion = response_root.find(f"{{{c.NS_SAML}}}Assertion")
    name_id = assertion.find(f".//{{{c.NS_SAML}}}NameID").text
    return name_id, assertion.find(f".//{{{c.NS_SAML}}}AuthnStatement").get("SessionIndex")


def test_oidc_logout_reaches_saml_clients_front_and_back_channel(realm, keys, receiver,
                                                                django_capture_on_commit_callbacks):
    saml_client(realm, FRONT, keys[1], attributes={c.ATTR_SLO_POST: f"{FRONT}/slo"})
    saml_client(realm, BACK, keys[1], frontchannel_logout=False,
                attributes={c.ATTR_SLO_SOAP: receiver.url("/soap")})
    http = HttpClient()
    name_id, index = _name_id_and_index(sign_in(http, FRONT, keys[0]))
    sign_in(http, BACK, keys[0], password=False)  # SSO: no form
    assert ClientSession.objects.count() == 2

    page = http.get("/realms/acme/protocol/openid-connect/logout").content.decode()
    session_code = re.search(r'name="session_code" value="([^"]+)"', page).group(1)
    with django_capture_on_commit_callbacks(execute=True):
        page = http.post("/realms/acme/protocol/openid-connect/logout", {"session_code": session_code})
    assert not UserSession.objects.exists()

    # Front-channel: the logout page frames our logout step, which posts a signed LogoutRequest.
    frames = re.findall(r'<iframe src="([^"]+)"', page.content.decode())
    assert len(frames) == 1 and "/protocol/saml/logout-step?token=" in frames[0]
    step = http.get(frames[0].replace("&amp;", "&"))
    assert step["X-Frame-Options"] == "SAMEORIGIN"
    action, fields = form_fields(step.content.decode())
    assert action == f"{FRONT}/slo"
    credential = idp_keys.signing_credential(realm)
    request = signatures.verify_element(xml.parse(base64.b64decode(fields["SAMLRequest"])), credential.certificate)
    assert request.find(f"{{{c.NS_SAML}}}NameID").text == name_id
    assert request.find(f"{{{c.NS_SAMLP}}}SessionIndex").text == index
    assert request.get("Destination") == f"{FRONT}/slo"

    # Back-channel: a SOAP envelope with a signed LogoutRequest reached the SP's back end.
    assert len(receiver.bodies) == 1
    content_type, body = receiver.bodies[0]
    assert content_type.startswith("text/xml")
    envelope = etree.fromstring(body)
    soap_request = envelope.find(f"{{{c.NS_SOAP}}}Body/{{{c.NS_SAMLP}}}LogoutRequest")
    verified = signatures.verify_element(xml.parse(etree.tostring(soap_request)), credential.certificate)
    assert verified.find(f"{{{c.NS_SAML}}}NameID").text == "alice"
    assert verified.find(f"{{{c.NS_SAML}}}Issuer").text == "http://testserver/realms/acme"


def test_saml_logout_request_that_fails_its_checks_ends_nothing(realm, keys):
    saml_client(realm, FRONT, keys[1], attributes={c.ATTR_SLO_POST: f"{FRONT}/slo"})
    http = HttpClient()
    name_id, index = _name_id_and_index(sign_in(http, FRONT, keys[0]))

    unsigned = m.logout_request(FRONT, name_id, index)
    assert http.post("/realms/acme/protocol/saml", m.post_form(unsigned)).status_code == 400
    other_key = m.load_key(*key_pair("intruder")[:2])
    forged = m.sign(m.logout_request(FRONT, name_id, index), other_key)
    assert http.post("/realms/acme/protocol/saml", m.post_form(forged)).status_code == 400
    assert Event.objects.filter(type="LOGOUT_ERROR", error="invalid_signature").count() == 2

    # Signed, but naming someone else: answered with Success, and this session stays.
    wrong_user = m.sign(m.logout_request(FRONT, "mallory", index), keys[0])
    answer = http.post("/realms/acme/protocol/saml", m.post_form(wrong_user))
    action, fields = form_fields(answer.content.decode())
    assert action == f"{FRONT}/slo" and "SAMLResponse" in fields
    assert UserSession.objects.count() == 1 and not Event.objects.filter(type="LOGOUT").exists()

    # The genuine request ends it, and clears the browser's SSO cookie.
    answer = http.post("/realms/acme/protocol/saml", m.post_form(m.sign(m.logout_request(FRONT, name_id, index),
                                                                      keys[0])))
    assert not UserSession.objects.exists()
    assert answer.cookies["SERVICE_IDENTITY"].value == ""
    response = xml.parse(base64.b64decode(form_fields(answer.content.decode())[1]["SAMLResponse"]))
    assert response.find(f"{{{c.NS_SAMLP}}}Status/{{{c.NS_SAMLP}}}StatusCode").get("Value") == c.STATUS_SUCCESS
