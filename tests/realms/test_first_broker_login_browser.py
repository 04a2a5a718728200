"""First broker login and account linking in headless Chromium at a phone's width, with the
keyboard only, panva's oidc-provider upstream: an account with the same e-mail here ("Account
already exists" takes Enter for its primary action, the password page shows the account's
username fixed and takes the password with Enter, the application gets its code); and linking
from the account console's Linked accounts page through the idp_link action. No page is wider
than the screen and none has a serious accessibility violation (axe)."""
import pytest

from realms.models import FederatedIdentity
from realms.users.accounts import create_user
from tests.browser import chromium  # noqa: F401 (a fixture)
from tests.federation.broker.conftest import _loopback, make_idp, upstream  # noqa: F401 (fixtures)
from tests.federation.broker.test_end_to_end import app, auth_url, base, live_idp, realm  # noqa: F401
from tests.realms.test_account_console_browser import _no_horizontal_scroll, _no_serious_violations

pytestmark = pytest.mark.usefixtures("fresh_caches")
PASSWORD = "grace's own password 42"


@pytest.fixture
def page(chromium):  # noqa: F811
    context = chromium.new_context(viewport={"width": 390, "height": 800})
    yield context.new_page()
    context.close()


def test_link_an_existing_account_with_the_keyboard_on_a_phone(live_idp, base, realm, upstream, app, page):
    grace = create_user(realm, "grace.local", password=PASSWORD, email="grace@upstream.example", first_name="Grace",
                        last_name="Local")
    live_idp()
    page.route("https://app.example/**", lambda route: route.fulfill(status=200, body="the application"))
    page.goto(auth_url(base))
    page.locator("#social-upstream").click()
    _upstream_sign_in(page, base, "grace")
    page.locator("#linkAccount").wait_for(timeout=10000)
    assert "User with email grace@upstream.example already exists." in page.locator("#kc-link-message").inner_text()
    _no_horizontal_scroll(page)
    _no_serious_violations(page)
    assert not FederatedIdentity.objects.exists()
    page.keyboard.press("Enter")  # the primary action has the focus
    page.locator("#password").wait_for(timeout=10000)
    assert page.locator("#username").input_value() == "grace.local"
    assert page.locator("#username").get_attribute("readonly") is not None
    _no_horizontal_scroll(page)
    _no_serious_violations(page)
    page.locator("#password").fill(PASSWORD)
    page.locator("#password").press("Enter")
    page.wait_for_url("https://app.example/cb?*", timeout=10000)
    assert "code=" in page.url
    assert FederatedIdentity.objects.get().user_id == grace.pk


def _upstream_sign_in(page, base, login):
    page.locator("input[name=login]").fill(login)
    page.locator("input[name=password]").fill("any")
    page.locator("input[name=password]").press("Enter")
    for _ in range(3):  # oidc-provider may ask for consent once
        page.wait_for_load_state()
        if page.url.startswith(base):
            return
        page.locator("button[type=submit]").first.click()


def test_link_from_the_account_console_with_the_keyboard_on_a_phone(live_idp, base, realm, upstream, page):
    bob = create_user(realm, "bob", password=PASSWORD, email="bob@example.com", first_name="Bob", last_name="B")
    live_idp()
    page.goto(f"{base}/realms/acme/account/account-security/linked-accounts")
    page.locator("#username").fill("bob")
    page.locator("#password").fill(PASSWORD)
    page.locator("#password").press("Enter")
    page.locator("#upstream-idp-link").wait_for(timeout=10000)
    _no_horizontal_scroll(page)
    _no_serious_violations(page)
    page.locator("#upstream-idp-link").focus()
    page.keyboard.press("Enter")
    page.locator("#kc-link-text").wait_for(timeout=10000)
    assert page.locator("#kc-link-text").inner_text() == "Do you want to link your account with upstream?"
    _no_horizontal_scroll(page)
    _no_serious_violations(page)
    page.keyboard.press("Enter")  # Continue has the focus
    page.locator("input[name=login]").wait_for(timeout=10000)
    _upstream_sign_in(page, base, "grace")
    page.locator("#upstream-idp-unlink").wait_for(timeout=10000)
    assert "grace" in page.locator("#linked-idps").inner_text()
    assert FederatedIdentity.objects.get().user_id == bob.pk
