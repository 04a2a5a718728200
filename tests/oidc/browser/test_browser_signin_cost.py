"""What one sign-in costs the server (docs/decisions/0011-sign-in-cpu-budget.md): once the realm
configuration is cached, the login POST reads only the user and the password credential and
writes the SSO session, the client session and the code (no Event row while Save events is
off); the authentication session is written once per page shown and never for an answer given
at once; the cached configuration still sees a client disabled mid-sign-in."""
import re

import pytest
from django.contrib.auth.hashers import make_password
from django.db import connection
from django.test import Client as HttpClient
from django.test.utils import CaptureQueriesContext

from realms.models import Credential, User, UserSession
from realms.sso import auth_sessions
from realms.users import storage
from realms.users.accounts import enable_service_account
from tests.oidc.browser.conftest import PASSWORD
from tests.passwords import holds_password

AUTH = "/realms/acme/protocol/openid-connect/auth"
PARAMS = {"client_id": "web-app", "redirect_uri": "https://app.example/cb", "response_type": "code",
          "scope": "openid", "state": "st"}


def _action(page):
    return re.search(r'action="([^"]+)"', page.content.decode()).group(1).replace("&amp;", "&")


class RecordingCache:
    """The real cache, with the calls the authentication sessions make written down."""

    def __init__(self, real):
        self.real, self.calls = real, []

    def __getattr__(self, name):
        method = getattr(self.real, name)
        if name not in ("get", "set", "set_many", "delete"):
            return method

        def recorded(key, *args, **kwargs):
            keys = key if name == "set_many" else [key]
            self.calls.append((name, *(k.split(":")[1] for k in keys)))
            return method(key, *args, **kwargs)

        return recorded


@pytest.fixture
def recorded(monkeypatch):
    cache = RecordingCache(auth_sessions.cache)
    monkeypatch.setattr(auth_sessions, "cache", cache)
    return cache.calls


@pytest.mark.postgresql
def test_login_post_reads_the_user_and_credential_and_writes_three_rows(client, realm, client_app,
                                                                         user_with_password):
    # A first sign-in caches the realm's configuration (and what event listeners cache).
    first = client.get(AUTH, PARAMS)
    assert client.post(_action(first), {"username": "bob", "password": PASSWORD}).status_code == 302
    browser = HttpClient()
    page = browser.get(AUTH, PARAMS)
    with CaptureQueriesContext(connection) as queries:
        response = browser.post(_action(page), {"username": "bob", "password": PASSWORD})
    assert response.status_code == 302 and "code=" in response["Location"]
    # The three rows sent together, in one query (``realms.data.rows.batch``).
    sent = [q["sql"] for q in queries.captured_queries if not q["sql"].startswith(("SAVEPOINT", "RELEASE"))]
    statements = [[s.split(" (")[0].split(" WHERE")[0] for s in sql.split(";\n")] for sql in sent]
    assert [[s.split()[0] for s in query] for query in statements] == [
        ["SELECT"], ["SELECT"], ["INSERT", "INSERT", "INSERT"]], statements
    assert "realms_user" in statements[0][0] and "realms_credential" in statements[1][0]
    assert [s.split()[2].strip('"') for s in statements[2]] == [
        "realms_usersession", "realms_clientsession", "oidc_authorizationcode"]


def test_authentication_session_is_written_once_per_page_and_never_for_an_sso_answer(
        client, realm, client_app, user_with_password, recorded):
    # Each save also marks the browser's root id live (a root id the server does not hold is
    # replaced), in the same round trip.
    page = client.get(AUTH, PARAMS)
    assert recorded == [("set_many", "authsess", "authroot")]
    recorded.clear()
    client.post(_action(page), {"username": "bob", "password": "wrong"})  # the form again
    assert recorded == [("get", "authsess"), ("set_many", "authsess", "authroot")]
    recorded.clear()
    response = client.post(_action(page), {"username": "bob", "password": PASSWORD})
    assert response.status_code == 302
    assert recorded == [("get", "authsess"), ("delete", "authsess")]
    recorded.clear()
    answered = client.get(AUTH, {**PARAMS, "state": "sso"})  # from the SSO cookie, no page
    assert answered.status_code == 302 and "code=" in answered["Location"]
    assert recorded == []


def test_client_disabled_during_the_sign_in_ends_it(client, realm, client_app, user_with_password):
    page = client.get(AUTH, PARAMS)
    client_app.enabled = False
    client_app.save()
    response = client.post(_action(page), {"username": "bob", "password": PASSWORD})
    assert response.status_code == 400 and "expired" in response.content.decode()
    assert not UserSession.objects.exists()


def test_username_is_matched_without_regard_to_case(client, realm, client_app, user_with_password):
    page = client.get(AUTH, PARAMS)
    response = client.post(_action(page), {"username": "BoB", "password": PASSWORD})
    assert response.status_code == 302 and UserSession.objects.get().user_id == user_with_password.pk


def test_service_account_cannot_sign_in_with_the_form(client, realm, client_app):
    account = enable_service_account(client_app)
    storage.set_password(account.realm, account, PASSWORD)
    page = client.get(AUTH, PARAMS)
    response = client.post(_action(page), {"username": account.username, "password": PASSWORD})
    assert response.status_code == 200 and "Invalid username or password." in response.content.decode()
    assert not UserSession.objects.exists()


def test_password_credential_of_highest_priority_counts(realm, user_with_password):
    current = user_with_password.password_credential()
    Credential.objects.create(user=user_with_password, type=Credential.PASSWORD, priority=current.priority - 1,
                              secret_data=make_password("another password"))
    user = User.objects.get(pk=user_with_password.pk)
    assert user.password_credential().pk == current.pk and holds_password(user, PASSWORD)
    Credential.objects.filter(pk=current.pk).update(priority=current.priority - 2)
    user = User.objects.get(pk=user_with_password.pk)  # rows are read once per instance (one sign-in)
    assert user.password_credential().pk != current.pk and not holds_password(user, PASSWORD)
