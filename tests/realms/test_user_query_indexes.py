"""The Admin API's user queries at scale (docs/decisions/0035): migration 0011's PostgreSQL
indexes exist, the SQL each query form sends is answered from them (the expression Django writes
must be the indexed one), the answers stay Keycloak's, and a deep page read from the end of the
list is the page read from its start."""
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from realms.admin_api import users as users_api
from realms.administration.admin_permissions import Admin, visible
from realms.data import user_queries
from realms.models import Client as ClientModel
from realms.models import Role, User
from realms.users.accounts import create_user, enable_service_account
from tests.realms.test_admin_permissions import fgap  # noqa: F401 (fixture)
from tests.realms.test_admin_rest_api import acme, master_api  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db

SEARCHED = ("username", "email", "first_name", "last_name")
BULK = 3000  # enough rows that the planner's choice is the one a large realm gets


@pytest.fixture
def crowd(acme):  # noqa: F811
    """The named people of the query forms among a crowd of bulk users and one service account,
    with the statistics ANALYZE gives a live database."""
    people = [("ann", "ann@corp.example", "Ann", "Archer"), ("anna", "anna@home.example", "Anna", "Baker"),
              ("bob", "bob@corp.example", "Bob", "Annson"), ("carol", "carol@mail.example", "Carol", "Ng")]
    for username, email, first, last in people:
        create_user(acme, username, email=email, first_name=first, last_name=last)
    User.objects.bulk_create(
        User(realm=acme, username=f"u{i:05d}", email=f"u{i:05d}@bulk.test", first_name=f"F{i}", last_name=f"L{i}")
        for i in range(BULK))
    client = ClientModel.objects.create(realm=acme, client_id="annex", service_accounts_enabled=True)
    enable_service_account(client)  # service-account-annex: matches "ann*" but is no list's
    with connection.cursor() as cursor:
        # What VACUUM ANALYZE leaves on a live database, which a test's transaction cannot run:
        # statistics, every page all-visible, trigram indexes without pending entries.
        cursor.execute("ANALYZE realms_user")
        cursor.execute("UPDATE pg_class SET relallvisible = relpages WHERE oid = 'realms_user'::regclass")
        for col in SEARCHED:
            cursor.execute(f"SELECT gin_clean_pending_list('realms_user_{col}_trgm_idx'::regclass)")
    user_queries._frequencies.cache_clear()  # this crowd's statistics, not an earlier test's
    return acme


def plans(api, realm, path, **params):
    """The JSON answer of GET ``path`` and the plan of each query it sent on the realm's users."""
    with CaptureQueriesContext(connection) as captured:
        resp = api("get", path, **params)
    assert resp.status_code == 200, resp.content
    found = []
    with connection.cursor() as cursor:
        # A table of a few thousand rows is read sequentially whatever its indexes; with that
        # ruled out the planner shows which of them fit the query.
        cursor.execute("SET LOCAL enable_seqscan = off")
        for query in captured.captured_queries:
            if query["sql"].startswith("SELECT") and f'"realms_user"."realm_id" = \'{realm.pk}\'' in query["sql"]:
                cursor.execute("EXPLAIN " + query["sql"])
                found.append("\n".join(row[0] for row in cursor.fetchall()))
    return resp.json(), found


@pytest.mark.postgresql
def test_the_migration_creates_the_indexes():
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'realms_user'")
        indexes = dict(cursor.fetchall())
        cursor.execute("SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'")
        assert cursor.fetchone()
    assert "WHERE (service_account_client_id IS NULL)" in indexes["realms_user_list_idx"]
    assert "realms_user_count_idx" not in indexes  # 0014: the realm's tally counts the listing
    for col in SEARCHED:
        assert f"upper(({col})::text) text_pattern_ops" in indexes[f"realms_user_{col}_upper_idx"]
        assert f"gin (upper(({col})::text) gin_trgm_ops)" in indexes[f"realms_user_{col}_trgm_idx"]


@pytest.mark.parametrize("params,expected,index", [
    # A prefix of username, email, first or last name: both kinds of index serve it (at a million
    # users the planner takes the btree; in a small table, as here, it may take the trigrams).
    ({"search": "ann"}, ["ann", "anna", "bob"], "realms_user_username_"),
    ({"search": "*corp*"}, ["ann", "bob"], "_trgm_idx"),  # infix
    ({"search": "*son"}, ["bob"], "_trgm_idx"),  # suffix
    ({"search": '"ann"'}, ["ann"], "_upper_idx"),  # exact
    ({"search": "ann archer"}, ["ann"], "_upper_idx"),  # every term must match
    ({"email": "corp.example"}, ["ann", "bob"], "realms_user_email_trgm_idx"),  # infix when not exact
    ({"email": "ANN@corp.example", "exact": "true"}, ["ann"], "realms_user_email_upper_idx"),
    ({"username": "nna", "max": "1"}, ["anna"], "realms_user_username_trgm_idx"),
    ({"firstName": "carol", "exact": "true"}, ["carol"], "realms_user_first_name_upper_idx"),
    ({"lastName": "bak"}, ["anna"], "realms_user_last_name_trgm_idx"),
])
@pytest.mark.postgresql
def test_each_search_form_reads_its_index(master_api, crowd, params, expected, index):  # noqa: F811
    found, (page_plan,) = plans(master_api, crowd, "acme/users", **params)
    assert [u["username"] for u in found] == expected
    assert index in page_plan, page_plan
    count_params = {k: v for k, v in params.items() if k != "max"}
    count, (count_plan,) = plans(master_api, crowd, "acme/users/count", **count_params)
    assert count == len(expected)
    assert index in count_plan, count_plan


@pytest.mark.postgresql
def test_the_list_reads_the_partial_index_alone_and_the_count_none(master_api, crowd):  # noqa: F811
    listed, (page_plan,) = plans(master_api, crowd, "acme/users", first="10", max="5")
    everyone = sorted(["ann", "anna", "bob", "carol", *(f"u{i:05d}" for i in range(BULK))])
    assert [u["username"] for u in listed] == everyone[10:15]
    assert "Index Only Scan using realms_user_list_idx" in page_plan, page_plan
    count, plans_sent = plans(master_api, crowd, "acme/users/count")
    assert count == BULK + 4  # the service account is not counted (the realm's tally, decision 0041) ...
    assert plans_sent == []  # ... and no query read the user table
    # ... but is found, and counted, by its username (Keycloak's rule).
    assert master_api("get", "acme/users/count", username="service-account-annex").json() == 1


def test_a_deep_page_from_either_end_is_the_same_page(master_api, acme, monkeypatch):  # noqa: F811
    names = [f"p{i:02d}" for i in range(23)]
    for name in names:
        create_user(acme, name)
    enable_service_account(ClientModel.objects.create(realm=acme, client_id="p10x", service_accounts_enabled=True))
    monkeypatch.setattr(users_api, "_DEEP", 2)  # from first=2 on, the nearer end is counted from
    for first in range(len(names) + 2):
        for most in (1, 5, 10):
            got = master_api("get", "acme/users", first=str(first), max=str(most)).json()
            assert [u["username"] for u in got] == names[first:first + most], (first, most)
    # Keycloak's defaults: a negative max is 100, a negative first is 0.
    assert [u["username"] for u in master_api("get", "acme/users", first="20", max="-1").json()] == names[20:]
    assert len(master_api("get", "acme/users", first="-5").json()) == len(names)
    # A search narrows what is counted and paged alike.
    got = master_api("get", "acme/users", search="p1", first="7", max="2").json()
    assert [u["username"] for u in got] == ["p17", "p18"]


def test_a_role_holder_sees_every_user_without_permissions_evaluated(fgap):  # noqa: F811
    """With fine-grained permissions on, ``view-users`` still grants every user: the query is
    left as it is (no list of the users that permissions name, through their groups, is loaded)."""
    admin_user = create_user(fgap, "viewer")
    admin_user.roles.add(Role.objects.get(realm=fgap, client__client_id="realm-management", name="view-users"))
    users = User.objects.filter(realm=fgap)
    with CaptureQueriesContext(connection) as captured:
        assert visible(Admin(admin_user), fgap, "Users", users) is users
    assert not any('FROM "realms_user" ' in q["sql"] for q in captured.captured_queries)
    group_admin = User.objects.get(realm=fgap, username="de-dua-0")  # a permission, not a role
    listed = visible(Admin(group_admin), fgap, "Users", users)
    assert [u.username for u in listed] == ["de-user-0", "de-user-1", "de-user-2"]


@pytest.mark.postgresql
def test_the_uniqueness_check_of_a_new_users_email_reads_the_email_index(master_api, crowd):  # noqa: F811
    with CaptureQueriesContext(connection) as captured:
        resp = master_api("post", "acme/users", {"username": "dora", "email": "ANN@corp.example"})
    assert resp.json() == {"errorMessage": "User exists with same email"}
    (check,) = [q["sql"] for q in captured.captured_queries if "UPPER(CAST(email AS text))" in q["sql"]]
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN " + check)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "realms_user_email_upper_idx" in plan, plan
