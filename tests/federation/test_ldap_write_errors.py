"""A WRITABLE directory refusing a user's change as it is written back (``realms.errors.StoreRefused``)
is answered by each surface in its own shape, never a 500, and changes nothing: SCIM's error body
with the directory's words, the Admin REST API's ``{"errorMessage": "Could not update user!"}`` as
Keycloak answers, the Account REST API's error and the account console's page with the reason.
The user's row and the directory entry stay as they were, and no event records a change."""
import json
import re

import ldap
import pytest
from django.test import Client

from realms.models import Client as ClientModel
from realms.models import Event, User
from realms.signin import passwords
from tests.realms.test_scim import USER, service_client, token_for
from tests.realms.test_signin import redirect_query, sign_in

from .conftest import make_provider
from .slapd import PEOPLE

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_caches")]
PASSWORD = "wendy-directory-password"
# inetOrgPerson requires sn: a user whose last name is emptied cannot be written back.
SN_REQUIRED = "LDAP error: Object class violation: object class 'inetOrgPerson' requires attribute 'sn'"
# mail is an IA5String: an address with an internationalised domain passes our checks, not slapd's.
IDN_ADDRESS = "wendy@exämple.org"


def _wendy(realm, directory):
    realm.admin_events_enabled = True
    realm.save()
    make_provider(realm, directory, editMode="WRITABLE")
    directory.add_user("wendy", PASSWORD, sn="Walker", given="Wendy", mail="wendy@example.org")
    return passwords.check_password(realm, "wendy", PASSWORD).user  # imported by the sign-in


def _unchanged(realm, directory, user):
    row = User.objects.get(pk=user.pk)
    assert (row.first_name, row.last_name, row.email) == ("Wendy", "Walker", "wendy@example.org")
    entry = directory.get(f"uid=wendy,{PEOPLE}", "sn", "mail")
    assert entry == {"sn": [b"Walker"], "mail": [b"wendy@example.org"]}
    assert not Event.objects.filter(realm=realm, type__in=("UPDATE", "UPDATE_PROFILE")).exists()  # admin and user events


def _scim(realm):
    realm.scim_api_enabled = True
    realm.save()
    service_client(realm, "provisioner", "manage-users", "view-users",
                   audience=f"http://testserver/realms/{realm.name}/scim/v2")
    return Client(HTTP_AUTHORIZATION=f"Bearer {token_for(realm, 'provisioner')}")


def test_a_scim_put_the_directory_refuses_answers_scims_400_with_its_words(realm, directory):
    user = _wendy(realm, directory)
    answer = _scim(realm).put(f"/realms/{realm.name}/scim/v2/Users/{user.pk}", json.dumps({
        "schemas": [USER], "userName": "wendy", "name": {"givenName": "Wendy"},
        "emails": [{"value": "wendy@example.org"}]}), content_type="application/scim+json")
    assert answer.status_code == 400, answer.content
    assert answer.json() == {"schemas": ["urn:ietf:params:scim:api:messages:2.0:Error"], "status": "400",
                             "detail": SN_REQUIRED}
    _unchanged(realm, directory, user)


def test_a_scim_put_the_directory_takes_is_written_back(realm, directory):
    # The counterpart: the same PUT with a last name the schema accepts lands in the directory.
    user = _wendy(realm, directory)
    answer = _scim(realm).put(f"/realms/{realm.name}/scim/v2/Users/{user.pk}", json.dumps({
        "schemas": [USER], "userName": "wendy", "name": {"givenName": "Wendy", "familyName": "Wolf"},
        "emails": [{"value": "wendy@example.org"}]}), content_type="application/scim+json")
    assert answer.status_code == 200, answer.content
    assert directory.get(f"uid=wendy,{PEOPLE}", "sn") == {"sn": [b"Wolf"]}


def test_an_admin_api_put_the_directory_refuses_answers_keycloaks_error(realm, directory, admin_api):
    user = _wendy(realm, directory)
    answer = admin_api("put", f"acme/users/{user.pk}", {"lastName": ""})
    assert answer.status_code == 400, answer.content
    assert answer.json() == {"errorMessage": "Could not update user!"}
    _unchanged(realm, directory, user)


def test_an_account_api_update_the_directory_refuses_answers_400(realm, directory, web_app):
    user = _wendy(realm, directory)
    ClientModel.objects.filter(realm=realm, client_id="account-console").update(direct_access_grants_enabled=True)
    grant = Client().post(f"/realms/{realm.name}/protocol/openid-connect/token", {
        "grant_type": "password", "client_id": "account-console", "username": "wendy", "password": PASSWORD})
    assert grant.status_code == 200, grant.content
    answer = Client(HTTP_AUTHORIZATION=f"Bearer {grant.json()['access_token']}").post(
        f"/realms/{realm.name}/account/", json.dumps({
            "username": "wendy", "firstName": "Wendy", "lastName": "Walker", "email": IDN_ADDRESS}),
        content_type="application/json", HTTP_ACCEPT="application/json")
    assert answer.status_code == 400, answer.content
    assert answer.json() == {"errorMessage": "Could not update user!"}
    _unchanged(realm, directory, user)


def test_the_account_console_shows_why_the_directory_refused_the_change(realm, directory, web_app):
    user = _wendy(realm, directory)
    browser = Client()
    redirect_query(sign_in(browser, "wendy", PASSWORD))
    http = Client(enforce_csrf_checks=True)
    http.cookies = browser.cookies
    page = http.get("/realms/acme/account/")
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode()).group(1)
    answer = http.post("/realms/acme/account/", {"csrfmiddlewaretoken": csrf, "email": IDN_ADDRESS,
                                                 "firstName": "Wendy", "lastName": "Walker"})
    text = answer.content.decode()
    assert answer.status_code == 400
    assert 'id="refused" role="alert"' in text and "LDAP error: Invalid syntax" in text
    assert f'value="{IDN_ADDRESS}"' in text  # what the person typed stays in the form
    _unchanged(realm, directory, user)


def test_the_update_profile_page_shows_why_the_directory_refused_the_change(realm, directory, web_app):
    user = _wendy(realm, directory)
    User.objects.filter(pk=user.pk).update(required_actions=["UPDATE_PROFILE"])
    browser = Client()
    page = sign_in(browser, "wendy", PASSWORD)
    assert page.status_code == 200 and 'id="kc-update-profile-form"' in page.content.decode()
    action = re.search(r'action="([^"]+)"', page.content.decode()).group(1).replace("&amp;", "&")
    answer = browser.post(action, {"email": IDN_ADDRESS, "firstName": "Wendy", "lastName": "Walker"})
    text = answer.content.decode()
    assert answer.status_code == 200 and 'id="input-error" role="alert"' in text and "LDAP error: Invalid syntax" in text
    assert f'value="{IDN_ADDRESS}"' in text
    _unchanged(realm, directory, user)
    assert User.objects.get(pk=user.pk).required_actions == ["UPDATE_PROFILE"]  # still to do


def test_a_scim_put_while_the_directory_is_down_answers_503_and_changes_nothing(realm, directory):
    user = _wendy(realm, directory)
    http = _scim(realm)
    directory.stop()  # the fixture starts it again
    answer = http.put(f"/realms/{realm.name}/scim/v2/Users/{user.pk}", json.dumps({
        "schemas": [USER], "userName": "wendy", "name": {"givenName": "Wendy", "familyName": "Wolf"}}),
        content_type="application/scim+json")
    assert answer.status_code == 503, answer.content
    assert answer.json()["detail"] == "Could not reach the user's directory"
    assert User.objects.get(pk=user.pk).last_name == "Walker"


@pytest.mark.parametrize("writer", ["admin-api", "scim"])
def test_a_new_user_the_directory_refuses_is_not_created(realm, directory, admin_api, writer):
    make_provider(realm, directory, syncRegistrations="true")
    if writer == "admin-api":
        answer = admin_api("post", "acme/users", {"username": "zed", "email": IDN_ADDRESS})
        assert answer.status_code == 400, answer.content
        assert answer.json() == {"errorMessage": "Could not create user"}  # Keycloak's words
    else:
        answer = _scim(realm).post(f"/realms/{realm.name}/scim/v2/Users", json.dumps({
            "schemas": [USER], "userName": "zed", "emails": [{"value": IDN_ADDRESS}]}),
            content_type="application/scim+json")
        assert answer.status_code == 400, answer.content
        assert answer.json()["detail"].startswith("LDAP error: Invalid syntax")
    assert not User.objects.filter(realm=realm, username="zed").exists()
    with pytest.raises(ldap.NO_SUCH_OBJECT):
        directory.get(f"uid=zed,{PEOPLE}")


def test_the_account_api_answers_keycloaks_read_only_key_for_a_read_only_directory(realm, directory, web_app):
    make_provider(realm, directory, editMode="READ_ONLY")
    directory.add_user("rita", PASSWORD, sn="Reed", given="Rita", mail="rita@example.org")
    ClientModel.objects.filter(realm=realm, client_id="account-console").update(direct_access_grants_enabled=True)
    grant = Client().post(f"/realms/{realm.name}/protocol/openid-connect/token", {
        "grant_type": "password", "client_id": "account-console", "username": "rita", "password": PASSWORD})
    assert grant.status_code == 200, grant.content
    answer = Client(HTTP_AUTHORIZATION=f"Bearer {grant.json()['access_token']}").post(
        f"/realms/{realm.name}/account/", json.dumps({
            "username": "rita", "firstName": "Rita", "lastName": "Rowe", "email": "rita@example.org"}),
        content_type="application/json", HTTP_ACCEPT="application/json")
    assert answer.status_code == 400, answer.content
    assert answer.json() == {"errorMessage": "readOnlyUserMessage"}  # AccountRestService's answer
    assert User.objects.get(realm=realm, username="rita").last_name == "Reed"
    assert directory.get(f"uid=rita,{PEOPLE}", "sn") == {"sn": [b"Reed"]}


@pytest.mark.parametrize("change", ["delete", "reset-password"])
def test_an_admin_api_change_while_the_directory_is_down_answers_400_and_keeps_the_user(realm, directory, admin_api, change):
    """The Admin API's one handler answers the store being out of reach (no 500, nothing changed)."""
    user = _wendy(realm, directory)
    directory.stop()  # the fixture starts it again
    if change == "delete":
        answer = admin_api("delete", f"acme/users/{user.pk}")
    else:
        answer = admin_api("put", f"acme/users/{user.pk}/reset-password", {"type": "password", "value": "Another-1"})
    assert (answer.status_code, answer.json()) == (400, {"errorMessage": "Could not reach the user's directory"})
    assert User.objects.filter(pk=user.pk).exists()
