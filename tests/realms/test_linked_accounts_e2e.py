"""Account linking end to end over HTTP against panva's oidc-provider (a browser without
JavaScript): from the account console's "Linked accounts" page the user links the provider
through Keycloak's ``idp_link`` application-initiated action (confirm, the provider's login, back
linked: ``kc_action_status=success``), an application's ``kc_action=idp_link:<alias>`` can be
cancelled, an account at the provider linked to someone else is refused with Keycloak's message,
and unlinking the only way in of a brokered user is refused while a user with a password may."""
import html
import re
from urllib.parse import urljoin

import pytest

from realms.models import FederatedIdentity, User
from realms.users.accounts import create_user
from tests.federation.broker.conftest import ALIAS, _loopback, make_idp, query_of, upstream  # noqa: F401
from tests.federation.broker.test_end_to_end import (  # noqa: F401 (fixtures)
    REDIRECT,
    app,
    auth_url,
    base,
    live_idp,
    new_browser,
    realm,
    sign_in,
    tokens,
)
from tests.realms.test_first_broker_login_e2e import submit

pytestmark = pytest.mark.usefixtures("fresh_caches")
PASSWORD = "bob's own password 42"
CONSOLE = "/realms/acme/account/account-security/linked-accounts"


@pytest.fixture
def bob(realm):
    return create_user(realm, "bob", password=PASSWORD, email="bob@example.com", first_name="Bob", last_name="B")


def console(browser, base, login=True):
    """The linked-accounts page, signing in with bob's password first when asked."""
    page = browser.get(base + CONSOLE, timeout=10)
    if login and 'id="kc-form-login"' in page.text:
        page = submit(browser, page, {"username": "bob", "password": PASSWORD})
        while page.status_code in (302, 303):
            page = browser.get(urljoin(page.url, page.headers["Location"]), timeout=10, allow_redirects=False)
    assert page.status_code == 200 and 'id="linked-idps"' in page.text, page.text[:300]
    return page


def test_linking_from_the_account_console(live_idp, base, realm, upstream, bob):
    live_idp()
    browser = new_browser()
    page = console(browser, base)
    assert f'id="{ALIAS}-idp-link"' in page.text and f'id="{ALIAS}-idp-unlink"' not in page.text
    href = html.unescape(re.search(rf'href="([^"]+)" id="{ALIAS}-idp-link"', page.text).group(1))
    confirm = browser.get(urljoin(base, href), timeout=10)
    assert confirm.status_code == 200 and "Do you want to link your account with upstream?" in confirm.text
    sent = submit(browser, confirm, {"continue": "true"})
    assert sent.status_code == 302 and sent.headers["Location"].startswith(upstream.issuer), sent.text[:300]
    back = browser.get(upstream.sign_in(sent.headers["Location"], "grace"), timeout=10, allow_redirects=False)
    assert back.status_code == 302, back.text[:300]
    query = query_of(back.headers["Location"])
    assert query["kc_action"] == "idp_link:upstream" and query["kc_action_status"] == "success"
    link = FederatedIdentity.objects.get()
    assert (link.user_id, link.subject, link.user_name) == (bob.pk, "grace", "grace")
    page = browser.get(urljoin(base, back.headers["Location"]), timeout=10)
    linked = page.text.split('id="unlinked-idps"')[0]
    assert f'id="{ALIAS}-idp-unlink"' in linked and "grace" in linked
    # bob has a password: the link may go.
    done = submit(browser, page, {"unlink": ALIAS})
    assert done.status_code == 302 and not FederatedIdentity.objects.exists()


def test_an_application_cancels_the_link(live_idp, base, realm, upstream, bob, app):
    live_idp()
    browser = new_browser()
    login = browser.get(auth_url(base), timeout=10)
    assert submit(browser, login, {"username": "bob", "password": PASSWORD}).status_code == 302
    confirm = browser.get(auth_url(base) + f"&kc_action=idp_link:{ALIAS}", timeout=10)
    assert 'id="kc-cancel"' in confirm.text
    cancelled = submit(browser, confirm, {"cancel-aia": "true"})
    location = cancelled.headers["Location"]
    assert location.startswith(REDIRECT) and query_of(location)["kc_action_status"] == "cancelled"
    unknown = browser.get(auth_url(base) + "&kc_action=idp_link:nope", timeout=10, allow_redirects=False)
    assert query_of(unknown.headers["Location"])["kc_action_status"] == "error"
    assert not FederatedIdentity.objects.exists()


def test_an_account_linked_to_someone_else_is_refused(live_idp, base, realm, upstream, bob, app):
    live_idp()
    tokens(base, sign_in(new_browser(), base, upstream, login="grace"))  # grace's first login: her own user
    grace = User.objects.get(realm=realm, username="grace")
    browser = new_browser()
    login = browser.get(auth_url(base), timeout=10)
    submit(browser, login, {"username": "bob", "password": PASSWORD})
    confirm = browser.get(auth_url(base) + f"&kc_action=idp_link:{ALIAS}", timeout=10)
    sent = submit(browser, confirm, {"continue": "true"})
    refused = browser.get(upstream.sign_in(sent.headers["Location"], "grace"), timeout=10, allow_redirects=False)
    assert refused.status_code == 400
    assert "Federated identity returned by upstream is already linked to another user." in refused.text
    assert FederatedIdentity.objects.get().user_id == grace.pk


def test_a_brokered_user_cannot_unlink_their_only_way_in(live_idp, base, realm, upstream, app):
    live_idp()
    browser = new_browser()
    tokens(base, sign_in(browser, base, upstream, login="ada"))
    page = console(browser, base, login=False)  # the SSO session of that sign-in
    refused = submit(browser, page, {"unlink": ALIAS})
    assert refused.status_code == 400
    assert "remove last federated identity as you don&#x27;t have a password." in refused.text
    assert FederatedIdentity.objects.filter(user__username="ada").exists()
