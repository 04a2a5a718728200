"""The broker's own rules, end to end against oidc-provider: the state carries a client id with
dots (a SAML entity id, a URL) and still finds its sign-in; the link keeps the provider's
username lower-cased unless the provider says its usernames are case-sensitive; a state that is
not the one kept signs nobody in."""
import pytest

from realms.models import FederatedIdentity

from ...oidc.browser.conftest import make_client
from .conftest import ALIAS
from .test_end_to_end import REDIRECT, auth_url, base, live_idp, new_browser, realm, sign_in, tokens  # noqa: F401


@pytest.fixture
def app(realm):  # noqa: F811
    return make_client(realm, "web-app", redirect_uris=[REDIRECT])


def test_a_client_id_with_dots_finds_its_sign_in(live_idp, base, realm, upstream):  # noqa: F811
    make_client(realm, "com.example.web", redirect_uris=[REDIRECT])
    live_idp()
    browser = new_browser()
    sent = browser.get(auth_url(base).replace("client_id=web-app", "client_id=com.example.web")
                       + f"&kc_idp_hint={ALIAS}", allow_redirects=False, timeout=10)
    assert sent.status_code == 302 and sent.headers["Location"].startswith(upstream.issuer)
    back = browser.get(upstream.sign_in(sent.headers["Location"], "dotted"), allow_redirects=False, timeout=10)
    assert back.status_code == 302 and back.headers["Location"].startswith(REDIRECT + "?code="), back.text[:300]


@pytest.mark.parametrize("case_sensitive, kept", [("", "grace"), ("true", "Grace")])
def test_the_links_username_is_lower_cased_unless_case_sensitive(live_idp, base, realm, upstream,  # noqa: F811
                                                                  case_sensitive, kept):
    live_idp(**({"caseSensitiveOriginalUsername": case_sensitive} if case_sensitive else {}))
    assert tokens(base, sign_in(new_browser(), base, upstream, login="Grace"))["access_token"]
    assert FederatedIdentity.objects.get(realm=realm).user_name == kept


def test_a_forged_state_signs_nobody_in(live_idp, base, realm, upstream):  # noqa: F811
    live_idp()
    browser = new_browser()
    sent = browser.get(auth_url(base) + f"&kc_idp_hint={ALIAS}", allow_redirects=False, timeout=10)
    back = upstream.sign_in(sent.headers["Location"], "mallory")
    forged = back.replace("state=", "state=x")
    answer = browser.get(forged, allow_redirects=False, timeout=10)
    assert answer.status_code == 400 and "expired" in answer.text
    assert not FederatedIdentity.objects.filter(realm=realm).exists()


def test_a_user_first_broker_login_created_is_registered_once(live_idp, base, realm, upstream):  # noqa: F811
    from realms.models import Event

    live_idp()
    assert tokens(base, sign_in(new_browser(), base, upstream, login="newcomer"))["access_token"]
    assert tokens(base, sign_in(new_browser(), base, upstream, login="newcomer"))["access_token"]
    registered = Event.objects.filter(realm=realm, type="REGISTER")
    assert [(e.details["register_method"], e.details["identity_provider"], e.details["username"])
            for e in registered] == [("broker", ALIAS, "newcomer")]
