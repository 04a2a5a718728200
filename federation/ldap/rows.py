"""Bulk writes of imported users' rows: ``COPY`` for new rows and one pipelined ``UPDATE`` per
changed row, both skipping model instances (building 100,000 ``User`` objects cost more than the
database spent storing them). Rows carry every column of ``User`` with the model's defaults."""
import json

from django.db import connection
from django.utils import timezone

from realms.models import User

# The columns an import reads and writes, besides the id and the link.
FIELDS = ("username", "email", "email_verified", "first_name", "last_name", "enabled", "attributes",
          "required_actions")
_JSON = {"attributes", "required_actions"}


def existing(realm, usernames):
    """{username: {column: value}} of the realm's users with these names."""
    columns = ("id", "federation_link_id", *FIELDS)
    return {row[2]: dict(zip(columns, row)) for row in
            User.objects.filter(realm=realm, username__in=usernames).values_list(*columns)}


def _db(field, value):
    return json.dumps(value) if field in _JSON else value


def insert(realm, component, rows):
    """New users (dicts of FIELDS plus ``id``) linked to ``component``."""
    if not rows:
        return
    fields = [f for f in User._meta.concrete_fields]
    now = timezone.now()
    fixed = {"realm_id": realm.pk, "federation_link_id": component.pk, "created": now}
    defaults = {f.attname: f.get_default() for f in fields
                if f.attname not in fixed and f.attname not in FIELDS and f.attname != "id"}
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    table = connection.ops.quote_name(User._meta.db_table)
    with connection.cursor() as cursor:
        with cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
            for row in rows:
                values = {**defaults, **fixed, **row}
                copy.write_row([_db(f.attname, values[f.attname]) if f.attname in FIELDS
                                else (json.dumps(values[f.attname]) if f.get_internal_type() == "JSONField"
                                      else values[f.attname]) for f in fields])


def grant(role_id, user_ids):
    """The role to each of these users (new ones: a realm's default role)."""
    table = connection.ops.quote_name(User.roles.through._meta.db_table)
    with connection.cursor() as cursor:
        with cursor.cursor.copy(f"COPY {table} (user_id, role_id) FROM STDIN") as copy:
            for user_id in user_ids:
                copy.write_row([user_id, role_id])


def update(rows):
    """Changed users: (id, {column: value}) with every column of FIELDS."""
    if not rows:
        return
    table = connection.ops.quote_name(User._meta.db_table)
    sets = ", ".join(f"{connection.ops.quote_name(f)} = %s" for f in FIELDS)
    with connection.cursor() as cursor:
        cursor.executemany(f"UPDATE {table} SET {sets} WHERE id = %s",
                           [[_db(f, values[f]) for f in FIELDS] + [pk] for pk, values in rows])
