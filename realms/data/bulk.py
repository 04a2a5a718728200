"""Bulk writes of model rows: PostgreSQL's ``COPY`` (other databases: a prepared ``INSERT`` per row).

A realm import or a partial import may carry a hundred thousand users; one ``INSERT`` per row
(through ``save()``) cost milliseconds each, most of it the ORM's. ``insert`` streams ready model
instances (primary keys set, fields filled) into the table, ``insert_rows`` plain values (a
directory's import builds no instances), in the caller's transaction. Like ``bulk_create`` they
send no signals and call no ``save()``: callers do what those would have done (a cache to drop, a
hook that does not apply)."""
import json

from django.db import connection

_AUTO = ("AutoField", "BigAutoField", "SmallAutoField")
# Rows written in one go past which the planner's statistics are refreshed at once: after a bulk
# import the table's statistics still describe it as it was (autovacuum comes a minute or more
# later), and a sign-in's username lookup was planned as a scan of the realm's 100,000 new users.
ANALYZE_AFTER = 1000


def insert(model, objs):
    """Write ``objs`` (instances of ``model``, not yet in the table) in one stream."""
    # A generated key (the auto ``id`` of a many-to-many table) is left to the database.
    fields = [f for f in model._meta.concrete_fields if not (f.primary_key and f.get_internal_type() in _AUTO)]
    names = [f.attname for f in fields]
    insert_rows(model, fields, ([obj.__dict__[name] for name in names] for obj in objs))


def insert_rows(model, fields, rows):
    """Write ``rows`` (sequences of attribute values, one per field of ``fields``, JSON as Python
    values) into ``model``'s table in one stream: PostgreSQL's ``COPY``; elsewhere (dev mode's
    SQLite) one prepared ``INSERT`` run for every row."""
    quote = connection.ops.quote_name
    table, columns = quote(model._meta.db_table), ", ".join(quote(f.column) for f in fields)
    if connection.vendor != "postgresql":
        marks = ", ".join(["%s"] * len(fields))
        with connection.cursor() as cursor:
            cursor.executemany(f"INSERT INTO {table} ({columns}) VALUES ({marks})",
                               [[f.get_db_prep_save(v, connection) for f, v in zip(fields, row)] for row in rows])
        return
    # The values as they are (COPY's text form takes them), JSON as text: each field's
    # get_db_prep_save cost more than the database spent storing the row.
    json_fields = [_json(f) if f.get_internal_type() == "JSONField" else None for f in fields]
    with connection.cursor() as cursor:
        with cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row([v if convert is None else convert(v) for v, convert in zip(row, json_fields)])


def update_rows(model, fields, rows):
    """Set ``fields`` (model fields) of existing rows: ``rows`` are (primary key, [values]), in one
    prepared ``UPDATE`` run for every row (pipelined by psycopg)."""
    quote = connection.ops.quote_name
    sets = ", ".join(f"{quote(f.column)} = %s" for f in fields)
    with connection.cursor() as cursor:
        cursor.executemany(f"UPDATE {quote(model._meta.db_table)} SET {sets} WHERE {quote(model._meta.pk.column)} = %s",
                           [[f.get_db_prep_save(v, connection) for f, v in zip(fields, values)] + [pk]
                            for pk, values in rows])


def _json(field):
    return lambda value: json.dumps(value, cls=field.encoder)


def refresh_statistics(written, *models):
    """``ANALYZE`` the tables of ``models`` (PostgreSQL) when ``written`` rows went into them: in
    the caller's transaction, whose own rows the sample counts."""
    if written < ANALYZE_AFTER or connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        for model in models:
            cursor.execute(f"ANALYZE {connection.ops.quote_name(model._meta.db_table)}")
