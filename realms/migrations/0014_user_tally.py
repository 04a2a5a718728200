"""The count of each realm's listed users, kept by the database (PostgreSQL only; see decision 0041).

``realms_user_tally`` holds, per realm, rows whose ``listed`` sum to the number of its users who are
not service accounts (the Admin API's listing). Triggers keep it in the writing transaction:
inserted and deleted rows counted per statement from its transition table (a bulk ``COPY`` is one
statement), a user who moves in or out of the listing (realm or service-account link changed) per
row, a ``TRUNCATE`` and a deleted realm. Each change is a new row, never an update, so writers
never wait on each other's tally, however long their transactions. Every 32nd row folds the
realm's rows into one: it takes those no other transaction is folding (``SKIP LOCKED``) and writes
their sum in the same transaction. No foreign key: Django's ``flush`` truncates only its models'
tables (the ``TRUNCATE`` trigger empties this one), and a realm's users are deleted before the realm.

The count index of 0011 is dropped: the tally answers what it served."""
from django.db import migrations

_DUE = "mod(id, 32) = 0"  # every 32nd row folds its realm's rows

_CREATE = [
    "CREATE TABLE realms_user_tally (realm_id varchar(64) NOT NULL, id bigint GENERATED ALWAYS AS IDENTITY,"
    " listed bigint NOT NULL, PRIMARY KEY (realm_id, id))",
    """CREATE FUNCTION realms_user_tally_fold(realm varchar) RETURNS void LANGUAGE plpgsql AS $$
    BEGIN
        WITH folded AS (
            DELETE FROM realms_user_tally WHERE realm_id = realm AND id IN (
                SELECT id FROM realms_user_tally WHERE realm_id = realm FOR UPDATE SKIP LOCKED)
            RETURNING listed)
        INSERT INTO realms_user_tally (realm_id, listed) SELECT realm, sum(listed) FROM folded HAVING count(*) > 0;
    END $$""",
    # One function for the INSERT and DELETE statement triggers: each names its transition table
    # "changed". PL/pgSQL keeps the plans of its statements.
    f"""CREATE FUNCTION realms_user_tally_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE due varchar[];
    BEGIN
        WITH added AS (
            INSERT INTO realms_user_tally (realm_id, listed)
            SELECT realm_id, CASE TG_OP WHEN 'INSERT' THEN count(*) ELSE -count(*) END
            FROM changed WHERE service_account_client_id IS NULL GROUP BY realm_id
            RETURNING realm_id, id)
        SELECT array_agg(realm_id) INTO due FROM added WHERE {_DUE};
        PERFORM realms_user_tally_fold(realm) FROM unnest(due) AS realm;
        RETURN NULL;
    END $$""",
    f"""CREATE FUNCTION realms_user_tally_moved() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE due varchar[];
    BEGIN
        WITH added AS (
            INSERT INTO realms_user_tally (realm_id, listed)
            SELECT realm_id, n FROM (VALUES (OLD.realm_id, OLD.service_account_client_id, -1),
                                            (NEW.realm_id, NEW.service_account_client_id, 1))
                AS moved (realm_id, service_account_client_id, n)
            WHERE service_account_client_id IS NULL
            RETURNING realm_id, id)
        SELECT array_agg(realm_id) INTO due FROM added WHERE {_DUE};
        PERFORM realms_user_tally_fold(realm) FROM unnest(due) AS realm;
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
    "INSERT INTO realms_user_tally (realm_id, listed) SELECT realm_id, count(*) FROM realms_user"
    " WHERE service_account_client_id IS NULL GROUP BY realm_id",
    "DROP INDEX IF EXISTS realms_user_count_idx",
]

_DROP = [
    *(f"DROP TRIGGER IF EXISTS realms_user_tally_{op} ON realms_user" for op in ("insert", "delete", "update", "truncate")),
    "DROP TRIGGER IF EXISTS realms_user_tally_realm_delete ON realms_realm",
    *(f"DROP FUNCTION IF EXISTS realms_user_tally_{name}" for name in ("changed", "moved", "truncated", "realm_deleted",
                                                                       "fold")),
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
