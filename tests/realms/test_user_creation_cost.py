"""Creating a user through the Admin API (docs/decisions/0036, 0042): what it no longer does that
it never needed, what it still does (default role, policy, hash, admin event), the queries it
makes, and the caller's roles read at each request over the realm's cached role names; the queries
of setting a user's password."""
import pytest
from django.core.cache import caches
from django.db import connection
from django.test.utils import CaptureQueriesContext

from realms.data import realm_cache
from realms.data.shared_cache import GENERATIONS
from realms.models import Event, Realm, Role, User
from realms.users.accounts import create_user
from tests.passwords import holds_password
from tests.realms.test_admin_rest_api import PASSWORD, Api, acme, master_api, token  # noqa: F401 (fixtures)
from tests.realms.test_signin_cost import _statements

pytestmark = pytest.mark.django_db


def _generation(realm):
    return caches[GENERATIONS].get(realm_cache._configs.generation_key(realm.pk), 0)


def test_creating_a_user_keeps_the_realms_cached_configuration(acme, master_api):
    config = realm_cache.get_realm("acme")
    generation = _generation(acme)
    resp = master_api("post", "acme/users", {"username": "new", "enabled": True, "credentials": [
        {"type": "password", "value": "New-password-1", "temporary": False}]})
    assert resp.status_code == 201, resp.content
    # No process drops the realm's flows, clients and roles because someone got an account.
    assert _generation(acme) == generation
    assert realm_cache.get_realm("acme") is config
    user = User.objects.get(realm=acme, username="new")
    assert user.roles.filter(pk=acme.default_role_id).exists()  # still the realm's default role
    assert holds_password(user, "New-password-1")
    assert Event.objects.filter(realm=acme, kind=Event.ADMIN, type="CREATE", resource_path=f"users/{user.pk}").exists()


def test_a_password_the_policy_refuses_still_creates_nothing(acme, master_api):
    acme.password_policy = "length(12)"
    acme.save()
    resp = master_api("post", "acme/users", {"username": "new", "credentials": [{"type": "password", "value": "short"}]})
    assert resp.status_code == 400
    assert not User.objects.filter(realm=acme, username="new").exists()
    assert not Event.objects.filter(realm=acme, kind=Event.ADMIN).exists()


def _create(api, username, **fields):
    return api("post", "acme/users", {"username": username, "enabled": True, **fields, "credentials": [
        {"type": "password", "value": "New-password-1", "temporary": False}]})


@pytest.mark.postgresql
def test_creating_a_user_with_a_password_makes_these_queries_and_no_more(acme, master_api):
    assert _create(master_api, "first").status_code == 201  # the caller's session and realm cached
    with CaptureQueriesContext(connection) as queries:
        assert _create(master_api, "second").status_code == 201
    # The caller's row with the roles they hold, if the token's client session still exists
    # (one query: a disabled admin, a role taken away or an ended client session counts at once;
    # the role rows are the realm's cached ones), and the realm's row, sent together; one look
    # for a user of that name; then the writes, sent together: the user, the default role, the
    # password (one statement that removes any old one and writes the new, as for every password
    # set) and the admin event (the realm saves them).
    assert _statements(queries) == [
        "SELECT realms_user + SELECT realms_realm", "SELECT realms_user",
        "INSERT realms_user + INSERT realms_user_roles + WITH realms_credential + INSERT realms_event"]


def test_a_username_taken_meanwhile_is_a_conflict_and_nothing_is_kept(acme, master_api, monkeypatch):
    """The look for a user of that name found none, then another request took the name: the
    database's constraint refuses the row, and the whole create is undone."""
    assert _create(master_api, "taken").status_code == 201
    monkeypatch.setattr("realms.admin_api.users._check_unique", lambda *args, **kwargs: None)
    events = Event.objects.filter(realm=acme, kind=Event.ADMIN).count()
    answer = _create(master_api, "taken", email="other@example.org")
    assert answer.status_code == 409
    assert answer.json() == {"errorMessage": "User exists with same username"}
    # One user of that name, the first: get() raises for none or two.
    assert User.objects.filter(realm=acme, username="taken").values_list("email", flat=True).get() != "other@example.org"
    assert Event.objects.filter(realm=acme, kind=Event.ADMIN).count() == events
    assert master_api("get", "acme/users/count").json() == 1  # the connection still serves


@pytest.mark.postgresql
def test_a_username_and_an_email_taken_are_one_query_and_the_username_answers_first(acme, master_api):
    acme.duplicate_emails_allowed = True
    acme.save()
    for name in ("ann", "bea"):
        assert _create(master_api, name, email="shared@example.org").status_code == 201
    assert _create(master_api, "cid", email="cid@example.org").status_code == 201
    acme.duplicate_emails_allowed = False
    acme.save()
    with CaptureQueriesContext(connection) as queries:
        answer = _create(master_api, "cid", email="shared@example.org")
    assert answer.status_code == 409
    assert answer.json() == {"errorMessage": "User exists with same username"}
    assert _statements(queries) == ["SELECT realms_user + SELECT realms_realm", "SELECT realms_user"]  # both at once
    with CaptureQueriesContext(connection) as queries:
        answer = _create(master_api, "dan", email="SHARED@example.org")
    assert answer.json() == {"errorMessage": "User exists with same email"}
    assert _statements(queries) == ["SELECT realms_user + SELECT realms_realm", "SELECT realms_user"]


def _delegated_admin(acme, username):
    """A master user holding acme's view-users through the master realm's acme-realm client."""
    master = Realm.objects.get(name="master")
    user = create_user(master, username, password=PASSWORD)
    role = Role.objects.get(realm=master, client__client_id="acme-realm", name="view-users")
    user.roles.add(role)
    return user, role, Api(token("master", username))


def test_an_admin_role_taken_away_counts_at_the_next_request_whatever_the_cache(acme, master_api):
    user, role, api = _delegated_admin(acme, "helpdesk")
    assert api("get", "acme/users").status_code == 200  # the names of the roles held now cached
    config = realm_cache.get_realm("master")
    # Taken away by a process whose signal this one never hears (a row deleted, no m2m signal).
    User.roles.through.objects.filter(user=user, role=role).delete()
    assert realm_cache.get_realm("master") is config
    assert api("get", "acme/users").status_code == 403


def test_an_admin_role_newer_than_the_cached_role_names_counts_at_once(acme, master_api):
    _, role, api = _delegated_admin(acme, "helpdesk")
    assert api("get", "acme/users").status_code == 200
    # As in a process that has not yet heard of the realm made a moment ago elsewhere: the master
    # realm's cached names of the roles held lack its acme-realm client's, the recursive query
    # finds their ids, and those are named from the database.
    named = realm_cache.get_realm("master").extension("client-roles-named", dict)
    for pk in [pk for pk, found in named.items() if found and found[0] == "acme-realm"]:
        del named[pk]
    assert api("get", "acme/users").status_code == 200
    assert named[role.pk] == ("acme-realm", "view-users")


def test_an_update_is_checked_against_the_other_users_only(acme, master_api):
    ann = _create(master_api, "ann", email="ann@example.org")["Location"].rsplit("/", 1)[1]
    assert _create(master_api, "bea", email="bea@example.org").status_code == 201
    # Its own username and e-mail (any case) are the user's to keep ...
    assert master_api("put", f"acme/users/{ann}", {"username": "ann", "email": "ANN@example.org"}).status_code == 204
    # ... another user's are not.
    assert master_api("put", f"acme/users/{ann}", {"email": "Bea@example.org"}).json() == {
        "errorMessage": "User exists with same email"}
    assert User.objects.get(pk=ann).email == "ann@example.org"


@pytest.mark.postgresql
def test_setting_a_password_reads_the_user_once_and_not_the_realm_again(acme, master_api):
    user_id = _create(master_api, "reset").headers["Location"].rsplit("/", 1)[1]
    body = {"type": "password", "value": "Other-password-2", "temporary": True}
    assert master_api("put", f"acme/users/{user_id}/reset-password", body).status_code == 204
    with CaptureQueriesContext(connection) as queries:
        assert master_api("put", f"acme/users/{user_id}/reset-password", body).status_code == 204
    # The caller with the realm; the user the path names, read once for the permission check and
    # the change, its realm the request's (not read again); the new password, the required action,
    # the look for the user's sessions whose cached copies of the user go, and the admin event.
    assert _statements(queries) == [
        "SELECT realms_user + SELECT realms_realm", "SELECT realms_user", "WITH realms_credential",
        "UPDATE realms_user", "SELECT realms_usersession", "INSERT realms_event"]
    user = User.objects.get(pk=user_id)
    assert holds_password(user, "Other-password-2") and user.required_actions == ["UPDATE_PASSWORD"]
