"""Indexes for the Admin API's user queries at a million users (PostgreSQL only; see decision 0035).

Each index is built on the very expression Django's lookups put in the SQL: ``istartswith`` and
``iexact`` compare ``UPPER("col"::text)``, so a btree on that expression with ``text_pattern_ops``
serves prefixes and exact matches under any collation; ``icontains`` and ``iendswith`` use a
trigram index on the same expression. The listing (a page of usernames) and the count read partial
indexes of the users who are not service accounts (the listing's in username order; the count's
on the realm alone, small since btree deduplicates its one key) without visiting the table.
The indexes are not declared in the models: Django's ``Upper()`` index expression leaves the
``::text`` cast out, and the planner would not match it."""
from django.db import migrations

_SEARCHED = ("username", "email", "first_name", "last_name")

_CREATE = [
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    "CREATE INDEX realms_user_list_idx ON realms_user (realm_id, username) WHERE service_account_client_id IS NULL",
    "CREATE INDEX realms_user_count_idx ON realms_user (realm_id) WHERE service_account_client_id IS NULL",
    *(f"CREATE INDEX realms_user_{col}_upper_idx ON realms_user (realm_id, upper({col}::text) text_pattern_ops)"
      for col in _SEARCHED),
    *(f"CREATE INDEX realms_user_{col}_trgm_idx ON realms_user USING gin (upper({col}::text) gin_trgm_ops)"
      for col in _SEARCHED),
]

_DROP = [
    "DROP INDEX IF EXISTS realms_user_list_idx",
    "DROP INDEX IF EXISTS realms_user_count_idx",
    *(f"DROP INDEX IF EXISTS realms_user_{col}_{kind}_idx" for col in _SEARCHED for kind in ("upper", "trgm")),
]


def _run(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":  # SQLite (development) scans its small tables
            for sql in statements:
                schema_editor.execute(sql)
    return run


class Migration(migrations.Migration):
    dependencies = [("realms", "0010_merge_wave5")]

    operations = [migrations.RunPython(_run(_CREATE), _run(_DROP), elidable=False)]
