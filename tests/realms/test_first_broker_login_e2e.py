"""First broker login end to end over HTTP: our live server, panva's oidc-provider on its own
loopback port, a browser without JavaScript (requests). Someone whose e-mail is an existing
account's is never linked silently: "Account already exists", then that account's password and
one-time code (pyotp), then the link, and our client gets our tokens; the next sign-in goes
through the link. With automatic linking put in a flow by an admin, the account is linked at once."""
import html
import re
from urllib.parse import urljoin

import pytest

from realms.data import realm_cache
from realms.models import AuthenticationExecution, AuthenticationFlow, FederatedIdentity, User
from realms.users.accounts import create_user
from tests.federation.broker.conftest import _loopback, make_idp, upstream  # noqa: F401 (fixtures)
from tests.federation.broker.test_end_to_end import app, base, live_idp, new_browser, realm, sign_in, tokens  # noqa: F401
from tests.realms.test_otp import add_otp, app_totp

pytestmark = pytest.mark.usefixtures("fresh_caches")
PASSWORD = "ada's own password 42"


def form(page):
    """(action URL, hidden fields) of the page's first form (one without an action posts to the page)."""
    action = re.search(r'action="([^"]+)"', re.search(r"<form[^>]*>", page.text).group(0))
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', page.text))
    return urljoin(page.url, html.unescape(action.group(1)) if action else ""), fields


def submit(browser, page, data):
    action, hidden = form(page)
    return browser.post(action, data={**hidden, **data}, timeout=10, allow_redirects=False)


@pytest.fixture
def ada(realm):
    user = create_user(realm, "ada.local", password=PASSWORD, email="ada@upstream.example", first_name="Ada",
                       last_name="Local")
    add_otp(user)
    return user


def test_an_existing_account_is_linked_after_its_password_and_code(live_idp, base, realm, upstream, ada):
    live_idp(fields={"trust_email": True})
    browser = new_browser()
    page = sign_in(browser, base, upstream)
    assert page.status_code == 200, page.text[:300]
    assert "User with email ada@upstream.example already exists. How do you want to continue?" in page.text
    assert not FederatedIdentity.objects.exists()  # never linked silently
    login = submit(browser, page, {"submitAction": "linkAccount"})
    assert re.search(r'id="username"[^>]*value="ada.local"[^>]*readonly', login.text)
    otp = submit(browser, login, {"password": PASSWORD})
    assert 'name="otp"' in otp.text and not FederatedIdentity.objects.exists()
    issued = tokens(base, submit(browser, otp, {"otp": app_totp().now()}))
    assert issued["access_token"]
    link = FederatedIdentity.objects.get()
    assert (link.user_id, link.subject, link.user_name) == (ada.pk, "ada", "ada")
    assert User.objects.filter(realm=realm).count() == 1
    # The next sign-in, in another browser, goes through the link: no page at all.
    assert tokens(base, sign_in(new_browser(), base, upstream, via_button=False))["access_token"]


def test_a_wrong_password_links_nothing(live_idp, base, realm, upstream, ada):
    live_idp()
    browser = new_browser()
    login = submit(browser, sign_in(browser, base, upstream), {"submitAction": "linkAccount"})
    wrong = submit(browser, login, {"password": "not it"})
    assert wrong.status_code == 200 and "Invalid username or password." in wrong.text
    assert not FederatedIdentity.objects.exists()


def test_automatic_linking_where_an_admin_configured_it(live_idp, base, realm, upstream, ada):
    flow = AuthenticationFlow.objects.create(realm=realm, alias="auto link", provider_id="basic-flow", top_level=True)
    for priority, step in enumerate(("idp-detect-existing-broker-user", "idp-auto-link")):
        AuthenticationExecution.objects.create(realm=realm, flow=flow, authenticator=step, requirement="REQUIRED",
                                               priority=priority)
    live_idp(fields={"first_broker_login_flow_alias": "auto link"})
    realm_cache.clear()
    assert tokens(base, sign_in(new_browser(), base, upstream))["access_token"]
    assert FederatedIdentity.objects.get().user_id == ada.pk
