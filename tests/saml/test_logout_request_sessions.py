"""Which SSO session an SP-initiated LogoutRequest ends (``saml.logout``), and whose cookie it
clears: by SessionIndex the session named, whatever browser sends it; without one the browser's
own session; the cookie is cleared only when it names the session ended."""
from django.test import Client as HttpClient

from realms.models import UserSession
from saml import constants as c
from tests.realms.test_otp import action_of

from . import messages as m
from .conftest import SP_ENTITY, make_saml_client
from .sp import PASSWORD, form_fields, key_pair
from .test_counts_logout_request import _assertion

SP_BASE = "https://sp.example"


def _signed_in(keys):
    browser = HttpClient()
    page = browser.post("/realms/acme/protocol/saml",
                        m.post_form(m.sign(m.authn_request(SP_ENTITY, acs=f"{SP_BASE}/sp/acs"), keys)))
    return browser, _assertion(browser.post(action_of(page), {"username": "alice", "password": PASSWORD}))


def _logout(browser, keys, name_id, index=None):
    request = m.logout_request(SP_ENTITY, name_id, index or "")
    if index is None:
        request.remove(request.find(f"{{{c.NS_SAMLP}}}SessionIndex"))
    return browser.post("/realms/acme/protocol/saml", m.post_form(m.sign(request, keys)))


def test_a_session_index_ends_that_session_and_leaves_another_browsers_cookie(realm, user):
    key_pem, cert_pem, cert_b64 = key_pair("logout-sessions-sp")
    keys = m.load_key(key_pem, cert_pem)
    make_saml_client(realm, SP_ENTITY, SP_BASE, cert_b64, **{c.ATTR_SLO_POST: f"{SP_BASE}/sp/slo"})
    mine, _ = _signed_in(keys)
    _, (name_id, index) = _signed_in(keys)  # another browser
    assert UserSession.objects.count() == 2
    answer = _logout(mine, keys, name_id, index)
    assert form_fields(answer.content.decode())[0] == f"{SP_BASE}/sp/slo"
    assert "SERVICE_IDENTITY" not in answer.cookies  # this browser's session was not the one ended
    assert UserSession.objects.count() == 1
    left = UserSession.objects.get()
    # Without a SessionIndex: the browser's own session, if the NameID is the one this client was given.
    assert "SERVICE_IDENTITY" not in _logout(mine, keys, "mallory").cookies
    assert UserSession.objects.filter(pk=left.pk).exists()
    answer = _logout(mine, keys, name_id)
    assert answer.cookies["SERVICE_IDENTITY"].value == ""
    assert not UserSession.objects.exists()
