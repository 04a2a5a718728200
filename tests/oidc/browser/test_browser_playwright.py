"""End to end in a real headless Chromium against the live server: sign in through the login
page and land on the client's redirect URI with code and state; a wrong password shows the
error and records LOGIN_ERROR; a second client is answered from the SSO session."""
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import sync_playwright

from realms.models import Event
from realms.representation.services import create_realm
from realms.users.accounts import create_user
from tests.browser import CHROMIUM_ARGS
from tests.oidc.browser.conftest import PASSWORD, make_client

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def base(live_server):
    return live_server.url.replace("localhost", "127.0.0.1")  # a loopback literal: no name lookup


@pytest.fixture
def setup(transactional_db, base):
    # The clients' redirect URIs are paths of the live server itself: the browser really lands
    # there (a 404 page is fine) and the test reads the URL it landed on.
    realm = create_realm("acme", events_enabled=True)
    make_client(realm, "web-app", redirect_uris=[f"{base}/web-app/cb"])
    make_client(realm, "other-app", redirect_uris=[f"{base}/other-app/cb"])
    create_user(realm, "bob", password=PASSWORD)
    return realm


def _auth_url(base, client_id, state):
    return (f"{base}/realms/acme/protocol/openid-connect/auth?client_id={client_id}"
            f"&redirect_uri={base}/{client_id}/cb&response_type=code&scope=openid&state={state}")


def _query(page):
    return parse_qs(urlsplit(page.url).query)


def test_sign_in_through_the_login_page(setup, base):
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(_auth_url(base, "web-app", "st-browser"))
            assert page.title() == "Sign in to acme"

            page.get_by_label("Username or email").fill("bob")
            page.get_by_label("Password").fill("not the password")
            page.get_by_role("button", name="Sign in").click()
            alert = page.get_by_role("alert")
            alert.wait_for(timeout=10000)
            assert alert.inner_text() == "Invalid username or password."
            assert page.get_by_label("Password").get_attribute("aria-describedby") == "input-error-username"
            assert page.get_by_label("Username or email").input_value() == "bob"

            page.get_by_label("Password").fill(PASSWORD)
            page.get_by_role("button", name="Sign in").click()
            page.wait_for_url(f"{base}/web-app/cb?**", timeout=10000)
            query = _query(page)
            assert query["state"] == ["st-browser"] and len(query["code"][0]) >= 40

            # A second client in the same browser: answered from the SSO session, no form.
            page.goto(_auth_url(base, "other-app", "st-2"))
            page.wait_for_url(f"{base}/other-app/cb?**", timeout=10000)
            assert _query(page)["state"] == ["st-2"] and _query(page)["code"]
        finally:
            browser.close()
    errors = list(Event.objects.filter(type="LOGIN_ERROR").values_list("error", flat=True))
    assert errors == ["invalid_user_credentials"]
    assert Event.objects.filter(type="LOGIN").count() == 2


def test_consent_page_in_the_browser(setup, base):
    make_client(setup, "consent-app", redirect_uris=[f"{base}/consent-app/cb"], consent_required=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(_auth_url(base, "consent-app", "st-consent"))
            page.get_by_label("Username or email").fill("bob")
            page.get_by_label("Password").fill(PASSWORD)
            page.get_by_role("button", name="Sign in").click()
            page.get_by_role("heading", name="Do you grant these access privileges?").wait_for(timeout=10000)
            assert page.get_by_role("listitem").filter(has_text="User profile").count() == 1
            page.get_by_role("button", name="Yes").click()
            page.wait_for_url(f"{base}/consent-app/cb?**", timeout=10000)
            assert _query(page)["state"] == ["st-consent"] and _query(page)["code"]
        finally:
            browser.close()
    assert Event.objects.filter(type="GRANT_CONSENT").count() == 1


def test_a_script_written_for_keycloaks_login_page_signs_in(setup, base):
    """Selectors as suites written against Keycloak's keycloak.v2 login page use them."""
    setup.remember_me = True
    setup.save()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(_auth_url(base, "web-app", "st-kc"))
            assert page.inner_text("#kc-page-title") == "Sign in to your account"
            assert page.locator("#kc-form-login").count() == 1
            page.fill("#username", "bob")
            page.fill("#password", "not the password")
            page.click("#kc-login")
            assert page.inner_text("#input-error") == "Invalid username or password."
            assert page.get_attribute("#username", "aria-invalid") == "true"
            page.fill("#password", PASSWORD)
            page.check("#rememberMe")
            page.click("#kc-login")
            page.wait_for_url(f"{base}/web-app/cb?**", timeout=10000)
            assert _query(page)["state"] == ["st-kc"] and _query(page)["code"]

            page.goto(f"{base}/realms/acme/protocol/openid-connect/logout")
            page.click("#kc-logout")
            page.wait_for_load_state()
            page.goto(_auth_url(base, "web-app", "st-again"))
            assert page.locator("#kc-form-login").count() == 1  # signed out: the form again
        finally:
            browser.close()
