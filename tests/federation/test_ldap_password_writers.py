"""Every writer sets a directory user's password in the directory (``storage.set_password``): the
console's "Set password" form and SCIM land a WRITABLE user's new password in slapd (a bind with
it works, the old one no longer binds, no local hash is written), and a READ_ONLY user's is
refused with Keycloak's read-only message, the directory unchanged. A new user whose password
the directory refuses leaves no entry behind, whichever writer created it."""
import json

import ldap
import pytest
from django.test import Client

from realms.models import Credential, Realm, User
from realms.signin import passwords
from tests.realms.test_admin import make_admin
from tests.realms.test_scim import PATCH, USER, service_client, token_for

from .conftest import make_provider
from .slapd import MIN_PASSWORD_LENGTH, PEOPLE

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_caches")]
READ_ONLY_MESSAGE = "You can't update your password as your account is read only."


def _binds(directory, uid, password):
    conn = ldap.initialize(directory.url)
    try:
        conn.simple_bind_s(f"uid={uid},{PEOPLE}", password)
        return True
    except ldap.INVALID_CREDENTIALS:
        return False
    finally:
        conn.unbind_s()


def _directory_user(realm, directory, uid, edit_mode):
    make_provider(realm, directory, editMode=edit_mode)
    directory.add_user(uid, f"{uid}-old-password")
    return passwords.check_password(realm, uid, f"{uid}-old-password").user  # imported by the sign-in


def _console_set(client, user, password):
    client.force_login(make_admin(Realm.objects.get_or_create(name="master")[0]))
    return client.post(f"/admin/master/console/realms/user/{user.pk}/password/",
                       {"new_password1": password, "new_password2": password})


def _scim_set(realm, user, password):
    """A PATCH of the password alone (a PUT would also replace the names, which the directory keeps)."""
    realm.scim_api_enabled = True
    realm.save()
    service_client(realm, "provisioner", "manage-users", "view-users",
                   audience=f"http://testserver/realms/{realm.name}/scim/v2")
    http = Client(HTTP_AUTHORIZATION=f"Bearer {token_for(realm, 'provisioner')}")
    return http.patch(f"/realms/{realm.name}/scim/v2/Users/{user.pk}",
                      json.dumps({"schemas": [PATCH], "Operations": [
                          {"op": "replace", "path": "password", "value": password}]}),
                      content_type="application/scim+json")


@pytest.mark.parametrize("writer", ["console", "scim"])
def test_a_writable_directory_users_password_lands_in_the_directory(client, realm, directory, writer):
    user = _directory_user(realm, directory, "wendy", "WRITABLE")
    answer = (_console_set(client, user, "wendy-new-password") if writer == "console"
              else _scim_set(realm, user, "wendy-new-password"))
    assert answer.status_code == (302 if writer == "console" else 200), answer.content
    assert _binds(directory, "wendy", "wendy-new-password")
    assert not _binds(directory, "wendy", "wendy-old-password")
    assert not Credential.objects.filter(user=user).exists()  # no local hash that no sign-in reads
    assert passwords.check_password(realm, "wendy", "wendy-new-password").ok


@pytest.mark.parametrize("writer", ["console", "scim"])
def test_a_read_only_directory_users_password_is_refused(client, realm, directory, writer):
    user = _directory_user(realm, directory, "rita", "READ_ONLY")
    if writer == "console":
        answer = _console_set(client, user, "rita-new-password")
        assert answer.status_code == 200
        assert READ_ONLY_MESSAGE in answer.content.decode().replace("&#x27;", "'")
    else:
        answer = _scim_set(realm, user, "rita-new-password")
        assert answer.status_code == 400, answer.content
        assert answer.json()["scimType"] == "mutability" and answer.json()["detail"] == READ_ONLY_MESSAGE
    assert _binds(directory, "rita", "rita-old-password")
    assert not _binds(directory, "rita", "rita-new-password")
    assert not Credential.objects.filter(user=user).exists()


def test_the_admin_api_answers_keycloaks_read_only_reset_message(realm, directory, admin_api):
    user = _directory_user(realm, directory, "rex", "READ_ONLY")
    answer = admin_api("put", f"acme/users/{user.pk}/reset-password", {"type": "password", "value": "rex-new-pass"})
    assert answer.status_code == 400
    assert answer.json() == {"error": "Can't reset password as account is read only"}
    assert _binds(directory, "rex", "rex-old-password")


@pytest.mark.parametrize("writer", ["admin-api", "scim"])
def test_a_new_user_whose_password_the_directory_refuses_leaves_no_entry(realm, directory, admin_api, writer):
    make_provider(realm, directory, syncRegistrations="true")
    short = "x" * (MIN_PASSWORD_LENGTH - 1)  # the realm has no policy: only the directory refuses it
    if writer == "admin-api":
        answer = admin_api("post", "acme/users", {"username": "tony", "credentials": [{"type": "password", "value": short}]})
        assert answer.status_code == 400 and answer.json() == {"errorMessage": "Password policy not met"}
    else:
        realm.scim_api_enabled = True
        realm.save()
        service_client(realm, "provisioner", "manage-users", "view-users",
                       audience=f"http://testserver/realms/{realm.name}/scim/v2")
        http = Client(HTTP_AUTHORIZATION=f"Bearer {token_for(realm, 'provisioner')}")
        answer = http.post(f"/realms/{realm.name}/scim/v2/Users",
                           json.dumps({"schemas": [USER], "userName": "tony", "password": short}),
                           content_type="application/scim+json")
        assert answer.status_code == 400 and "Password fails quality checking policy" in answer.json()["detail"]
    assert not User.objects.filter(realm=realm, username="tony").exists()
    with pytest.raises(ldap.NO_SUCH_OBJECT):  # nor its entry: the name can be created again
        directory.get(f"uid=tony,{PEOPLE}")
