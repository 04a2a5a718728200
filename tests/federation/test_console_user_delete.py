"""The console deletes a user through the user's store (``storage.delete_user``), as the Admin API
and SCIM do: a WRITABLE directory's entry goes with the user, so the next sync does not bring the
user back. When the directory cannot be reached or refuses, the page says why and the user, the
entry, the admin event and the console's log stay as they were; a bulk delete keeps the users whose
directory refused and deletes the others."""
import ldap
import pytest
from django.contrib.admin.models import LogEntry

from federation.ldap.sync import sync
from realms.models import Component, Event, Realm, User
from realms.signin import passwords
from tests.realms.test_admin import make_admin

from .conftest import make_provider
from .slapd import PEOPLE

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_caches")]
USERS = "/admin/master/console/realms/user/"


@pytest.fixture
def console(client, realm):
    realm.admin_events_enabled = True
    realm.save()
    client.force_login(make_admin(Realm.objects.get(name="master")))
    client.get(f"{USERS}?realm__id__exact={realm.pk}")  # the current realm
    return client


def _imported(realm, directory, *uids):
    """Directory users signed in once, so imported here (linked to the provider)."""
    for uid in uids:
        directory.add_user(uid, f"{uid}-password-1")
    return [passwords.check_password(realm, uid, f"{uid}-password-1").user for uid in uids]


def _in_directory(directory, uid):
    try:
        directory.get(f"uid={uid},{PEOPLE}")
    except ldap.NO_SUCH_OBJECT:
        return False
    return True


def _deleted_events(realm):
    return list(Event.objects.filter(realm=realm, kind=Event.ADMIN, type="DELETE").values_list("resource_path",
                                                                                                  flat=True))


def _messages(response):
    return [str(m) for m in response.context["messages"]]


def _child_under(directory, uid):
    """An entry below the user's: the directory refuses to delete the user's (not a leaf)."""
    conn = directory.admin()
    try:
        dn = f"cn=laptop,uid={uid},{PEOPLE}"
        conn.add_s(dn, ldap.modlist.addModlist({"objectClass": [b"device"], "cn": [b"laptop"]}))
    finally:
        conn.unbind_s()
    return dn


def _remove(directory, dn):
    conn = directory.admin()
    try:
        conn.delete_s(dn)
    finally:
        conn.unbind_s()


def test_deleting_a_writable_directory_user_in_the_console_deletes_the_entry(console, realm, directory):
    component = make_provider(realm, directory, editMode="WRITABLE")
    (wendy,) = _imported(realm, directory, "wendy")
    response = console.post(f"{USERS}{wendy.pk}/delete/", {"post": "yes"}, follow=True)
    assert response.status_code == 200
    assert any("was deleted successfully" in m for m in _messages(response)), _messages(response)
    assert not User.objects.filter(pk=wendy.pk).exists()
    assert not _in_directory(directory, "wendy")
    assert _deleted_events(realm) == [f"users/{wendy.pk}"]
    assert sync(Component.objects.get(pk=component.pk))["added"] == 0  # nothing to bring back


def test_an_unreachable_directory_deletes_nothing_and_says_why(console, realm, directory):
    make_provider(realm, directory, editMode="WRITABLE")
    (uma,) = _imported(realm, directory, "uma")
    directory.stop()
    try:
        response = console.post(f"{USERS}{uma.pk}/delete/", {"post": "yes"}, follow=True)
    finally:
        directory.start()
    assert response.status_code == 200
    assert response.redirect_chain == [(f"{USERS}{uma.pk}/delete/", 302)]  # the confirmation again
    assert _messages(response) == ["The user was not deleted: could not reach the user's directory"]
    assert User.objects.filter(pk=uma.pk).exists() and _in_directory(directory, "uma")
    assert _deleted_events(realm) == [] and not LogEntry.objects.exists()


def test_a_directory_that_refuses_deletes_nothing_and_its_words_are_shown(console, realm, directory):
    make_provider(realm, directory, editMode="WRITABLE")
    (rose,) = _imported(realm, directory, "rose")
    child = _child_under(directory, "rose")
    try:
        response = console.post(f"{USERS}{rose.pk}/delete/", {"post": "yes"}, follow=True)
        assert response.status_code == 200
        assert _messages(response) == ["The user was not deleted: LDAP error: Operation not allowed on non-leaf: "
                                       "subordinate objects must be deleted first"]
        assert User.objects.filter(pk=rose.pk).exists() and _in_directory(directory, "rose")
        assert _deleted_events(realm) == [] and not LogEntry.objects.exists()
    finally:
        _remove(directory, child)


def test_a_bulk_delete_keeps_the_users_whose_directory_refused_and_deletes_the_others(console, realm, directory):
    make_provider(realm, directory, editMode="WRITABLE")
    ann, rose, zoe = _imported(realm, directory, "ann", "rose", "zoe")
    child = _child_under(directory, "rose")
    try:
        response = console.post(USERS, {"action": "delete_selected", "_selected_action": [ann.pk, rose.pk, zoe.pk],
                                        "post": "yes"}, follow=True)
        assert response.status_code == 200
        assert _messages(response) == ["Deleted 2 of the selected users. Not deleted: rose (LDAP error: Operation not "
                                       "allowed on non-leaf: subordinate objects must be deleted first)."]
        assert set(User.objects.filter(realm=realm).values_list("username", flat=True)) == {"rose"}
        assert [_in_directory(directory, uid) for uid in ("ann", "rose", "zoe")] == [False, True, False]
        assert sorted(_deleted_events(realm)) == sorted([f"users/{ann.pk}", f"users/{zoe.pk}"])
        assert sorted(LogEntry.objects.values_list("object_repr", flat=True)) == ["ann", "zoe"]
    finally:
        _remove(directory, child)
