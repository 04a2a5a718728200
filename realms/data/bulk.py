"""Bulk inserts of model rows: PostgreSQL's ``COPY`` (other databases: ``bulk_create``).

A realm import or a partial import may carry a hundred thousand users; one ``INSERT`` per row
(through ``save()``) cost milliseconds each, most of it the ORM's. ``insert`` streams ready model
instances (primary keys set, fields filled) into the table, in the caller's transaction. Like
``bulk_create`` it sends no signals and calls no ``save()``: callers do what those would have
done (a cache to drop, a hook that does not apply)."""
import json

from django.db import connection

_AUTO = ("AutoField", "BigAutoField", "SmallAutoField")
# Rows written in one go past which the planner's statistics are refreshed at once: after a bulk
# import the table's statistics still describe it as it was (autovacuum comes a minute or more
# later), and a sign-in's username lookup was planned as a scan of the realm's 100,000 new users.
ANALYZE_AFTER = 1000


def insert(model, objs):
    """Write ``objs`` (instances of ``model``, not yet in the table) in one stream."""
    if not objs:
        return
    if connection.vendor != "postgresql":
        model.objects.bulk_create(objs, batch_size=500)
        return
    # A generated key (the auto ``id`` of a many-to-many table) is left to the database.
    fields = [f for f in model._meta.concrete_fields if not (f.primary_key and f.get_internal_type() in _AUTO)]
    quote = connection.ops.quote_name
    sql = f"COPY {quote(model._meta.db_table)} ({', '.join(quote(f.column) for f in fields)}) FROM STDIN"
    # The attribute values as they are (COPY's text form takes them), JSON as text: each field's
    # get_db_prep_save cost more than the database spent storing the row.
    columns = [(f.attname, _json(f) if f.get_internal_type() == "JSONField" else None) for f in fields]
    with connection.cursor() as cursor:
        with cursor.cursor.copy(sql) as copy:
            for obj in objs:
                values = obj.__dict__
                copy.write_row([values[name] if convert is None else convert(values[name]) for name, convert in columns])


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
