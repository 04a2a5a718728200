"""The cost model (docs/cost-model.md) of a SAML AuthnRequest answered from the browser's SSO
session (no login form), once the realm's configuration is cached, held exactly."""
from django.test import Client as HttpClient

from tests.conftest import assert_costs
from tests.realms.test_otp import action_of

from . import messages as m
from .conftest import SP_ENTITY, make_saml_client
from .sp import PASSWORD, key_pair, saml_response_of

SP_BASE = "https://sp.example"

# (queries, shared-cache calls) per request, with what they are. Keep docs/cost-model.md in step.
EXPECTED = {
    # The SAML client's row; the client's expired request ids deleted, this one's inserted; the
    # client session read, updated, then its notes updated again; the client's scopes, the
    # protocol mappers of the client and of its scopes; the user's roles, groups and a group's
    # parent (its path); the realm's signing key; the event. In the cache: the SSO session, the
    # client session's copy dropped twice (once per update).
    "saml_sso_with_session": (14, 3),
}


def test_queries_and_cache_calls_per_request_type(realm, user, measure):
    key_pem, cert_pem, cert_b64 = key_pair("cost-sp")
    make_saml_client(realm, SP_ENTITY, SP_BASE, cert_b64)
    keys = m.load_key(key_pem, cert_pem)
    browser = HttpClient()

    def sso():
        request = m.authn_request(SP_ENTITY, acs=f"{SP_BASE}/sp/acs")
        return browser.post("/realms/acme/protocol/saml", m.post_form(m.sign(request, keys)))

    page = sso()
    signed_in = browser.post(action_of(page), {"username": "alice", "password": PASSWORD})
    signed_in.text = signed_in.content.decode()
    assert saml_response_of(signed_in)[1]
    warm = sso()  # the SSO session cached, as every answer from the cookie after the first finds it
    warm.text = warm.content.decode()
    assert saml_response_of(warm)[1]
    found = {}
    with measure() as found["saml_sso_with_session"]:
        response = sso()
    response.text = response.content.decode()
    assert saml_response_of(response)[0] == f"{SP_BASE}/sp/acs"
    assert_costs(found, EXPECTED)
