"""The account console's pages for a browser with an SSO session: the profile form, CSRF on
every form, the account roles read from the database, and only the user's own sessions."""
import re

import pytest
from django.test import Client as HttpClient

from realms.models import Credential, Event, Role, UserSession
from realms.sso.sessions import create_user_session
from realms.users.accounts import create_user
from tests.realms.test_signin import redirect_query, sign_in

pytestmark = pytest.mark.django_db
PASSWORD = "correct horse battery staple"
CONSOLE = "/realms/acme/account/"


def _signed_in():
    browser = HttpClient()
    redirect_query(sign_in(browser, "bob", PASSWORD))
    http = HttpClient(enforce_csrf_checks=True)  # the console's forms, checked as a browser's
    http.cookies = browser.cookies
    return http


def _csrf(page):
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode()).group(1)


@pytest.fixture
def http(realm, web_app, bob, fresh_caches):
    return _signed_in()


def test_personal_info_shows_and_changes_the_profile(http, bob):
    page = http.get(CONSOLE)
    text = page.content.decode()
    assert page.status_code == 200 and 'value="bob@example.com"' in text and '<main id="main"' in text
    assert 'id="username"' in text and "readonly" in text.split('id="username"')[1].split(">")[0]
    resp = http.post(CONSOLE, {"csrfmiddlewaretoken": _csrf(page), "email": "bob@example.org", "firstName": "Bob",
                               "lastName": "Brown"})
    assert resp.status_code == 302 and resp["Location"].endswith("?notice=accountUpdatedMessage")
    bob.refresh_from_db()
    assert (bob.email, bob.last_name) == ("bob@example.org", "Brown")
    assert Event.objects.filter(type="UPDATE_PROFILE", user_id=bob.pk).exists()


def test_a_bad_value_is_shown_next_to_its_field(http):
    page = http.get(CONSOLE)
    resp = http.post(CONSOLE, {"csrfmiddlewaretoken": _csrf(page), "email": "not-an-address", "firstName": "B",
                               "lastName": "B"})
    text = resp.content.decode()
    assert resp.status_code == 400 and 'id="input-error-email"' in text and "Invalid email address." in text


def test_forms_without_the_csrf_token_are_refused(http, bob):
    assert http.post(CONSOLE, {"email": "x@example.org", "firstName": "B", "lastName": "B"}).status_code == 403
    bob.refresh_from_db()
    assert bob.email == "bob@example.com"


def test_a_user_without_the_account_roles_is_refused(http, realm):
    default = Role.objects.get(realm=realm, client=None, name=f"default-roles-{realm.name}")
    default.composites.remove(*Role.objects.filter(client__realm=realm, client__client_id="account"))
    assert http.get(CONSOLE).status_code == 403


def test_signing_in_offers_passkeys_and_security_keys_when_the_realm_uses_them(http, realm, bob):
    from realms.models import AuthenticationExecution

    page = http.get(CONSOLE + "account-security/signing-in").content.decode()
    assert 'id="credential-password"' in page and 'id="create-otp"' in page
    assert 'id="credential-webauthn' not in page and 'id="credential-recovery-authn-codes"' not in page
    step = AuthenticationExecution.objects.get(realm=realm, authenticator="webauthn-authenticator",
                                               flow__alias="Browser - Conditional 2FA")
    step.requirement = "ALTERNATIVE"
    step.save()
    realm.passkeys_enabled = True
    realm.save()
    page = http.get(CONSOLE + "account-security/signing-in").content.decode()
    for kind, action in (("webauthn", "webauthn-register"),
                         ("webauthn-passwordless", "webauthn-register-passwordless")):
        link = re.search(rf'href="([^"]+)" id="create-{kind}"', page).group(1)
        assert f"kc_action={action}" in link.replace("&amp;", "&"), link
        setup = http.get(link.replace("&amp;", "&").replace("http://testserver", ""), follow=True)
        assert 'id="registerWebAuthn"' in setup.content.decode()  # the action's page, on the SSO session
    assert "Use your Passkey for passwordless sign in." in page
    key = Credential.objects.create(user=bob, type="webauthn", user_label="blue key", secret_data="{}",
                                    credential_data={})
    page = http.get(CONSOLE + "account-security/signing-in")
    assert "blue key" in page.content.decode()
    http.post(CONSOLE + "account-security/signing-in", {"csrfmiddlewaretoken": _csrf(page), "remove": key.pk})
    assert not Credential.objects.filter(pk=key.pk).exists()
    assert Event.objects.filter(type="REMOVE_CREDENTIAL", user_id=bob.pk).exists()


def test_device_activity_signs_out_only_the_users_own_sessions(http, realm, bob):
    other = create_user_session(realm, bob)
    carol = create_user(realm, "carol")
    hers = create_user_session(realm, carol)
    page = http.get(CONSOLE + "account-security/device-activity")
    assert page.status_code == 200
    http.post(CONSOLE + "account-security/device-activity", {"csrfmiddlewaretoken": _csrf(page), "session": hers.pk})
    assert UserSession.objects.filter(pk=hers.pk).exists() and UserSession.objects.filter(pk=other.pk).exists()
    http.post(CONSOLE + "account-security/device-activity", {"csrfmiddlewaretoken": _csrf(page), "session": "others"})
    assert not UserSession.objects.filter(pk=other.pk).exists()  # the console's own session stays
    assert UserSession.objects.filter(user=bob).count() == 1 and UserSession.objects.filter(pk=hers.pk).exists()


def test_the_console_page_of_a_json_caller_is_the_api(http):
    assert http.get(CONSOLE, HTTP_ACCEPT="application/json").status_code == 401  # no bearer token


def test_without_a_session_the_console_sends_the_browser_to_sign_in_and_back(realm, fresh_caches):
    resp = HttpClient().get(CONSOLE + "groups")
    assert resp.status_code == 302 and "client_id=account" in resp["Location"]
    assert "redirect_uri=http%3A%2F%2Ftestserver%2Frealms%2Facme%2Faccount%2Fgroups" in resp["Location"]
    assert "code_challenge_method=S256" in resp["Location"]
    assert HttpClient().get("/realms/acme/account").status_code == 302
