"""The cost model (docs/cost-model.md) of a SAML AuthnRequest answered from the browser's SSO
session (no login form), once the realm's configuration is cached, held exactly."""
import pytest
from django.test import Client as HttpClient

from realms.data.keys import rotate_key
from saml import keys as idp_keys
from tests.conftest import assert_costs
from tests.realms.test_otp import action_of

from . import messages as m
from .conftest import SP_ENTITY, make_saml_client
from .sp import PASSWORD, key_pair, saml_response_of

SP_BASE = "https://sp.example"

# (queries, shared-cache calls) per request, with what they are. Keep docs/cost-model.md in step.
EXPECTED = {
    # This request's id inserted (expired ones are left to the periodic purge, saml.purges); the
    # client session written in one statement; the user's roles and groups; the event. The client,
    # its mappers and role scope come from the realm's cached configuration, as do the groups'
    # paths; the signing key from the realm's loaded keys. In the cache: the SSO session, the
    # client session's copy dropped at once and again on commit.
    "saml_sso_with_session": (5, 3),
}


# Committed, not rolled back: the count holds what runs on commit (the client session's copy dropped).
@pytest.mark.django_db(transaction=True)
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


def test_the_signing_key_is_kept_with_the_realms_keys_and_follows_a_rotation(realm, measure):
    idp_keys.signing_credential(realm)  # the first use gives the key its certificate; the next reads it back
    first = idp_keys.signing_credential(realm)
    found = {}
    with measure() as found["signing_key"]:
        assert idp_keys.signing_credential(realm) is first
    assert_costs(found, {"signing_key": (0, 0)})
    rotated = rotate_key(realm, "RS256")
    assert idp_keys.signing_credential(realm).kid == rotated.kid != first.kid
    assert [credential.kid for credential in idp_keys.published_credentials(realm)] == [rotated.kid, first.kid]
