"""The account console and the login theme's locales in headless Chromium (one browser for the
module; phone width): sign in to the console, change the password under the policy (its message
beside the field), sign out another session, revoke a consent, German by kc_locale and
ui_locales, Arabic right to left, and axe-core finding no serious or critical violation."""
from pathlib import Path
from urllib.parse import urlencode

import pytest

from realms.models import Client as ClientModel
from realms.models import ClientScope, RequiredActionProvider, Role, User, UserSession
from realms.representation.services import create_realm
from realms.sso.sessions import create_user_session
from realms.users.accounts import create_user
from tests.browser import chromium  # noqa: F401 (chromium: a fixture)
from tests.oidc.browser.conftest import PASSWORD, make_client
from tests.passwords import holds_password

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
AXE = Path(__file__).resolve().parents[1] / "js" / "node_modules" / "axe-core" / "axe.min.js"


@pytest.fixture
def base(live_server):
    return live_server.url.replace("localhost", "127.0.0.1")


@pytest.fixture
def acme(transactional_db, base, fresh_caches):
    realm = create_realm("acme")
    realm.password_policy = "length(12)"
    realm.internationalization_enabled = True
    realm.supported_locales = ["en", "de", "ar"]
    realm.default_locale = "en"
    realm.save()
    create_user(realm, "bob", password=PASSWORD, email="bob@example.com", first_name="Bob", last_name="B")
    make_client(realm, "web-app", redirect_uris=[f"{base}/web-app/cb"])
    return realm


@pytest.fixture
def page(chromium):
    context = chromium.new_context(viewport={"width": 375, "height": 800})
    yield context.new_page()
    context.close()


def _sign_in_to_console(page, base, path=""):
    page.goto(f"{base}/realms/acme/account/{path}")
    page.locator("#username").fill("bob")
    page.locator("#password").fill(PASSWORD)
    page.locator("#kc-login").click()
    page.locator("#page-title").wait_for(timeout=10000)


def _no_serious_violations(page):
    page.add_script_tag(path=str(AXE))
    result = page.evaluate("async () => (await axe.run(document)).violations"
                           ".map(v => ({id: v.id, impact: v.impact}))")
    assert [v for v in result if v["impact"] in ("serious", "critical")] == []


def _no_horizontal_scroll(page):
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def test_change_the_password_in_the_console_under_the_policy(acme, base, page):
    _sign_in_to_console(page, base, "account-security/signing-in")
    _no_horizontal_scroll(page)
    _no_serious_violations(page)
    page.locator("#password").fill(PASSWORD)
    page.locator("#password-new").fill("short")
    page.locator("#password-confirm").fill("short")
    page.locator("#save-password").click()
    assert page.locator("#input-error-password").inner_text() == "Invalid password: minimum length 12."
    assert page.locator("#password-new").get_attribute("aria-describedby") == "input-error-password"
    page.locator("#password").fill(PASSWORD)
    page.locator("#password-new").fill("a much longer new password")
    page.locator("#password-confirm").fill("a much longer new password")
    page.locator("#save-password").click()
    assert "Your password has been updated." in page.locator("#notice").inner_text()
    assert holds_password(User.objects.get(realm=acme, username="bob"), "a much longer new password")


def test_sign_out_another_session_and_revoke_a_consent(acme, base, page):
    from oidc.models import ConsentGrant

    bob = User.objects.get(realm=acme, username="bob")
    other = create_user_session(acme, bob, ip_address="192.0.2.7")
    app = ClientModel.objects.get(realm=acme, client_id="web-app")
    app.consent_required = True
    app.save()
    ConsentGrant.objects.create(realm=acme, user=bob, client=app,
                                scope_ids=[ClientScope.objects.get(realm=acme, name="profile").pk])
    _sign_in_to_console(page, base, "account-security/device-activity")
    _no_serious_violations(page)
    _no_horizontal_scroll(page)
    assert "192.0.2.7" in page.content()
    page.get_by_role("button", name="Sign out this session").click()
    page.locator("#notice").wait_for()
    assert not UserSession.objects.filter(pk=other.pk).exists()
    assert UserSession.objects.filter(user=bob).count() == 1  # the console's own session lives on

    page.goto(f"{base}/realms/acme/account/applications")
    _no_serious_violations(page)
    assert "User profile" in page.locator("main").inner_text()
    page.get_by_role("button", name="Remove access").click()
    page.locator("#notice").wait_for()
    assert not ConsentGrant.objects.filter(user=bob).exists()

    page.goto(f"{base}/realms/acme/account/")
    _no_serious_violations(page)
    _no_horizontal_scroll(page)


def _login_page(base, **extra):
    query = {"client_id": "web-app", "redirect_uri": f"{base}/web-app/cb", "response_type": "code",
             "scope": "openid", "state": "s", **extra}
    return f"{base}/realms/acme/protocol/openid-connect/auth?{urlencode(query)}"


def _label_edge(page):
    """Which edge of the username field its label's text is aligned with."""
    text, field = page.evaluate("""() => {
        const range = document.createRange();
        range.selectNodeContents(document.querySelector("label[for=username]"));
        const t = range.getBoundingClientRect(), f = document.getElementById("username").getBoundingClientRect();
        return [[t.left, t.right], [f.left, f.right]];
    }""")
    if abs(text[0] - field[0]) <= 1 and text[1] < field[1] - 20:
        return "left"
    if abs(text[1] - field[1]) <= 1 and text[0] > field[0] + 20:
        return "right"
    return f"neither: text {text}, field {field}"


def test_german_by_kc_locale_and_by_ui_locales_and_arabic_right_to_left(acme, base, page):
    page.goto(_login_page(base))
    _no_serious_violations(page)
    _no_horizontal_scroll(page)
    assert page.locator("html").get_attribute("lang") == "en"
    assert _label_edge(page) == "left"
    page.get_by_role("link", name="Deutsch").click()
    assert page.locator("html").get_attribute("lang") == "de"
    assert page.locator("#kc-login").inner_text() == "Anmelden"

    fresh = page.context.browser.new_context().new_page()
    fresh.goto(_login_page(base, ui_locales="de-CH fr"))
    assert fresh.locator("#kc-page-title").inner_text() == "Bei Ihrem Konto anmelden"
    fresh.locator("#username").fill("bob")
    fresh.locator("#password").fill("wrong password")
    fresh.locator("#kc-login").click()
    assert fresh.locator("#input-error").inner_text() == "Ungültiger Benutzername oder Passwort."
    fresh.context.close()

    page.goto(_login_page(base, kc_locale="ar"))
    assert page.locator("html").get_attribute("dir") == "rtl"
    assert page.locator("#kc-login").inner_text() == "تسجيل الدخول"
    assert _label_edge(page) == "right"  # the label starts where the right-to-left field starts
    _no_serious_violations(page)
    _no_horizontal_scroll(page)


def add_totp_device(page, base, label):
    """From the console's signing-in page: set up a one-time-code device, its codes from pyotp."""
    import pyotp

    page.locator("#create-otp").click()
    page.locator("#kc-totp-settings-form").wait_for(timeout=10000)
    app = pyotp.TOTP(page.locator("#kc-totp-secret-key").inner_text().replace(" ", ""))
    page.locator("#totp").fill(app.now())
    page.locator("#userLabel").fill(label)
    page.locator("#saveTOTPBtn").click()
    page.wait_for_url(f"{base}/realms/acme/account/account-security/signing-in", timeout=10000)


def test_set_up_an_authenticator_from_the_console_through_kc_action(acme, base, page):
    _sign_in_to_console(page, base, "account-security/signing-in")
    add_totp_device(page, base, "my phone")  # kc_action=CONFIGURE_TOTP, on the running SSO session
    assert "my phone" in page.locator("#credential-otp").inner_text()
    bob = User.objects.get(realm=acme, username="bob")
    assert [c.user_label for c in bob.credentials.filter(type="otp")] == ["my phone"]
    assert bob.required_actions == []


def test_registration_and_forgot_password_pages_pass_axe_on_a_phone(acme, base, page):
    acme.registration_allowed = acme.reset_password_allowed = True
    acme.save()
    page.goto(f"{base}/realms/acme/protocol/openid-connect/auth?client_id=web-app&response_type=code"
              f"&redirect_uri={base}/web-app/cb&scope=openid&state=s")
    page.locator("#kc-register").click()
    page.locator("#kc-register-form").wait_for(timeout=10000)
    _no_horizontal_scroll(page)
    _no_serious_violations(page)
    page.go_back()
    page.locator("#kc-form-login").wait_for(timeout=10000)
    page.locator("a[href*='reset-credentials']").click()
    page.locator("#username").wait_for(timeout=10000)
    _no_horizontal_scroll(page)
    _no_serious_violations(page)


def test_delete_the_account_from_the_console(acme, base, page):
    action = RequiredActionProvider.objects.get(realm=acme, alias="delete_account")
    action.enabled = True
    action.save()
    bob = User.objects.get(realm=acme, username="bob")
    bob.roles.add(Role.objects.get(client__realm=acme, client__client_id="account", name="delete-account"))
    _sign_in_to_console(page, base)
    page.locator("#delete-account-start").click()
    # A deletion asks for a sign-in made for it, then for confirmation, by the keyboard.
    page.locator("#password").wait_for(timeout=10000)
    assert page.locator("#kc-attempted-username").inner_text() == "bob"  # the user fixed, as Keycloak's
    page.locator("#password").fill(PASSWORD)
    page.keyboard.press("Enter")
    page.locator("#kc-submit").wait_for(timeout=10000)
    assert "This action is irreversible" in page.locator("main").inner_text()
    _no_horizontal_scroll(page)
    _no_serious_violations(page)
    page.locator("#kc-submit").focus()
    page.keyboard.press("Enter")
    page.locator("#kc-info-text").wait_for(timeout=10000)
    assert page.locator("#kc-info-text").inner_text() == "User deleted successfully"
    assert not User.objects.filter(pk=bob.pk).exists()
