"""Seed a realm with N users in bulk (PostgreSQL COPY), as a migration of a large directory would
leave it: username, e-mail, names, the realm's default role. Then VACUUM ANALYZE, so the planner
and the visibility map are what a live database has.
Usage: seed.py REALM N"""
import datetime
import json
import os
import sys
import uuid

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "idp.settings.prod")
django.setup()

from django.db import connection  # noqa: E402

from realms.models import Realm, User  # noqa: E402
from realms.representation.services import create_realm  # noqa: E402

name, count = sys.argv[1], int(sys.argv[2])
realm = Realm.objects.filter(name=name).first() or create_realm(name)
now = datetime.datetime.now(datetime.UTC)
fields = [f for f in User._meta.concrete_fields]
columns = [f.column for f in fields]
ID = [f.name for f in fields].index("id")


def row(i):
    values = {"id": str(uuid.uuid4()), "realm": realm.pk, "username": f"user{i:07d}",
              "email": f"user{i:07d}@bench.test", "email_verified": True, "first_name": f"First{i}",
              "last_name": f"Last{i}", "enabled": True, "attributes": "{}", "federation_link": None,
              "service_account_client": None, "required_actions": "[]", "not_before": 0, "created": now}
    return [values[f.name] if f.name in values else json.dumps(f.get_default()) if f.get_internal_type() == "JSONField"
            else f.get_default() for f in fields]


ids = []
with connection.cursor() as cursor:
    raw = cursor.cursor
    with raw.copy(f'COPY "{User._meta.db_table}" ({", ".join(columns)}) FROM STDIN') as copy:
        for i in range(count):
            values = row(i)
            ids.append(values[ID])
            copy.write_row(values)
    through = User.roles.through
    with raw.copy(f'COPY "{through._meta.db_table}" (user_id, role_id) FROM STDIN') as copy:
        for user_id in ids:
            copy.write_row((user_id, realm.default_role_id))
connection.commit() if not connection.get_autocommit() else None
with connection.cursor() as cursor:
    cursor.execute(f'VACUUM ANALYZE "{User._meta.db_table}"')
    cursor.execute(f'VACUUM ANALYZE "{User.roles.through._meta.db_table}"')
print(f"seeded {count} users into realm {name}")
