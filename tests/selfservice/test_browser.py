"""In headless Chromium against a live server: register, verify the e-mail through the link the
SMTP server captured, and arrive signed in at the application; the newcomer's whole first visit
(issue 15's "Checked by": on to the account console); then forgot password by e-mail."""
from contextlib import contextmanager
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import sync_playwright

from realms.models import User
from realms.representation.services import create_realm
from realms.users.accounts import create_user
from tests.browser import CHROMIUM_ARGS
from tests.oidc.browser.conftest import PASSWORD, make_client
from tests.oidc.browser.test_browser_playwright import _auth_url
from tests.passwords import holds_password
from tests.realms.test_account_console_browser import add_totp_device

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


def _register_and_verify(page, mailbox, username, email, first, last):
    """From the login page: register with a password the policy refuses (its message answered),
    then with PASSWORD, and follow the e-mailed verification link."""
    page.locator("#kc-register").click()
    for field, value in (("#username", username), ("#email", email), ("#firstName", first), ("#lastName", last),
                         ("#password", "short"), ("#password-confirm", "short")):
        page.locator(field).fill(value)
    page.get_by_role("button", name="Register").click()
    policy_message = page.locator("#input-error-password").inner_text()
    page.locator("#password").fill(PASSWORD)
    page.locator("#password-confirm").fill(PASSWORD)
    page.get_by_role("button", name="Register").click()
    page.locator("#kc-verify-email-form").wait_for(timeout=10000)
    page.goto(link_in(mailbox.wait()[0]))
    page.locator("#kc-proceed").click()
    return policy_message


def test_register_verify_then_sign_in(base, site, mailbox):
    with chromium() as browser:
        page = browser.new_page()
        page.goto(_auth_url(base, "web-app", "st-reg"))
        policy_message = _register_and_verify(page, mailbox, "alice", "alice@example.com", "Alice", "Liddell")
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
    assert holds_password(User.objects.get(realm=site, username="bob"), "fresh-Password-1")


def test_a_newcomers_first_visit_from_registration_to_the_account_console(base, site, mailbox):
    """Register (the policy's message), verify the e-mail by its link, consent, arrive at the
    application; then sign in to the account console elsewhere, change the password (the policy's
    message), add a one-time-code device with pyotp, sign out the first session and revoke the
    application's consent."""
    from oidc.models import ConsentGrant
    from realms.models import Client, UserSession

    Client.objects.filter(realm=site, client_id="web-app").update(consent_required=True)
    new_password = "a-much-longer-password-2"
    with chromium() as browser:
        app = browser.new_context().new_page()
        app.goto(_auth_url(base, "web-app", "st-first"))
        register_message = _register_and_verify(app, mailbox, "carol", "carol@example.com", "Carol", "Carrot")
        app.locator("#kc-login").click()  # the consent page: Yes
        app.wait_for_url(f"{base}/web-app/cb?**", timeout=10000)
        arrived = parse_qs(urlsplit(app.url).query)

        console = browser.new_context().new_page()  # another device
        console.goto(f"{base}/realms/acme/account/account-security/signing-in")
        console.locator("#username").fill("carol")
        console.locator("#password").fill(PASSWORD)
        console.locator("#kc-login").click()
        console.locator("#page-title").wait_for(timeout=10000)
        console.locator("#password").fill(PASSWORD)
        console.locator("#password-new").fill("tiny")
        console.locator("#password-confirm").fill("tiny")
        console.locator("#save-password").click()
        console_message = console.locator("#input-error-password").inner_text()
        console.locator("#password").fill(PASSWORD)
        console.locator("#password-new").fill(new_password)
        console.locator("#password-confirm").fill(new_password)
        console.locator("#save-password").click()
        password_notice = console.locator("#notice").inner_text()

        add_totp_device(console, base, "carol's phone")
        devices = console.locator("#credential-otp").inner_text()

        console.goto(f"{base}/realms/acme/account/account-security/device-activity")
        console.get_by_role("button", name="Sign out this session").click()
        console.locator("#notice").wait_for()
        console.goto(f"{base}/realms/acme/account/applications")
        granted = console.locator("main").inner_text()
        console.get_by_role("button", name="Remove access").click()
        console.locator("#notice").wait_for()
    carol = User.objects.get(realm=site, username="carol")
    assert "minimum length 10" in register_message and console_message == "Invalid password: minimum length 10."
    assert arrived["state"] == ["st-first"] and arrived["code"] and carol.email_verified
    assert "Your password has been updated." in password_notice and holds_password(carol, new_password)
    assert "carol's phone" in devices and [c.user_label for c in carol.credentials.filter(type="otp")] == [
        "carol's phone"]
    assert UserSession.objects.filter(user=carol).count() == 1  # the console's own; the application's ended
    assert "web-app" in granted and not ConsentGrant.objects.filter(user=carol).exists()
