"""Counts held exactly (docs/cost-model.md): an SP-initiated LogoutRequest, the SP sending it to
us, once the realm's configuration and keys are cached."""
import base64

import pytest
from django.test import Client as HttpClient

from realms.models import ClientSession, UserSession
from saml import constants as c
from saml import xml
from tests.conftest import assert_costs
from tests.realms.test_otp import action_of

from . import messages as m
from .conftest import make_saml_client
from .sp import PASSWORD, form_fields, key_pair

ASKING, OTHER = "https://sp.example/metadata", "https://other.example/metadata"

# (queries, shared-cache calls). Both: the request id inserted; the client session the
# SessionIndex names read with every client session of its SSO session and their clients, in one
# statement (a second one read them again); the SSO session's row read by Django's delete (its
# post_delete receiver drops the cached copy), its client sessions, codes, CIBA and device grants
# deleted, then the session; the event. In the cache: the SSO session's copy, dropped at once and
# on commit. The browser's cookie is compared by the id it names: reading the session just ended
# cost a cache call and a statement. Another client of the session, told through the logout
# page's frame, costs nothing more.
EXPECTED = {
    "saml_logout_request": (9, 3),
    "saml_logout_request_two_clients": (9, 3),
}


def _assertion(response):
    root = xml.parse(base64.b64decode(form_fields(response.content.decode())[1]["SAMLResponse"]))
    assertion = root.find(f"{{{c.NS_SAML}}}Assertion")
    return (assertion.find(f".//{{{c.NS_SAML}}}NameID").text,
            assertion.find(f".//{{{c.NS_SAML}}}AuthnStatement").get("SessionIndex"))


# Committed, not rolled back: the count holds what runs on commit.
@pytest.mark.django_db(transaction=True)
def test_an_sp_initiated_logout_request(realm, user, measure):
    key_pem, cert_pem, cert_b64 = key_pair("logout-count-sp")
    keys = m.load_key(key_pem, cert_pem)
    for entity_id in (ASKING, OTHER):
        base = entity_id.rsplit("/", 1)[0]
        make_saml_client(realm, entity_id, base, cert_b64, **{c.ATTR_SLO_POST: f"{base}/sp/slo"})
    browser = HttpClient()

    def sso(entity_id):
        request = m.authn_request(entity_id, acs=f"{entity_id.rsplit('/', 1)[0]}/sp/acs")
        return browser.post("/realms/acme/protocol/saml", m.post_form(m.sign(request, keys)))

    def logout(name_id, index):
        return browser.post("/realms/acme/protocol/saml",
                            m.post_form(m.sign(m.logout_request(ASKING, name_id, index), keys)))

    found = {}
    name_id, index = _assertion(browser.post(action_of(sso(ASKING)), {"username": "alice", "password": PASSWORD}))
    sso(ASKING)  # the signing key's certificate, made by the first answer, read back and kept
    with measure() as found["saml_logout_request"]:
        answer = logout(name_id, index)
    action, fields = form_fields(answer.content.decode())
    assert action == "https://sp.example/sp/slo" and "SAMLResponse" in fields
    assert answer.cookies["SERVICE_IDENTITY"].value == ""  # the browser's session was the one ended
    assert not UserSession.objects.exists() and not ClientSession.objects.exists()

    name_id, index = _assertion(browser.post(action_of(sso(ASKING)), {"username": "alice", "password": PASSWORD}))
    sso(OTHER)
    with measure() as found["saml_logout_request_two_clients"]:
        answer = logout(name_id, index)
    page = answer.content.decode()
    assert page.count("<iframe") == 1 and "/protocol/saml/logout-step?token=" in page
    assert answer.cookies["SERVICE_IDENTITY"].value == ""
    assert not UserSession.objects.exists() and not ClientSession.objects.exists()
    assert_costs(found, EXPECTED)
