"""The count of each realm's listed users, kept by the database (PostgreSQL only; see decision 0041).

``realms_user_tally`` holds, per realm, the number of users who are not service accounts (the Admin
API's listing) in up to 16 rows, which sum to it. Triggers keep it in the writing transaction:
inserted and deleted rows counted per statement from its transition table (a bulk ``COPY`` is one
statement), a user who moves in or out of the listing (realm or service-account link changed) per
row, a ``TRUNCATE`` and a deleted realm. Each transaction adds to the row of its own shard (its
transaction id modulo 16), so users created at the same time do not wait on one row. No foreign
key: Django's ``flush`` truncates only its models' tables (the ``TRUNCATE`` trigger empties this
one), and a realm's users are deleted before the realm.

The count index of 0011 is dropped: the tally answers what it served."""
from django.db import migrations

_SHARDS = 16
_ADD = "ON CONFLICT (realm_id, shard) DO UPDATE SET listed = t.listed + EXCLUDED.listed"

_CREATE = [
    "CREATE TABLE realms_user_tally (realm_id varchar(64) NOT NULL, shard smallint NOT NULL,"
    " listed bigint NOT NULL, PRIMARY KEY (realm_id, shard))",
    # One function for the INSERT and DELETE statement triggers: each names its transition table
    # "changed". The upserts are PL/pgSQL's own statements, whose plans it keeps.
    f"""CREATE FUNCTION realms_user_tally_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO realms_user_tally AS t (realm_id, shard, listed)
        SELECT realm_id, mod(txid_current(), {_SHARDS}), CASE TG_OP WHEN 'INSERT' THEN count(*) ELSE -count(*) END
        FROM changed WHERE service_account_client_id IS NULL GROUP BY realm_id ORDER BY realm_id
        {_ADD};
        RETURN NULL;
    END $$""",
    f"""CREATE FUNCTION realms_user_tally_moved() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO realms_user_tally AS t (realm_id, shard, listed)
        SELECT realm_id, mod(txid_current(), {_SHARDS}), n
        FROM (VALUES (OLD.realm_id, OLD.service_account_client_id, -1), (NEW.realm_id, NEW.service_account_client_id, 1))
            AS moved (realm_id, service_account_client_id, n)
        WHERE service_account_client_id IS NULL ORDER BY realm_id
        {_ADD};
        RETURN NULL;
    END $$""",
    """CREATE FUNCTION realms_user_tally_truncated() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        DELETE FROM realms_user_tally;
        RETURN NULL;
    END $$""",
    """CREATE FUNCTION realms_user_tally_realm_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        DELETE FROM realms_user_tally WHERE realm_id IN (SELECT id FROM gone);
        RETURN NULL;
    END $$""",
    "CREATE TRIGGER realms_user_tally_insert AFTER INSERT ON realms_user REFERENCING NEW TABLE AS changed"
    " FOR EACH STATEMENT EXECUTE FUNCTION realms_user_tally_changed()",
    "CREATE TRIGGER realms_user_tally_delete AFTER DELETE ON realms_user REFERENCING OLD TABLE AS changed"
    " FOR EACH STATEMENT EXECUTE FUNCTION realms_user_tally_changed()",
    "CREATE TRIGGER realms_user_tally_update AFTER UPDATE OF realm_id, service_account_client_id ON realms_user"
    " FOR EACH ROW WHEN (OLD.realm_id IS DISTINCT FROM NEW.realm_id"
    " OR (OLD.service_account_client_id IS NULL) <> (NEW.service_account_client_id IS NULL))"
    " EXECUTE FUNCTION realms_user_tally_moved()",
    "CREATE TRIGGER realms_user_tally_truncate AFTER TRUNCATE ON realms_user"
    " FOR EACH STATEMENT EXECUTE FUNCTION realms_user_tally_truncated()",
    "CREATE TRIGGER realms_user_tally_realm_delete AFTER DELETE ON realms_realm REFERENCING OLD TABLE AS gone"
    " FOR EACH STATEMENT EXECUTE FUNCTION realms_user_tally_realm_deleted()",
    # The users there already, counted after the triggers exist: creating them locked the table
    # against writes until this transaction ends, so none is missed or counted twice.
    "INSERT INTO realms_user_tally (realm_id, shard, listed) SELECT realm_id, 0, count(*) FROM realms_user"
    " WHERE service_account_client_id IS NULL GROUP BY realm_id",
    "DROP INDEX IF EXISTS realms_user_count_idx",
]

_DROP = [
    *(f"DROP TRIGGER IF EXISTS realms_user_tally_{op} ON realms_user" for op in ("insert", "delete", "update", "truncate")),
    "DROP TRIGGER IF EXISTS realms_user_tally_realm_delete ON realms_realm",
    *(f"DROP FUNCTION IF EXISTS realms_user_tally_{name}" for name in ("changed", "moved", "truncated", "realm_deleted")),
    "DROP TABLE IF EXISTS realms_user_tally",
    "CREATE INDEX IF NOT EXISTS realms_user_count_idx ON realms_user (realm_id) WHERE service_account_client_id IS NULL",
]


def _run(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":  # SQLite (development) counts and scans
            for sql in statements:
                schema_editor.execute(sql)
    return run


class Migration(migrations.Migration):
    dependencies = [("realms", "0013_merge_wave6")]

    operations = [migrations.RunPython(_run(_CREATE), _run(_DROP), elidable=False)]
