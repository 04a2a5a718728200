"""In headless Chromium against a live server: register, verify the e-mail through the link the
SMTP server captured, and arrive signed in at the application; then forgot password by e-mail."""
from contextlib import contextmanager
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import sync_playwright

from realms.accounts import create_user
from realms.models import User
from realms.services import create_realm
from tests.oidc.browser.conftest import PASSWORD, make_client
from tests.oidc.browser.test_browser_playwright import CHROMIUM_ARGS, _auth_url

from .conftest import link_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@contextmanager
def chromium():
    """A headless Chromium for one test; the database is read only outside it (Playwright's sync
    API runs an event loop, in which Django refuses queries)."""
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def base(live_server):
    return live_server.url.replace("localhost", "127.0.0.1")


@pytest.fixture
def site(transactional_db, base, smtp_settings, fresh_caches):
    realm = create_realm("acme")
    realm.registration_allowed = realm.verify_email = realm.reset_password_allowed = True
    realm.password_policy = "length(10)"
    realm.smtp_server = smtp_settings
    realm.save()
    make_client(realm, "web-app", redirect_uris=[f"{base}/web-app/cb"])
    return realm


def test_register_verify_then_sign_in(base, site, mailbox):
    with chromium() as browser:
        page = browser.new_page()
        page.goto(_auth_url(base, "web-app", "st-reg"))
        page.locator("#kc-register").click()
        page.locator("#username").fill("alice")
        page.locator("#email").fill("alice@example.com")
        page.locator("#firstName").fill("Alice")
        page.locator("#lastName").fill("Liddell")
        page.locator("#password").fill("short")
        page.locator("#password-confirm").fill("short")
        page.get_by_role("button", name="Register").click()
        policy_message = page.locator("#input-error-password").inner_text()
        page.locator("#password").fill(PASSWORD)
        page.locator("#password-confirm").fill(PASSWORD)
        page.get_by_role("button", name="Register").click()
        page.locator("#kc-verify-email-form").wait_for(timeout=10000)
        page.goto(link_in(mailbox.wait()[0]))
        page.locator("#kc-proceed").click()
        page.wait_for_url(f"{base}/web-app/cb?**", timeout=10000)
        query = parse_qs(urlsplit(page.url).query)
    assert "minimum length 10" in policy_message
    assert query["state"] == ["st-reg"] and query["code"]
    assert User.objects.get(realm=site, username="alice").email_verified


def test_forgot_password_by_email(base, site, mailbox):
    create_user(site, "bob", password=PASSWORD, email="bob@example.com", email_verified=True)
    with chromium() as browser:
        page = browser.new_page()
        page.goto(_auth_url(base, "web-app", "st-reset"))
        page.locator("#kc-forgot-password").click()
        page.locator("#username").fill("bob")
        page.get_by_role("button", name="Submit").click()
        info = page.locator("#kc-info-text").inner_text()
        page.goto(link_in(mailbox.wait()[0]))
        page.locator("#kc-proceed").click()
        page.locator("#password-new").fill("fresh-Password-1")
        page.locator("#password-confirm").fill("fresh-Password-1")
        page.locator("#kc-passwd-update-form button[type=submit]").click()
        page.wait_for_url(f"{base}/web-app/cb?**", timeout=10000)
        query = parse_qs(urlsplit(page.url).query)
    assert "You should receive an email shortly" in info
    assert query["state"] == ["st-reset"] and query["code"]
    assert User.objects.get(realm=site, username="bob").check_password("fresh-Password-1")
