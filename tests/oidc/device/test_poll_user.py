"""The approved poll takes the user from the SSO session (its copy in the cache or its row), not
from a read of its own: a user disabled after approving gets no tokens because a user's change
drops the session's copy and a disabled user's session ends when it is read."""
from django.core.cache import cache
from django.test import Client as HttpClient

from oidc import jose
from oidc.models import DeviceAuthorization
from realms.models import User
from realms.sso import sessions

from .conftest import authorize, error, poll, sign_in


def test_a_user_disabled_after_the_session_was_copied_gets_no_tokens(http, realm):
    started = authorize(http, realm).json()
    sign_in(HttpClient(), realm, started["user_code"])
    session_id = DeviceAuthorization.objects.get(realm=realm).user_session_id
    assert sessions.get_valid_session(realm, session_id).user.enabled  # now copied, with its user
    assert cache.get(sessions.cache_key(session_id)) is not None
    alice = User.objects.get(realm=realm, username="alice")
    alice.enabled = False
    alice.save()
    assert error(poll(http, realm, started["device_code"])) == (400, "invalid_grant", "Session not active")
    assert not sessions.get_valid_session(realm, session_id)


def test_the_token_names_the_session_s_user(http, realm):
    started = authorize(http, realm).json()
    sign_in(HttpClient(), realm, started["user_code"])
    response = poll(http, realm, started["device_code"])
    assert response.status_code == 200, response.content
    claims = jose.parse(response.json()["access_token"])[1]
    assert claims["sub"] == str(User.objects.get(realm=realm, username="alice").pk)
    assert claims["preferred_username"] == "alice"
