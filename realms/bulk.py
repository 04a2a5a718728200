"""Bulk inserts of model rows: PostgreSQL's ``COPY`` (other databases: ``bulk_create``).

A realm import or a partial import may carry a hundred thousand users; one ``INSERT`` per row
(through ``save()``) cost milliseconds each, most of it the ORM's. ``insert`` streams ready model
instances (primary keys set, fields filled) into the table, in the caller's transaction. Like
``bulk_create`` it sends no signals and calls no ``save()``: callers do what those would have
done (a cache to drop, a hook that does not apply)."""
from django.db import connection

_AUTO = ("AutoField", "BigAutoField", "SmallAutoField")


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
    with connection.cursor() as cursor:
        with cursor.cursor.copy(sql) as copy:
            for obj in objs:
                copy.write_row([f.get_db_prep_save(f.pre_save(obj, True), connection) for f in fields])
