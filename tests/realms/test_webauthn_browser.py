"""End to end in headless Chromium with its virtual authenticator (the DevTools protocol's
``WebAuthn.addVirtualAuthenticator``): register a passkey as a required action, sign out, sign in
with the passkey alone; register a security key and pass the 2FA sub-flow with it. The page's
own script (static/v2/webauthn.js) runs the ceremonies; nothing is simulated server-side.

Chromium starts once for the module (the only one driving a virtual authenticator): Playwright's
sync API allows one instance at a time, and the other browser tests open their own. The live
server is pytest-django's, one per run. WebAuthn refuses IP addresses as RP IDs, so these pages
are served as ``localhost``."""
from urllib.parse import parse_qs, urlsplit

import pytest

from realms.models import Credential, User
from realms.representation.services import create_realm
from realms.users.accounts import create_user
from tests.browser import chromium  # noqa: F401 (chromium: a fixture)
from tests.oidc.browser.conftest import PASSWORD, make_client
from tests.oidc.browser.test_browser_playwright import _auth_url

from .test_webauthn import use_flow_with_security_keys

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fresh_caches")]


@pytest.fixture
def base(live_server):
    return live_server.url.replace("127.0.0.1", "localhost")


@pytest.fixture
def page(chromium):
    context = chromium.new_context()
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    cdp.send("WebAuthn.enable", {"enableUI": False})
    authenticator = cdp.send("WebAuthn.addVirtualAuthenticator", {"options": {
        "protocol": "ctap2", "transport": "internal", "hasResidentKey": True, "hasUserVerification": True,
        "isUserVerified": True, "automaticPresenceSimulation": True}})["authenticatorId"]
    yield page
    cdp.send("WebAuthn.removeVirtualAuthenticator", {"authenticatorId": authenticator})
    context.close()


def _sign_in_with_password(page, base, state):
    page.goto(_auth_url(base, "web-app", state))
    page.get_by_label("Username or email").fill("bob")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()


def _signed_in(page, base, state):
    page.wait_for_url(f"{base}/web-app/cb?**", timeout=15000)
    query = parse_qs(urlsplit(page.url).query)
    assert query["state"] == [state] and query["code"]


def _sign_out(page, base):
    page.goto(f"{base}/realms/acme/protocol/openid-connect/logout")
    page.click("#kc-logout")
    page.wait_for_load_state()


def _realm_with_bob(base, action, *, passkeys=False, **policy):
    realm = create_realm("acme")
    realm.passkeys_enabled = passkeys
    realm.webauthn_policy = policy
    realm.save()
    make_client(realm, "web-app", redirect_uris=[f"{base}/web-app/cb"])
    bob = create_user(realm, "bob", password=PASSWORD)
    User.objects.filter(pk=bob.pk).update(required_actions=[action])
    return bob


def test_register_a_passkey_sign_out_and_sign_in_with_it_alone(transactional_db, base, page):
    bob = _realm_with_bob(base, "webauthn-register-passwordless", passkeys=True,
                          webAuthnPolicyPasswordlessRequireResidentKey="Yes",
                          webAuthnPolicyPasswordlessUserVerificationRequirement="required")
    _sign_in_with_password(page, base, "st-register")
    page.locator("#authenticatorLabel").fill("virtual passkey")
    page.click("#registerWebAuthn")
    _signed_in(page, base, "st-register")
    passkey = Credential.objects.get(user=bob, type=Credential.WEBAUTHN_PASSWORDLESS)
    assert passkey.user_label == "virtual passkey" and passkey.credential_data["credentialPublicKey"]

    _sign_out(page, base)
    # The login form asks for passkeys with conditional mediation (the username field's autofill);
    # the virtual authenticator answers such a request at once with its only passkey: no
    # username, no password, no click.
    page.goto(_auth_url(base, "web-app", "st-passkey"))
    _signed_in(page, base, "st-passkey")
    assert bob.sessions.get().auth_methods == [Credential.WEBAUTHN_PASSWORDLESS]


def test_security_key_passes_the_2fa_sub_flow(transactional_db, base, page, monkeypatch):
    use_flow_with_security_keys(monkeypatch)
    bob = _realm_with_bob(base, "webauthn-register")
    _sign_in_with_password(page, base, "st-register-key")
    page.click("#registerWebAuthn")
    _signed_in(page, base, "st-register-key")
    assert Credential.objects.filter(user=bob, type=Credential.WEBAUTHN).count() == 1

    _sign_out(page, base)
    _sign_in_with_password(page, base, "st-2fa")
    page.click("#authenticateWebAuthnButton")  # the 2FA page, after the password
    _signed_in(page, base, "st-2fa")
    assert bob.sessions.get().auth_methods == ["pwd", "webauthn"]
