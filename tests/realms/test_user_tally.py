"""The realm's tally of listed users (migration 0014, docs/decisions/0041): the database keeps it
equal to a count of the realm's users who are not service accounts through every kind of write,
users/count and a deep page read it instead of counting, its rows are folded as they come, and
concurrent creations do not wait on each other for it, however long their transactions."""
import threading

import pytest
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext

from realms.admin_api import users as users_api
from realms.data import realm_cache, rows
from realms.data.user_queries import listed_count
from realms.models import Client, Realm, User
from realms.representation.services import create_realm
from realms.users.accounts import create_user, enable_service_account
from tests.realms.test_admin_permissions import fgap  # noqa: F401 (fixture)
from tests.realms.test_admin_rest_api import Api, acme, master_api, token  # noqa: F401 (fixtures)


def counted(realm):
    return User.objects.filter(realm=realm, service_account_client__isnull=True).count()


def tally_rows(realm):
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM realms_user_tally WHERE realm_id = %s", [realm.pk])
        return cursor.fetchone()[0]


@pytest.mark.postgresql
@pytest.mark.django_db
def test_the_tally_is_the_count_of_the_listing_through_every_write(acme):  # noqa: F811
    other = create_realm("other")
    start = counted(acme)

    def check(expected):
        assert listed_count(acme) == counted(acme) == start + expected
        assert listed_count(other) == counted(other)

    ann = create_user(acme, "ann")
    check(1)
    create_user(other, "ann")  # another realm's user is its own realm's
    check(1)
    client = Client.objects.create(realm=acme, client_id="app", service_accounts_enabled=True)
    robot = enable_service_account(client)  # a service account is not listed
    check(1)
    # A bulk import streams its users with one COPY; a service account among them is not counted.
    bot_client = Client.objects.create(realm=acme, client_id="bot", service_accounts_enabled=True)
    imported = [User(realm=acme, username=f"bulk{i:03d}") for i in range(250)]
    imported.append(User(realm=acme, username="service-account-bot", service_account_client=bot_client))
    rows.insert_many(User, imported)
    check(251)
    # A user who leaves the listing, or comes into it, by the service-account link (a row update).
    User.objects.filter(pk=robot.pk).update(service_account_client=None)
    check(252)
    User.objects.filter(pk=robot.pk).update(service_account_client=client)
    check(251)
    ann.first_name = "Ann"
    ann.save()  # any other update leaves the tally alone
    check(251)
    ann.delete()
    check(250)
    User.objects.filter(realm=acme, username__startswith="bulk").delete()  # one statement, many rows
    check(0)
    client.delete()  # its service account goes with it, uncounted
    check(0)
    with connection.cursor() as cursor:  # what Django's flush between tests does
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # TRUNCATE refuses pending foreign-key checks
        cursor.execute("TRUNCATE realms_user CASCADE")
    assert listed_count(acme) == listed_count(other) == 0
    assert tally_rows(acme) == 0


@pytest.mark.postgresql
@pytest.mark.django_db
def test_a_realms_rows_are_folded_as_they_come(acme):  # noqa: F811
    for i in range(100):  # a row each
        create_user(acme, f"f{i:03d}")
    assert tally_rows(acme) < 40  # every 32nd row of the table folds its realm's rows into one
    assert listed_count(acme) == counted(acme)
    with connection.cursor() as cursor:
        cursor.execute("SELECT realms_user_tally_fold(%s)", [acme.pk])
    assert tally_rows(acme) == 1
    assert listed_count(acme) == counted(acme)


@pytest.mark.postgresql
@pytest.mark.django_db
def test_a_deleted_realm_leaves_no_tally(acme):  # noqa: F811
    create_user(acme, "ann")
    assert tally_rows(acme) > 0
    realm_cache.clear()
    Realm.objects.filter(pk=acme.pk).delete()
    assert tally_rows(acme) == 0


@pytest.mark.postgresql
@pytest.mark.django_db
def test_users_count_and_the_last_page_read_the_tally(master_api, acme, monkeypatch):  # noqa: F811
    names = [f"p{i:02d}" for i in range(30)]
    rows.insert_many(User, [User(realm=acme, username=name) for name in names])
    enable_service_account(Client.objects.create(realm=acme, client_id="p1x", service_accounts_enabled=True))
    with CaptureQueriesContext(connection) as captured:
        assert master_api("get", "acme/users/count").json() == 30
    assert not any("COUNT(" in q["sql"] for q in captured.captured_queries), captured.captured_queries
    monkeypatch.setattr(users_api, "_DEEP", 25)  # from first=25 on, the nearer end is found from the count
    with CaptureQueriesContext(connection) as captured:
        page = master_api("get", "acme/users", first="27", max="5").json()
    assert [u["username"] for u in page] == names[27:]
    assert not any("COUNT(" in q["sql"] for q in captured.captured_queries)
    # A filter, or an admin whom fine-grained permissions limit, is counted as it is.
    with CaptureQueriesContext(connection) as captured:
        assert master_api("get", "acme/users/count", search="p2").json() == 10
    assert any("COUNT(" in q["sql"] for q in captured.captured_queries)
    assert master_api("get", "acme/users/count", username="service-account-p1x").json() == 1


@pytest.mark.django_db
def test_a_limited_admin_counts_what_it_may_view(fgap):  # noqa: F811
    assert listed_count(fgap) > 3
    assert Api(token("fgap", "de-dua-0"))("get", "fgap/users/count").json() == 3


@pytest.mark.postgresql
@pytest.mark.django_db(transaction=True)
def test_users_created_at_the_same_time_do_not_wait_on_the_tally():
    realm = create_realm("busy")
    first_inserted, second_done = threading.Event(), threading.Event()
    failures = []

    def create(name, before_commit):
        try:
            conn = connections.create_connection("default")
            conn.set_autocommit(False)
            with conn.cursor() as cursor:
                cursor.execute("SET lock_timeout = '5s'")  # waiting on the other's tally row fails
                cursor.execute("INSERT INTO realms_user (id, realm_id, username, email, email_verified, first_name,"
                               " last_name, enabled, attributes, required_actions, not_before, created)"
                               " VALUES (%s, %s, %s, '', false, '', '', true, '{}', '[]', 0, now())",
                               [f"id-{name}", realm.pk, name])
            before_commit()
            conn.commit()
            conn.close()
        except Exception as exc:  # noqa: BLE001 (reported by the test below)
            failures.append(exc)
            first_inserted.set()
            second_done.set()

    first = threading.Thread(target=create, args=("first", lambda: (first_inserted.set(), second_done.wait(10))))
    first.start()
    first_inserted.wait(10)
    second = threading.Thread(target=create, args=("second", second_done.set))
    second.start()
    second.join(15)
    first.join(15)
    assert not failures, failures
    assert listed_count(realm) == counted(realm) == 2
