"""Keycloak 26's delete_account: disabled in a new realm; when enabled, a user holding the
``account`` client's ``delete-account`` role confirms after a fresh sign-in and is removed, with a
DELETE_ACCOUNT event; without the role the page says so and nothing is deleted; an application
may ask for it (kc_action) and the user may cancel; an admin may set it on a user."""
import pytest
from django.test import Client as HttpClient

from realms.models import Event, RequiredActionProvider, Role, User, UserSession

from .test_required_actions import AUTH, PARAMS, PASSWORD, form_action, html, must, redirect_query, sign_in

pytestmark = pytest.mark.django_db
CONFIRM = "Delete account confirmation"


def switch(realm, enabled):
    # save(), not update(): the realm's required actions are cached with its configuration.
    action = RequiredActionProvider.objects.get(realm=realm, alias="delete_account")
    action.enabled = enabled
    action.save()


@pytest.fixture
def enabled(realm):
    switch(realm, True)


def grant(realm, user):
    user.roles.add(Role.objects.get(client__realm=realm, client__client_id="account", name="delete-account"))


def asked_for(http):
    """An application asks for the action: the user signs in again first (a maximum age of 0)."""
    page = http.get(AUTH, {**PARAMS, "kc_action": "delete_account"})
    assert 'id="kc-form-login"' in html(page)
    return http.post(form_action(page), {"username": "bob", "password": PASSWORD})


def signed_in():
    http = HttpClient()
    assert redirect_query(sign_in(http))["code"]
    return http


def test_an_application_asks_and_the_user_confirms(realm, web_app, bob, enabled):
    grant(realm, bob)
    http = signed_in()
    page = asked_for(http)
    assert CONFIRM in html(page) and "This action is irreversible" in html(page)
    assert 'name="cancel-aia"' in html(page)
    done = http.post(form_action(page), {"accept": ""})
    assert done.status_code == 200 and "User deleted successfully" in html(done)
    assert not User.objects.filter(pk=bob.pk).exists()
    assert not UserSession.objects.filter(user_id=bob.pk).exists()
    event = Event.objects.get(realm=realm, type="DELETE_ACCOUNT")
    assert (event.user_id, event.client_id) == (str(bob.pk), "web-app")
    # The sign-in ended with the page: posting again finds nothing to continue.
    assert "User deleted successfully" not in html(http.post(form_action(page), {"accept": ""}))


def test_the_user_may_cancel(realm, web_app, bob, enabled):
    grant(realm, bob)
    http = signed_in()
    page = asked_for(http)
    query = redirect_query(http.post(form_action(page), {"cancel-aia": "true"}))
    assert query["kc_action_status"] == ["cancelled"] and query["code"]
    assert User.objects.filter(pk=bob.pk).exists()


def test_without_the_role_nothing_is_deleted(realm, web_app, bob, enabled):
    page = asked_for(signed_in())
    assert page.status_code == 403
    assert "You do not have enough permissions to delete your own account, contact admin." in html(page)
    # The role taken away between the confirmation page and the answer: checked again.
    grant(realm, bob)
    http = signed_in()
    page = asked_for(http)
    assert CONFIRM in html(page)
    bob.roles.clear()
    refused = http.post(form_action(page), {"accept": ""})
    assert refused.status_code == 400 and "You do not have enough permissions" in html(refused)
    assert User.objects.filter(pk=bob.pk).exists()
    error = Event.objects.get(realm=realm, type="DELETE_ACCOUNT_ERROR")
    assert error.error == "user_delete_error"
    assert not Event.objects.filter(realm=realm, type="DELETE_ACCOUNT").exists()


def test_disabled_in_a_new_realm(realm, web_app, bob):
    grant(realm, bob)
    http = signed_in()
    query = redirect_query(asked_for(http))
    assert query["kc_action_status"] == ["error"] and User.objects.filter(pk=bob.pk).exists()


def test_set_on_a_user_by_an_admin(realm, web_app, bob, enabled):
    grant(realm, bob)
    must(bob, "delete_account")
    http = HttpClient()
    page = sign_in(http)
    assert CONFIRM in html(page) and 'name="cancel-aia"' not in html(page)
    assert "User deleted successfully" in html(http.post(form_action(page), {"accept": ""}))
    assert not User.objects.filter(pk=bob.pk).exists()


def test_the_account_console_offers_it_only_when_allowed(realm, web_app, bob, enabled):
    http = signed_in()
    console = http.get(f"/realms/{realm.name}/account/")
    assert console.status_code == 200 and 'id="delete-account"' not in html(console)  # no role yet
    grant(realm, bob)
    console = http.get(f"/realms/{realm.name}/account/")
    assert 'id="delete-account-start"' in html(console) and "kc_action=delete_account" in html(console)
    switch(realm, False)
    assert 'id="delete-account"' not in html(http.get(f"/realms/{realm.name}/account/"))
