"""Counts held exactly (docs/cost-model.md): an IdP-initiated sign-in answered from the browser's
SSO session takes its client from the realm's cached SAML clients (``saml.clients.by_url_name``),
as an AuthnRequest does."""
import pytest
from django.test import Client as HttpClient

from saml import constants as c
from tests.conftest import assert_costs
from tests.realms.test_otp import action_of

from .conftest import SP_ENTITY, make_saml_client
from .sp import PASSWORD, key_pair, saml_response_of

SP_BASE = "https://sp.example"
WIKI = "/realms/acme/protocol/saml/clients/wiki"


# Committed, not rolled back: the count holds what runs on commit (the client session's copy dropped).
@pytest.mark.django_db(transaction=True)
def test_an_idp_initiated_sign_in_reads_no_client_row(realm, user, measure):
    make_saml_client(realm, SP_ENTITY, SP_BASE, key_pair("idp-initiated-sp")[2],
                     **{c.ATTR_IDP_INITIATED_NAME: "wiki", c.ATTR_CLIENT_SIGNATURE: "false"})
    browser = HttpClient()
    browser.post(action_of(browser.get(WIKI)), {"username": "alice", "password": PASSWORD})
    browser.get(WIKI)  # the signing key's certificate, made by the first answer, read back and kept
    found = {}
    with measure() as found["saml_idp_initiated_with_session"]:
        response = browser.get(WIKI)
    response.text = response.content.decode()
    assert saml_response_of(response)[0] == f"{SP_BASE}/sp/acs"
    # The client session written in one statement, the user's roles and groups, the event; in the
    # cache the SSO session, the client session's copy dropped at once and again on commit. The
    # client's row was read by its URL name on every request before (5 statements).
    assert_costs(found, {"saml_idp_initiated_with_session": (4, 3)})


def test_a_url_name_changed_or_a_client_disabled_is_followed_at_once(realm):
    client = make_saml_client(realm, SP_ENTITY, SP_BASE, key_pair("idp-initiated-sp")[2],
                              **{c.ATTR_IDP_INITIATED_NAME: "wiki"})
    make_saml_client(realm, "https://other.example/metadata", "https://other.example", key_pair("other-sp")[2],
                     **{c.ATTR_IDP_INITIATED_NAME: ["not", "a", "name"]})
    browser = HttpClient()
    assert browser.get(WIKI).status_code == 200  # the login page: the realm's SAML clients cached
    client.attributes = {**client.attributes, c.ATTR_IDP_INITIATED_NAME: "docs"}
    client.save()
    refused = browser.get(WIKI)
    assert refused.status_code == 400 and "Unknown IdP-initiated SSO URL name." in refused.content.decode()
    assert browser.get("/realms/acme/protocol/saml/clients/docs").status_code == 200
    client.enabled = False
    client.save()
    assert browser.get("/realms/acme/protocol/saml/clients/docs").status_code == 400
