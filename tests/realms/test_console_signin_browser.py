"""In headless Chromium, as an admin signs in: the console sends the browser to its realm's login
page, and whatever that realm's flow asks (a one-time code, a new password) is asked of admins too
(docs/decisions/0063). Every form is submitted with Enter."""
import time

import pytest

from realms.models import Realm, Role, UserSession
from realms.representation.services import create_realm
from realms.users.accounts import create_user
from tests.browser import CONSOLE, chromium, sign_in_to_console  # noqa: F401 (chromium: a fixture)
from tests.oidc.browser.conftest import PASSWORD

from .test_otp import add_otp, app_totp

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fresh_caches")]

NEW_PASSWORD = "a new and longer passphrase"
FITS = "document.documentElement.scrollWidth <= window.innerWidth"


@pytest.fixture
def page(chromium):
    context = chromium.new_context()  # a browser of its own: no cookies from another test
    page = context.new_page()
    page.set_default_timeout(15000)
    yield page
    context.close()


@pytest.fixture
def base(live_server):
    return live_server.url


@pytest.fixture
def root(transactional_db):
    master = Realm.objects.get(name="master")
    admin = create_user(master, "root", password=PASSWORD)
    admin.roles.add(Role.objects.get(realm=master, client=None, name="admin"))
    return admin


def test_an_admin_with_a_one_time_code_signs_in_to_the_console(page, base, root):
    add_otp(root)
    sign_in_to_console(page, base, "root", PASSWORD, next_path=None)
    page.locator("#kc-otp-login-form").wait_for()
    # A wrong code is refused with the flow's message; the code is asked for again.
    page.locator("#otp").fill(app_totp().at(time.time() - 3600))
    page.locator("#otp").press("Enter")
    assert page.locator("#input-error-otp-code").inner_text() == "Invalid authenticator code."
    assert not page.url.startswith(f"{base}{CONSOLE}")
    page.locator("#otp").fill(app_totp().now())
    page.locator("#otp").press("Enter")
    page.wait_for_url(f"{base}{CONSOLE}")
    assert page.locator("h1").first.inner_text() == "Realms and what they own"


def test_an_admin_who_must_update_the_password_is_asked_to(page, base, root):
    root.required_actions = ["UPDATE_PASSWORD"]
    root.save(update_fields=["required_actions"])
    sign_in_to_console(page, base, "root", PASSWORD, next_path=None)
    page.locator("#kc-passwd-update-form").wait_for()
    page.locator("#password-new").fill(NEW_PASSWORD)
    page.locator("#password-confirm").fill(NEW_PASSWORD)
    page.locator("#password-confirm").press("Enter")
    page.wait_for_url(f"{base}{CONSOLE}")
    root.refresh_from_db()
    assert root.required_actions == []
    # Signed out, the new password is the one that signs in.
    page.locator("#logout-form button").click()
    page.locator("#kc-form-login").wait_for()
    sign_in_to_console(page, base, "root", NEW_PASSWORD)


def test_a_realms_own_admin_signs_in_through_their_realm(page, base, transactional_db):
    acme = create_realm("acme")
    admin = create_user(acme, "acme-admin", password=PASSWORD)
    admin.roles.add(Role.objects.get(realm=acme, client__client_id="realm-management", name="realm-admin"))
    sign_in_to_console(page, base, "acme-admin", PASSWORD, realm="acme", next_path=f"{CONSOLE}realms/realm/")
    assert page.locator("#result_list th.field-name a").all_inner_texts() == ["acme"]
    assert UserSession.objects.get(user=admin).realm_id == acme.pk


def test_the_realms_brute_force_detection_locks_an_admin_out(page, base, root):
    master = root.realm
    master.brute_force_protected, master.failure_factor, master.quick_login_check_milli_seconds = True, 2, 0
    master.save()
    for password in ("wrong", "wrong", PASSWORD):
        sign_in_to_console(page, base, "root", password, next_path=None)
        page.locator("#input-error-username").wait_for()
        assert page.locator("#input-error-username").inner_text() == "Invalid username or password."
    assert not page.url.startswith(f"{base}{CONSOLE}")


def test_sign_out_asks_for_the_password_again(page, base, root):
    sign_in_to_console(page, base, "root", PASSWORD)
    page.locator("#logout-form button").focus()
    page.keyboard.press("Enter")
    page.locator("#kc-form-login").wait_for()
    assert not UserSession.objects.filter(user=root).exists()
    page.goto(f"{base}{CONSOLE}")
    page.locator("#kc-form-login").wait_for()  # no SSO session answers any more


def test_at_phone_width_someone_who_administers_nothing_reads_why_and_signs_out(chromium, base, transactional_db):
    create_user(Realm.objects.get(name="master"), "plain", password=PASSWORD)
    context = chromium.new_context(viewport={"width": 390, "height": 844})
    try:
        page = context.new_page()
        page.set_default_timeout(15000)
        page.goto(f"{base}{CONSOLE}")
        page.locator("#kc-form-login").wait_for()
        assert page.evaluate(FITS)
        page.locator("#username").fill("plain")
        page.keyboard.press("Tab")
        page.keyboard.type(PASSWORD)
        page.keyboard.press("Enter")
        page.locator("#console-no-access").wait_for()
        assert "signed in as plain of the realm master, who administers no realm" in page.locator(
            "#console-no-access").inner_text()
        assert page.evaluate(FITS)
        page.locator("#console-sign-out").focus()
        page.keyboard.press("Enter")
        page.locator("#kc-form-login").wait_for()
    finally:
        context.close()
