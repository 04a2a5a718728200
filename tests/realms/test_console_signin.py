"""The console signs in through a realm's browser flow, as a client of that realm (Keycloak's
``security-admin-console``; docs/decisions/0063): no password form of its own, a safe way back
into the console, the realm's brute-force detection and SSO session, sign-out of both sessions.
Second factors and required actions in Chromium: test_console_signin_browser.py."""
from datetime import timedelta

import pytest
from django.conf import settings
from django.core.cache import cache
from django.test import Client as HttpClient
from django.utils import timezone

from realms.models import Client, ClientSession, Event, Realm, Role, User, UserSession
from realms.representation.services import create_realm
from realms.signin import engine
from realms.sso import sessions, sso_cookie
from realms.users.accounts import create_user
from tests.browser import CONSOLE, console_sign_in, login_form_action
from tests.oidc.browser.conftest import PASSWORD, make_client

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_caches")]


@pytest.fixture
def master():
    master = Realm.objects.get(name="master")
    master.events_enabled = True
    master.save()
    return master


@pytest.fixture
def root(master):
    admin = create_user(master, "root", password=PASSWORD)
    admin.roles.add(Role.objects.get(realm=master, client=None, name="admin"))
    return admin


@pytest.fixture
def acme():
    acme = create_realm("acme")
    acme.events_enabled = True
    acme.save()
    return acme


def realm_admin(realm, username):
    user = create_user(realm, username, password=PASSWORD)
    user.roles.add(Role.objects.get(realm=realm, client__client_id="realm-management", name="realm-admin"))
    return user


def events(realm, kind):
    return list(Event.objects.filter(realm=realm, type=kind).order_by("time"))


def signed_in_as(http):
    return http.session.get("_auth_user_id")


# --- Where the console sends a browser ---------------------------------------------------------------

def test_the_console_sends_a_browser_to_the_realms_login_page(root):
    http = HttpClient()
    assert http.get(CONSOLE)["Location"] == f"{CONSOLE}login/?next={CONSOLE}"
    start = http.get(f"{CONSOLE}login/", {"next": f"{CONSOLE}realms/realm/"})
    assert start.status_code == 302
    assert start["Location"] == "/realms/master/console-sign-in?next=%2Fadmin%2Fmaster%2Fconsole%2Frealms%2Frealm%2F"
    page = http.get(start["Location"])
    assert page.status_code == 200 and 'id="kc-form-login"' in page.content.decode()
    assert login_form_action(page.content.decode()).startswith("/realms/master/login-actions/authenticate?")
    assert http.get(f"{CONSOLE}login/", {"realm": "acme-of-nobody"}, follow=True).status_code == 404


def test_the_console_has_no_password_form(root):
    http = HttpClient()
    assert http.post(f"{CONSOLE}login/", {"username": "root", "password": PASSWORD}).status_code == 405
    assert signed_in_as(http) is None
    assert not http.login(username="root", password=PASSWORD)  # no back end checks a password


def test_a_sign_in_lands_on_the_console_page_asked_for_and_is_recorded(master, root):
    http = HttpClient()
    answer = console_sign_in(http, "ROOT", PASSWORD, next_path=f"{CONSOLE}realms/realm/")
    assert answer.status_code == 302 and answer["Location"] == f"{CONSOLE}realms/realm/"
    assert signed_in_as(http) == root.pk
    assert http.get(f"{CONSOLE}realms/realm/").status_code == 200
    (login,) = events(master, "LOGIN")
    assert (login.client_id, login.user_id, login.ip_address) == ("security-admin-console", root.pk, "127.0.0.1")
    # The realm's SSO session, with the console's client session in it, and its cookie.
    user_session = UserSession.objects.get(user=root)
    assert login.session_id == user_session.pk
    assert ClientSession.objects.filter(user_session=user_session, client__client_id="security-admin-console").exists()
    assert answer.cookies[sso_cookie.COOKIE]["path"] == "/realms/master/"


@pytest.mark.parametrize("next_path", ["https://evil.example/", "//evil.example/", "/\\evil.example/",
                                       "/accounts/profile/", "/realms/master/account/", "", "javascript:alert(1)"])
def test_a_next_outside_the_console_lands_on_the_console_index(root, next_path):
    http = HttpClient()
    start = http.get(f"{CONSOLE}login/", {"next": next_path})
    assert start["Location"] == "/realms/master/console-sign-in?next=%2Fadmin%2Fmaster%2Fconsole%2F"
    # Also when the sign-in is started by hand with that next.
    page = http.get("/realms/master/console-sign-in", {"next": next_path})
    answer = http.post(login_form_action(page.content.decode()), {"username": "root", "password": PASSWORD})
    assert answer.status_code == 302 and answer["Location"] == CONSOLE
    assert http.get(CONSOLE).status_code == 200


def test_a_wrong_password_shows_the_login_page_again(master, root):
    http = HttpClient()
    answer = console_sign_in(http, "root", "wrong")
    assert answer.status_code == 200 and "Invalid username or password." in answer.content.decode()
    assert signed_in_as(http) is None
    (error,) = events(master, "LOGIN_ERROR")
    assert (error.error, error.client_id, error.user_id) == ("invalid_user_credentials", "security-admin-console", root.pk)


def test_a_disabled_admin_cannot_sign_in(master, root):
    User.objects.filter(pk=root.pk).update(enabled=False)
    http = HttpClient()
    answer = console_sign_in(http, "root", PASSWORD)
    assert answer.status_code == 200 and "Invalid username or password." in answer.content.decode()
    assert signed_in_as(http) is None and [e.error for e in events(master, "LOGIN_ERROR")] == ["user_disabled"]


# --- The realm's brute-force detection ----------------------------------------------------------

@pytest.fixture
def locking(master):
    master.brute_force_protected = True
    master.failure_factor = 3
    master.quick_login_check_milli_seconds = 0  # count to the failure factor, no quick-login wait
    master.save()
    return master


def test_the_realms_brute_force_detection_locks_the_admin(locking, root):
    http = HttpClient()
    for _ in range(3):
        assert console_sign_in(http, "root", "wrong").status_code == 200
    refused = console_sign_in(http, "root", PASSWORD)
    assert refused.status_code == 200 and signed_in_as(http) is None
    assert [e.error for e in events(locking, "LOGIN_ERROR")] == ["invalid_user_credentials"] * 3 + [
        "user_temporarily_disabled"]
    assert {e.client_id for e in events(locking, "LOGIN_ERROR")} == {"security-admin-console"}


def test_an_admin_locked_by_password_grants_stays_locked_in_the_console(locking, root):
    make_client(locking, "cli", direct_access_grants_enabled=True)
    http = HttpClient()
    for _ in range(3):
        http.post("/realms/master/protocol/openid-connect/token", {
            "grant_type": "password", "username": "root", "password": "wrong", "client_id": "cli",
            "client_secret": "secret-of-cli"})
    assert console_sign_in(http, "root", PASSWORD).status_code == 200 and signed_in_as(http) is None


# --- A realm's own admins, and who administers nothing -----------------------------------------

def test_a_realms_own_admin_signs_in_through_their_realm(master, acme, root):
    admin = realm_admin(acme, "acme-admin")
    http = HttpClient()
    assert console_sign_in(http, "acme-admin", PASSWORD).status_code == 200  # not a master user: the form again
    answer = console_sign_in(http, "acme-admin", PASSWORD, realm="acme")
    assert answer["Location"] == CONSOLE and signed_in_as(http) == admin.pk
    assert len(events(acme, "LOGIN")) == 1 and not events(master, "LOGIN")
    assert UserSession.objects.get(user=admin).realm == acme
    page = http.get(f"{CONSOLE}realms/realm/").content.decode()
    assert f"/realms/realm/{acme.pk}/change/" in page and f"/realms/realm/{master.pk}/change/" not in page
    # The master admin's name in acme is nobody there.
    assert console_sign_in(HttpClient(), "root", PASSWORD, realm="acme").status_code == 200


def test_a_user_who_administers_nothing_gets_a_page_that_says_so(acme):
    create_user(acme, "plain", password=PASSWORD)
    http = HttpClient()
    answer = console_sign_in(http, "plain", PASSWORD, realm="acme")
    assert answer["Location"] == CONSOLE
    page = http.get(CONSOLE, follow=True)
    assert page.status_code == 403 and page.redirect_chain == [(f"{CONSOLE}login/?next={CONSOLE}", 302)]
    text = page.content.decode()
    assert "<strong>plain</strong>" in text and "administers no realm" in text and 'id="console-sign-out"' in text
    out = http.post(f"{CONSOLE}logout/")
    assert out["Location"] == f"{CONSOLE}login/?realm=acme" and signed_in_as(http) is None
    assert not UserSession.objects.filter(realm=acme).exists()


# --- One SSO session per realm, ended with the console's sign-out ------------------------------------

def test_the_realms_sso_session_signs_in_to_the_console_without_a_password(master, root):
    http = HttpClient()
    console_sign_in(http, "root", PASSWORD)
    del http.cookies[settings.SESSION_COOKIE_NAME]  # the console's session only: the realm's SSO cookie stays
    again = http.get(f"{CONSOLE}login/", follow=True)
    assert again.redirect_chain[-1][0] == CONSOLE and signed_in_as(http) == root.pk
    assert UserSession.objects.filter(user=root).count() == 1 and len(events(master, "LOGIN")) == 2


def test_sign_out_ends_the_console_session_and_the_sso_session(master, root):
    http = HttpClient()
    console_sign_in(http, "root", PASSWORD)
    user_session = UserSession.objects.get(user=root)
    out = http.post(f"{CONSOLE}logout/")
    assert out.status_code == 302 and out["Location"] == f"{CONSOLE}login/"
    assert signed_in_as(http) is None and not UserSession.objects.filter(pk=user_session.pk).exists()
    assert out.cookies[sso_cookie.COOKIE].value == "" and out.cookies[sso_cookie.COOKIE]["path"] == "/realms/master/"
    (logout,) = events(master, "LOGOUT")
    assert (logout.user_id, logout.session_id, logout.client_id) == (root.pk, user_session.pk, "security-admin-console")
    # The password is asked for again.
    page = http.get(f"{CONSOLE}login/", follow=True)
    assert page.status_code == 200 and 'id="kc-form-login"' in page.content.decode()


def test_the_console_session_lasts_as_long_as_the_sso_session(root):
    http = HttpClient()
    console_sign_in(http, "root", PASSWORD)
    user_session = UserSession.objects.get(user=root)
    # Using the console resets the SSO session's idle timer.
    earlier = timezone.now() - timedelta(minutes=5)
    UserSession.objects.filter(pk=user_session.pk).update(last_refresh=earlier)
    cache.clear()  # the session's cached copy
    assert http.get(CONSOLE).status_code == 200
    assert UserSession.objects.get(pk=user_session.pk).last_refresh > earlier
    # Ended elsewhere (a sign-out, the Admin API's): the console asks to sign in again.
    sessions.end_session(user_session)
    answer = http.get(CONSOLE)
    assert answer.status_code == 302 and answer["Location"] == f"{CONSOLE}login/?next={CONSOLE}"
    assert signed_in_as(http) is None
    assert http.get(answer["Location"])["Location"].startswith("/realms/master/console-sign-in?")


def test_sign_out_is_a_post(root):
    http = HttpClient()
    console_sign_in(http, "root", PASSWORD)
    assert http.get(f"{CONSOLE}logout/").status_code == 405
    assert signed_in_as(http) == root.pk


# --- The realm's console client --------------------------------------------------------------

def test_a_disabled_console_client_refuses_the_sign_in(master, root):
    Client.objects.filter(realm=master, client_id="security-admin-console").update(enabled=False)
    http = HttpClient()
    page = http.get(f"{CONSOLE}login/", follow=True)
    assert page.status_code == 400 and "Client disabled." in page.content.decode()
    assert signed_in_as(http) is None


def test_the_console_is_no_protocol_clients_speak():
    assert "console" not in engine.provider_ids()["login-protocol"]
    assert "openid-connect" in engine.provider_ids()["login-protocol"]


def test_the_console_clients_flow_override_applies_and_a_failed_sign_in_says_so(master, root):
    Client.objects.filter(realm=master, client_id="security-admin-console").update(
        authentication_flow_binding_overrides={"browser": "no-such-flow"})
    http = HttpClient()
    page = http.get(f"{CONSOLE}login/", {"next": f"{CONSOLE}realms/realm/"}, follow=True)
    text = page.content.decode()
    assert page.status_code == 400 and "An error occurred, please login again through your application." in text
    assert f'href="{CONSOLE}realms/realm/"' in text  # back to the console, which starts again
    assert [e.error for e in events(master, "LOGIN_ERROR")] == ["flow_not_found"]
    assert signed_in_as(http) is None
