"""End to end in headless Chromium: a user who must CONFIGURE_TOTP reads the manual key off the
setup page, confirms with a code computed by pyotp, and must then give a code on the next
sign-in (Keycloak's page ids #kc-otp-login-form, #otp, #kc-login)."""
import time
from urllib.parse import parse_qs, urlsplit

import pyotp
import pytest
from playwright.sync_api import sync_playwright

from realms.models import User
from realms.representation.services import create_realm
from realms.users.accounts import create_user
from tests.browser import CHROMIUM_ARGS
from tests.oidc.browser.conftest import PASSWORD, make_client
from tests.oidc.browser.test_browser_playwright import _auth_url

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def base(live_server):
    return live_server.url.replace("localhost", "127.0.0.1")


def _sign_in_with_password(page, base, state):
    page.goto(_auth_url(base, "web-app", state))
    page.get_by_label("Username or email").fill("bob")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()


def test_enrol_then_sign_in_with_a_code(transactional_db, base):
    realm = create_realm("acme")
    make_client(realm, "web-app", redirect_uris=[f"{base}/web-app/cb"])
    user = create_user(realm, "bob", password=PASSWORD)
    User.objects.filter(pk=user.pk).update(required_actions=["CONFIGURE_TOTP"])
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            _sign_in_with_password(page, base, "st-enrol")
            page.locator("#kc-totp-settings-form").wait_for(timeout=10000)
            assert page.locator("#kc-totp-secret-qr-code svg").count() == 1
            app = pyotp.TOTP(page.locator("#kc-totp-secret-key").inner_text().replace(" ", ""))
            page.locator("#totp").fill(app.now())
            page.locator("#userLabel").fill("my phone")
            page.locator("#saveTOTPBtn").click()
            page.wait_for_url(f"{base}/web-app/cb?**", timeout=10000)
            assert parse_qs(urlsplit(page.url).query)["code"]

            fresh = browser.new_context().new_page()  # no SSO session
            _sign_in_with_password(fresh, base, "st-otp")
            fresh.locator("#kc-otp-login-form").wait_for(timeout=10000)
            fresh.locator("#otp").fill(app.at(time.time() + 30))  # the next period's: the enrolment code is used
            fresh.locator("#kc-login").click()
            fresh.wait_for_url(f"{base}/web-app/cb?**", timeout=10000)
            assert parse_qs(urlsplit(fresh.url).query)["state"] == ["st-otp"]
        finally:
            browser.close()
