"""``realms.rows.fetch``: rows by key read as the ORM reads them (converters, encrypted fields,
JSON), with ORDER BY and LIMIT after the condition. ``realms.rows.insert``: a new row written as
``objects.create`` writes it; ``replace``: matching rows deleted and a new one written, in one
statement on PostgreSQL."""
import pytest
from django.db import connection
from django.db.models.signals import post_save, pre_save
from django.test.utils import CaptureQueriesContext

from realms import rows
from realms.accounts import create_user
from realms.models import Credential, Realm, Role, User, UserSession
from realms.services import create_realm

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
