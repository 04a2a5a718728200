"""``realms.data.rows.fetch``: rows by key read as the ORM reads them (converters, encrypted fields,
JSON), with ORDER BY and LIMIT after the condition. ``realms.data.rows.insert``: a new row written as
``objects.create`` writes it; ``replace``: matching rows deleted and a new one written, in one
statement on PostgreSQL. ``batch``: those writes sent together at the end of a transaction, as
the whole transaction where nothing else ran (read from libpq's own trace). ``ahead``: a read
sent with the next ``fetch``."""
import re
import zlib
from pathlib import Path

import pytest
from django.db import (
    DEFAULT_DB_ALIAS,
    IntegrityError,
    InterfaceError,
    OperationalError,
    connection,
    connections,
    transaction,
)
from django.db.models.signals import post_save, pre_save
from django.test.utils import CaptureQueriesContext

from bench.libpq_trace import libpq_trace, queries
from realms.data import rows
from realms.models import Credential, Realm, Role, User, UserSession
from realms.representation.services import create_realm
from realms.users.accounts import create_user

pytestmark = pytest.mark.django_db


def _fields(instance):
    return {f.attname: getattr(instance, f.attname) for f in type(instance)._meta.concrete_fields}


def test_a_realm_is_read_as_the_orm_reads_it():
    realm = create_realm("acme")
    realm.smtp_server = {"host": "mail", "password": "s3cret"}  # encrypted at rest
    realm.attributes = {"k": "v"}
    realm.save()
    [fetched] = rows.fetch(Realm, "name = %s", ["acme"])
    assert _fields(fetched) == _fields(Realm.objects.get(name="acme"))
    assert fetched.smtp_server["password"] == "s3cret" and not fetched._state.adding
    assert rows.fetch(Realm, "name = %s", ["nobody"]) == []


def test_order_and_limit_follow_the_condition():
    user = create_user(create_realm("acme"), "ann")
    for priority in (1, 3, 2):
        Credential.objects.create(user=user, type="otp", secret_data="{}", credential_data="{}", priority=priority)
    found = rows.fetch(Credential, "user_id = %s ORDER BY priority DESC LIMIT 2", [user.pk])
    assert [c.priority for c in found] == [3, 2]
    assert _fields(found[0]) == _fields(Credential.objects.get(user=user, priority=3))


def test_an_inserted_row_is_what_create_would_write():
    realm = create_realm("acme")
    user = create_user(realm, "ann")
    inserted = rows.insert(UserSession(realm=realm, user=user, auth_methods=["pwd", "otp"], notes={"k": "v"},
                                       ip_address="192.0.2.1"))
    assert not inserted._state.adding and inserted.id and inserted.started  # the fields' defaults
    created = UserSession.objects.create(realm=realm, user=user, auth_methods=["pwd", "otp"], notes={"k": "v"},
                                         ip_address="192.0.2.1")
    stored = UserSession.objects.get(pk=inserted.pk)
    assert _fields(stored) == _fields(inserted)
    assert {k: v for k, v in _fields(stored).items() if k not in ("id", "started", "last_refresh", "auth_time")} \
        == {k: v for k, v in _fields(created).items() if k not in ("id", "started", "last_refresh", "auth_time")}


def test_a_key_the_database_makes_is_left_to_it():
    realm = create_realm("acme")
    user, role = create_user(realm, "ann"), Role.objects.create(realm=realm, name="r")
    inserted = rows.insert(User.roles.through(user=user, role=role))
    assert inserted.pk is None and not inserted._state.adding
    assert role in user.roles.all()


def test_replace_deletes_the_matching_rows_and_writes_the_new_one_in_one_statement():
    user = create_user(create_realm("acme"), "ann")
    old = [Credential.objects.create(user=user, type=t, secret_data="old") for t in ("password", "password-history")]
    kept = Credential.objects.create(user=user, type="otp", secret_data="{}", credential_data="{}")
    with CaptureQueriesContext(connection) as queries:
        new = rows.replace(Credential(user=user, type="password", secret_data="new"),
                           "user_id = %s AND type IN (%s, %s)", [user.pk, "password", "password-history"])
    assert len(queries) == (1 if connection.vendor == "postgresql" else 2)
    assert not new._state.adding
    assert set(Credential.objects.filter(user=user).values_list("pk", "secret_data")) == {
        (new.pk, "new"), (kept.pk, "{}")}
    assert not Credential.objects.filter(pk__in=[c.pk for c in old]).exists()


def test_create_saves_as_save_does_signals_included():
    realm = create_realm("acme")
    seen = []

    def receiver(signal):
        return lambda sender, instance, **kwargs: seen.append((signal, instance.username, kwargs.get("created"),
                                                              instance._state.adding))

    before, after = receiver("pre_save"), receiver("post_save")
    pre_save.connect(before, sender=User)
    post_save.connect(after, sender=User)
    try:
        created = rows.create(User(realm=realm, username="ann", attributes={"k": ["v"]}))
    finally:
        pre_save.disconnect(before, sender=User)
        post_save.disconnect(after, sender=User)
    assert seen == [("pre_save", "ann", None, True), ("post_save", "ann", True, False)]
    saved = User(realm=realm, username="bea", attributes={"k": ["v"]})
    super(User, saved).save()  # Django's own save
    differs = {"id", "username", "created"}
    assert {k: v for k, v in _fields(User.objects.get(pk=created.pk)).items() if k not in differs} == \
        {k: v for k, v in _fields(User.objects.get(pk=saved.pk)).items() if k not in differs}


def _password(user, secret):
    return rows.replace(Credential(user=user, type="password", secret_data=secret),
                        "user_id = %s AND type = %s", [user.pk, "password"])


def test_a_batch_sends_its_writes_together_at_its_end():
    realm = create_realm("acme")
    with CaptureQueriesContext(connection) as queries:
        with rows.batch():
            user = rows.create(User(realm=realm, username="ann"))
            rows.insert(User.roles.through(user=user, role_id=realm.default_role_id))
            _password(user, "new")
            assert not [q for q in queries.captured_queries if q["sql"].startswith(("INSERT", "WITH"))]
    sent = [q["sql"] for q in queries.captured_queries if q["sql"].startswith(("INSERT", "DELETE"))]
    if connection.vendor == "postgresql":  # one query string
        [joined] = sent
        assert [s.split()[0] for s in joined.split(";\n")] == ["INSERT", "INSERT", "WITH"]
    else:  # one by one, in order, the password's DELETE before its INSERT
        assert [s.split()[0] for s in sent] == ["INSERT", "INSERT", "DELETE", "INSERT"]
    stored = User.objects.get(pk=user.pk)
    assert stored.username == "ann" and list(stored.roles.all()) == [realm.default_role]
    assert Credential.objects.get(user=user).secret_data == "new"


def test_a_statement_in_a_batch_first_sends_what_waits():
    realm = create_realm("acme")
    with rows.batch():
        user = rows.create(User(realm=realm, username="ann"))
        _password(user, "new")
        assert User.objects.filter(pk=user.pk).exists()  # a read sees the rows written before it
        _password(user, "newer")  # waits again, and replaces what was sent
    assert list(Credential.objects.filter(user=user).values_list("secret_data", flat=True)) == ["newer"]


def test_an_error_in_a_batch_is_raised_at_its_end_and_nothing_is_kept():
    realm = create_realm("acme")
    create_user(realm, "taken")
    with pytest.raises(IntegrityError):
        with rows.batch():
            user = rows.create(User(realm=realm, username="ann"))
            rows.create(User(realm=realm, username="taken"))  # the realm's unique username
            after = rows.create(User(realm=realm, username="bea"))
    assert not User.objects.filter(pk__in=[user.pk, after.pk]).exists()
    assert User.objects.filter(realm=realm, username="taken").count() == 1


def test_a_batch_left_by_an_exception_sends_nothing():
    realm = create_realm("acme")
    with CaptureQueriesContext(connection) as queries, pytest.raises(ValueError):
        with rows.batch():
            rows.create(User(realm=realm, username="ann"))
            raise ValueError
    assert not [q for q in queries.captured_queries if "INSERT" in q["sql"]]
    assert not User.objects.filter(realm=realm, username="ann").exists()


@pytest.fixture
def traced():
    """What this connection has sent, from libpq's trace: each query's statements' first words."""
    connection.ensure_connection()
    with libpq_trace(connection.connection.pgconn) as text:
        yield lambda: [[statement.split()[0] for statement in query.split(";\n")] for query in queries(text())]


@pytest.mark.postgresql  # the one query string
@pytest.mark.django_db(transaction=True)
def test_a_batch_is_one_query_inside_djangos_transaction(traced):
    realm = create_realm("batch-alone")
    role = realm.default_role
    create_user(realm, "first")  # whether the realm registers users in a directory, read and kept
    start = len(traced())
    with rows.batch():
        user = rows.create(User(realm=realm, username="ann"))
        rows.insert(User.roles.through(user=user, role=role))
        _password(user, "new")
    assert traced()[start:] == [["BEGIN"], ["INSERT", "INSERT", "WITH"], ["COMMIT"]]
    assert list(User.objects.get(pk=user.pk).roles.all()) == [role]

    start = len(traced())
    with pytest.raises(IntegrityError):
        with rows.batch():
            other = rows.create(User(realm=realm, username="bea"))
            rows.create(User(realm=realm, username="ann"))  # fails in the middle of the batch
            after = rows.create(User(realm=realm, username="dot"))
    assert traced()[start:] == [["BEGIN"], ["INSERT", "INSERT", "INSERT"], ["ROLLBACK"]]
    assert not User.objects.filter(pk__in=[other.pk, after.pk]).exists()

    start = len(traced())
    with rows.batch():
        rows.create(User(realm=realm, username="cid"))
        transaction.set_rollback(True)  # as a step that refuses after all
    assert traced()[start:] == []
    assert not User.objects.filter(realm=realm, username="cid").exists()


@pytest.mark.postgresql  # the one query string
@pytest.mark.django_db(transaction=True)
def test_a_batch_whose_connection_drops_writes_nothing_and_the_next_request_reconnects():
    """When the server drops the connection, the batch's query never ran (nothing written, no
    half), and the next statement opens a new connection in Django's ordinary transaction mode."""
    realm = create_realm("batch-dropped")
    create_user(realm, "first")
    connection.ensure_connection()
    pid = connection.connection.info.backend_pid
    other = connections.create_connection(DEFAULT_DB_ALIAS)
    try:
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
    finally:
        other.close()
    with pytest.raises((OperationalError, InterfaceError)):
        with rows.batch():
            lost = rows.create(User(realm=realm, username="lost"))
            _password(lost, "x")
    connection.close_if_unusable_or_obsolete()
    assert not User.objects.filter(realm=realm, username="lost").exists()
    assert connection.get_autocommit() and not connection.in_atomic_block
    with rows.batch():
        rows.create(User(realm=realm, username="next"))
    assert User.objects.filter(realm=realm, username="next").exists()


@pytest.mark.postgresql  # the one query string
@pytest.mark.django_db(transaction=True)
def test_a_batch_that_reads_goes_on_as_a_transaction(traced):
    realm = create_realm("batch-reads")
    create_user(realm, "first")
    start = len(traced())
    with pytest.raises(IntegrityError):
        with rows.batch():
            user = rows.create(User(realm=realm, username="ann"))
            assert User.objects.filter(realm=realm).count() == 2  # sends what waits first, after BEGIN
            rows.create(User(realm=realm, username="ann"))
    assert traced()[start:] == [["BEGIN"], ["INSERT"], ["SELECT"], ["INSERT"], ["ROLLBACK"]]
    assert not User.objects.filter(pk=user.pk).exists()  # the row sent before the read is undone too


def _sent(queries):
    return [q["sql"].count(";\n") + 1 for q in queries.captured_queries if q["sql"].startswith("SELECT")]


def test_a_read_ahead_goes_with_the_next_fetch():
    user = create_user(create_realm("acme"), "ann")
    with CaptureQueriesContext(connection) as queries:
        with rows.ahead(Realm, "name = %s", ["acme"]) as realm_row:
            [fetched] = rows.fetch(User, "id = %s", [user.pk])
            [realm] = realm_row.result()
    assert fetched.pk == user.pk and _fields(realm) == _fields(Realm.objects.get(name="acme"))
    assert _sent(queries) == ([2] if connection.vendor == "postgresql" else [1, 1])  # SQLite: one at a time


def test_a_read_ahead_no_fetch_took_is_read_when_asked_and_never_sent_again():
    user = create_user(create_realm("acme"), "ann")
    with CaptureQueriesContext(connection) as queries:
        with rows.ahead(Realm, "name = %s", ["acme"]) as realm_row:
            assert [r.name for r in realm_row.result()] == ["acme"]
            rows.fetch(User, "id = %s", [user.pk])
        with rows.ahead(Realm, "name = %s", ["acme"]):
            pass  # left unread
        rows.fetch(User, "id = %s", [user.pk])
    assert _sent(queries) == [1, 1, 1]


# --- bulk writes ---------------------------------------------------------------------------------

def test_bulk_writes_store_what_the_orm_would(monkeypatch):
    realm = create_realm("acme")
    made = [User(realm=realm, username=f"u{i}", attributes={"k": [str(i)]}, required_actions=["VERIFY_EMAIL"])
            for i in range(3)]
    rows.insert_many(User, made)
    assert {u.username: (u.attributes, u.required_actions) for u in User.objects.filter(realm=realm)} == {
        f"u{i}": ({"k": [str(i)]}, ["VERIFY_EMAIL"]) for i in range(3)}
    through = User.roles.through
    rows.insert_values(through, [through._meta.get_field("user"), through._meta.get_field("role")],
                       [[u.pk, realm.default_role_id] for u in made])
    assert all(list(u.roles.all()) == [realm.default_role] for u in made)
    fields = [User._meta.get_field("email"), User._meta.get_field("attributes")]
    rows.update_values(User, fields, [(made[0].pk, ["u0@example.org", {"k": ["new"]}])])
    changed = User.objects.get(pk=made[0].pk)
    assert (changed.email, changed.attributes) == ("u0@example.org", {"k": ["new"]})
    rows.refresh_statistics(rows.ANALYZE_AFTER, User)  # PostgreSQL's ANALYZE; nothing on SQLite

    def no_cursor():
        raise AssertionError("nothing to write sends nothing")

    monkeypatch.setattr(connection, "cursor", no_cursor)
    rows.insert_many(User, [])
    rows.insert_values(through, fields, [])
    rows.update_values(User, fields, [])


@pytest.mark.postgresql  # COPY goes past Django's cursor
def test_a_copy_in_a_batch_sends_what_waits_first(traced):
    realm = create_realm("acme")
    start = len(traced())
    with rows.batch():
        user = rows.insert(User(realm=realm, username="ann"))  # no receiver reads in between
        through = User.roles.through
        rows.insert_values(through, [through._meta.get_field("user"), through._meta.get_field("role")],
                           [[user.pk, realm.default_role_id]])
    assert [q for q in traced()[start:] if q[0] != "SAVEPOINT" and q[0] != "RELEASE"] == [["INSERT"], ["COPY"]]
    assert list(user.roles.all()) == [realm.default_role]


def test_every_new_user_is_written_by_create_however_save_is_asked(monkeypatch):
    """``User.save()`` of a new row takes one path: ``rows.create``, whatever its arguments."""
    realm = create_realm("acme")
    created = []
    real = rows.create
    monkeypatch.setattr(rows, "create", lambda instance: created.append(instance.username) or real(instance))
    User(realm=realm, username="ann").save()
    User.objects.create(realm=realm, username="bea")  # save(force_insert=True, using=...)
    User(realm=realm, username="cid").save(force_insert=True)
    bea = User.objects.get(realm=realm, username="bea")
    bea.first_name = "Bea"
    bea.save()  # an existing row: Django's update
    assert created == ["ann", "bea", "cid"]
    assert User.objects.get(pk=bea.pk).first_name == "Bea"


# The fence: what reaches past Django's cursor into psycopg, or joins statements into one query string.
_PAST_THE_CURSOR = re.compile(r"cursor\.cursor\b|\.autocommit\s*=|transaction_status|\.pgconn\b|COPY \{|\";\\n\"\.join")


def test_no_module_but_this_one_reaches_past_djangos_cursor():
    root = Path(__file__).resolve().parents[2]
    found = sorted(
        str(path.relative_to(root)) for app in ("idp", "realms", "oidc", "saml", "webhooks", "federation", "ambassador")
        for path in (root / app).rglob("*.py")
        if "migrations" not in path.parts and _PAST_THE_CURSOR.search(path.read_text(encoding="utf-8")))
    # The database backend is psycopg's other user: its health check polls the socket.
    assert found == ["idp/postgresql/base.py", "realms/data/rows.py"]


def test_no_module_but_these_asks_which_database_it_runs_on():
    root = Path(__file__).resolve().parents[2]
    asking = re.compile(r"connection\.vendor\b|connection\.features\.")
    found = sorted(
        str(path.relative_to(root)) for app in ("idp", "realms", "oidc", "saml", "webhooks", "federation", "ambassador")
        for path in (root / app).rglob("*.py")
        if "migrations" not in path.parts and asking.search(path.read_text(encoding="utf-8")))
    # The reads whose PostgreSQL form stays beside the code that builds it (rows' docstring), and
    # the statement spans, which name the database (OpenTelemetry's db.system.name) and branch on
    # nothing.
    assert found == ["idp/tracing.py", "realms/data/rows.py", "realms/data/user_queries.py", "realms/models/users.py"]


@pytest.mark.postgresql  # an advisory lock of the session; dev mode's one process takes no lock
@pytest.mark.django_db(transaction=True)
def test_a_session_lock_is_held_by_one_connection_until_its_block_ends():
    def _ids(*parts):  # the key the lock takes: 31-bit checksums of the names (PostgreSQL's int4 pair)
        return [zlib.crc32(part.encode()) & 0x7FFFFFFF for part in parts]

    other = connections.create_connection(DEFAULT_DB_ALIAS)

    def other_gets_it():
        with other.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", _ids("space", "key"))
            got = cursor.fetchone()[0]
            if got:
                cursor.execute("SELECT pg_advisory_unlock(%s, %s)", _ids("space", "key"))
        return got

    try:
        with rows.session_lock("space", "key") as locked:
            assert locked and not other_gets_it()
            with other.cursor() as cursor:  # the other holds another key, and a second taker sees it held
                cursor.execute("SELECT pg_advisory_lock(%s, %s)", _ids("space", "other"))
            with rows.session_lock("space", "other") as second:
                assert not second
        assert other_gets_it()
    finally:
        other.close()
