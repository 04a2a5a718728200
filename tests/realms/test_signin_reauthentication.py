"""Re-authentication (prompt=login, max_age) with an SSO session: as Keycloak's, the login page
shows the session's user fixed with "Restart login" and asks only their password; a username
posted with it changes nothing."""
import re
from html import unescape

import pytest
from django.test import Client as HttpClient

from realms.users.accounts import create_user
from tests.oidc.browser.conftest import PASSWORD
from tests.realms.test_signin import AUTH, PARAMS, redirect_query, sign_in

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_caches")]


def action_of(page):
    return unescape(re.search(r'action="([^"]+)"', page).group(1))


def test_prompt_login_shows_the_known_user_and_asks_their_password(realm, web_app, bob):
    create_user(realm, "mallory", password="mallorys own password")
    browser = HttpClient()
    redirect_query(sign_in(browser, "bob", PASSWORD))
    page = browser.get(AUTH, {**PARAMS, "prompt": "login"}).content.decode()
    assert '<span id="kc-attempted-username">bob</span>' in page
    assert 'id="reset-login"' in page and "Restart login" in page and "Please re-authenticate to continue" in page
    assert 'name="username"' not in page and 'id="password"' in page
    # A wrong password is said beside the password field.
    wrong = browser.post(action_of(page), {"password": "not it"})
    assert wrong.status_code == 200 and 'id="input-error-password"' in wrong.content.decode()
    # Another user's username and password do not sign in as them: the password is bob's to give.
    other = browser.post(action_of(page), {"username": "mallory", "password": "mallorys own password"})
    assert other.status_code == 200 and '<span id="kc-attempted-username">bob</span>' in other.content.decode()
    done = browser.post(action_of(page), {"password": PASSWORD})
    assert "code" in redirect_query(done)


def test_without_a_session_the_form_asks_the_username(realm, web_app, bob):
    page = HttpClient().get(AUTH, {**PARAMS, "prompt": "login"}).content.decode()
    assert 'name="username"' in page and "kc-attempted-username" not in page


def test_restart_login_asks_for_any_user_who_then_replaces_the_session(realm, web_app, bob):
    create_user(realm, "carol", password="carols own password")
    browser = HttpClient()
    redirect_query(sign_in(browser, "bob", PASSWORD))
    page = browser.get(AUTH, {**PARAMS, "prompt": "login"}).content.decode()
    restart = unescape(re.search(r'id="reset-login" href="([^"]+)"', page).group(1))
    fresh = browser.get(restart).content.decode()
    assert 'name="username"' in fresh and "kc-attempted-username" not in fresh
    assert "code" in redirect_query(browser.post(action_of(fresh), {"username": "carol",
                                                                    "password": "carols own password"}))
