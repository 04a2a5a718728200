"""The realm's ``accessCodeLifespanUserAction`` (Keycloak's "Login action timeout"): once the user
is identified, a required action's page must be answered within it, however long the login
timeout (``accessCodeLifespanLogin``) still runs; a late answer gets the expired page."""
from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from tests.oidc.browser.test_browser_authorize import _action, _params, _query, _sign_in


@pytest.fixture
def pending_update(realm, user_with_password):
    realm.access_code_lifespan_user_action = 60
    realm.access_code_lifespan_login = 1800
    realm.save()
    user_with_password.required_actions = ["UPDATE_PASSWORD"]
    user_with_password.save()


NEW = {"password-new": "brand new pw", "password-confirm": "brand new pw"}


def test_a_required_action_answered_after_the_action_timeout_is_expired(client, client_app, pending_update):
    page = _sign_in(client, _params())
    assert b'name="password-new"' in page.content
    with time_machine.travel(timezone.now() + timedelta(seconds=90), tick=False):
        late = client.post(_action(page), NEW)
    assert late.status_code == 400 and "expired" in late.content.decode()


def test_a_required_action_answered_within_the_action_timeout_completes(client, client_app, pending_update):
    page = _sign_in(client, _params())
    with time_machine.travel(timezone.now() + timedelta(seconds=45), tick=False):
        _, query = _query(client.post(_action(page), NEW))
    assert query["code"]
