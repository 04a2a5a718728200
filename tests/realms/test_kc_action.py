"""Application-initiated actions (Keycloak's ``kc_action``): an authorization request may ask
for one registered required action; it runs after sign-in on the running SSO session, but only
when that sign-in is at most five minutes old (else the user signs in again first)."""
import re
from datetime import timedelta

import pytest
from django.test import Client as HttpClient
from django.utils import timezone

from realms.models import UserSession
from tests.passwords import holds_password
from tests.realms.test_signin import PARAMS, redirect_query, sign_in

pytestmark = pytest.mark.django_db
AUTH = "/realms/acme/protocol/openid-connect/auth"


@pytest.fixture
def signed_in(realm, web_app, bob, fresh_caches):
    http = HttpClient()
    redirect_query(sign_in(http, "bob", "correct horse battery staple"))
    return http


def test_kc_action_shows_the_action_on_the_running_session(signed_in):
    page = signed_in.get(AUTH, {**PARAMS, "kc_action": "CONFIGURE_TOTP"})
    assert page.status_code == 200 and 'id="kc-totp-settings-form"' in page.content.decode()


def test_an_old_sign_in_must_be_repeated_first(signed_in, bob):
    UserSession.objects.filter(user=bob).update(auth_time=timezone.now() - timedelta(seconds=301))
    from django.core.cache import cache
    cache.clear()  # the cached session holds the old auth_time too
    page = signed_in.get(AUTH, {**PARAMS, "kc_action": "UPDATE_PASSWORD"})
    text = page.content.decode()
    assert page.status_code == 200 and 'id="kc-form-login"' in text
    action = re.search(r'action="([^"]+)"', text).group(1).replace("&amp;", "&")
    page = signed_in.post(action, {"username": "bob", "password": "correct horse battery staple"})
    assert 'id="kc-passwd-update-form"' in page.content.decode()


def test_an_unknown_action_is_ignored(signed_in):
    assert signed_in.get(AUTH, {**PARAMS, "kc_action": "NO_SUCH_ACTION"}).status_code == 302


def test_the_password_policys_max_auth_age_sets_the_window_of_a_new_password(signed_in, realm, bob):
    realm.password_policy = "maxAuthAge(60)"
    realm.save()
    UserSession.objects.filter(user=bob).update(auth_time=timezone.now() - timedelta(seconds=61))
    from django.core.cache import cache
    cache.clear()
    assert 'id="kc-form-login"' in signed_in.get(AUTH, {**PARAMS, "kc_action": "UPDATE_PASSWORD"}).content.decode()
    # Another action keeps Keycloak's five minutes.
    assert 'id="kc-totp-settings-form"' in signed_in.get(
        AUTH, {**PARAMS, "kc_action": "CONFIGURE_TOTP"}).content.decode()


def test_the_application_learns_the_action_succeeded(signed_in, bob):
    page = signed_in.get(AUTH, {**PARAMS, "kc_action": "UPDATE_PASSWORD"})
    action = re.search(r'action="([^"]+)"', page.content.decode()).group(1).replace("&amp;", "&")
    query = redirect_query(signed_in.post(action, {"password-new": "another long password", "password-confirm":
                                                   "another long password"}))
    assert query["kc_action"] == ["UPDATE_PASSWORD"] and query["kc_action_status"] == ["success"]
    bob.refresh_from_db()
    assert holds_password(bob, "another long password")
    # A plain sign-in afterwards says nothing about actions.
    assert "kc_action_status" not in redirect_query(signed_in.get(AUTH, PARAMS))
