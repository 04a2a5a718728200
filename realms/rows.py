"""Model instances from one SQL query by key, and new rows written, without the ORM's setup per
query.

Hot paths read a row or a few by key: each Admin API request its realm and its caller, each
sign-in step its user, each refresh its client session, each password check the user's
credentials. ``Model.objects.raw`` spares the query compiler, but still describes the columns,
looks up a converter per column and matches the model's fields to them on every query; for the
realm's 80 columns that costs twice what PostgreSQL spends answering. ``fetch`` does that once
per model and connection. ``insert`` is the same for the rows each sign-in writes (its SSO
session, client session and authorization code) and each new user's role and password rows;
``create`` for each new user's row, signals sent; ``replace`` for the password row each password
change replaces."""
import weakref

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models.signals import post_save, pre_save

# Per connection (each thread has its own): the backend's converters are bound to it.
_plans = weakref.WeakKeyDictionary()
_inserts = weakref.WeakKeyDictionary()


def _plan(connection, model):
    plans = _plans.setdefault(connection, {})
    plan = plans.get(model)
    if plan is None:
        fields, table = model._meta.concrete_fields, model._meta.db_table
        quote = connection.ops.quote_name
        converters = []
        for i, field in enumerate(fields):
            column = field.get_col(table)
            found = connection.ops.get_db_converters(column) + field.get_db_converters(connection)
            if found:
                converters.append((i, column, found))
        plan = plans[model] = (f"SELECT {', '.join(quote(f.column) for f in fields)}", f" FROM {quote(table)} WHERE ",
                               [f.attname for f in fields], converters)
    return plan


def fetch(model, where, params, extra=None):
    """The ``model`` instances whose rows match ``where`` (the SQL after WHERE, with any ORDER BY
    and LIMIT), as the ORM would load them. ``extra``: ``(attribute, SQL, params)``, one more
    column read in the same query, its raw value set as ``attribute`` on each instance."""
    connection = connections[DEFAULT_DB_ALIAS]
    columns, source, names, converters = _plan(connection, model)
    if extra is not None:
        columns, params = f"{columns}, {extra[1]}", [*extra[2], *params]
    with connection.cursor() as cursor:
        cursor.execute(columns + source + where, params)
        found = cursor.fetchall()
    instances = []
    for row in found:
        values = list(row)
        extra_value = values.pop() if extra is not None else None
        for i, column, functions in converters:
            for convert in functions:
                values[i] = convert(values[i], column, connection)
        instance = model.from_db(connection.alias, names, values)
        if extra is not None:
            instance.__dict__[extra[0]] = extra_value
        instances.append(instance)
    return instances


def _insert(connection, instance):
    """(INSERT statement, its parameters) for the new ``instance``."""
    model = type(instance)
    plans = _inserts.setdefault(connection, {})
    plan = plans.get(model)
    if plan is None:
        fields = [f for f in model._meta.concrete_fields if not f.db_returning]
        quote = connection.ops.quote_name
        columns = ", ".join(quote(f.column) for f in fields)
        plan = plans[model] = (f"INSERT INTO {quote(model._meta.db_table)} ({columns})"
                               f" VALUES ({', '.join(['%s'] * len(fields))})", fields)
    sql, fields = plan
    return sql, [f.get_db_prep_save(f.pre_save(instance, True), connection) for f in fields]


def _written(connection, instance):
    instance._state.adding, instance._state.db = False, connection.alias
    return instance


def insert(instance):
    """Write the new ``instance``'s row, as ``Model.objects.create`` would (field defaults and
    ``auto_now_add`` included), without the save machinery: no signals, so only for models no
    receiver watches. A key the database makes (a many-to-many row's) is left to it and not read
    back: the instance's stays None."""
    connection = connections[DEFAULT_DB_ALIAS]
    with connection.cursor() as cursor:
        cursor.execute(*_insert(connection, instance))
    return _written(connection, instance)


def create(instance):
    """Save the new ``instance`` as ``save()`` saves a new row of a model without parents:
    ``pre_save`` and ``post_save`` (``created``) sent around ``insert``, whose statement costs
    less than the save machinery's compiler."""
    model = type(instance)
    pre_save.send(sender=model, instance=instance, raw=False, using=DEFAULT_DB_ALIAS, update_fields=None)
    insert(instance)
    post_save.send(sender=model, instance=instance, created=True, update_fields=None, raw=False,
                   using=DEFAULT_DB_ALIAS)
    return instance


def replace(instance, where, params):
    """Delete the rows of ``instance``'s model that match ``where`` (no collector, no signals: for
    rows nothing references and no receiver watches), then ``insert(instance)``; in one
    statement on PostgreSQL, a data-modifying WITH, whose parts all see the table as it was
    before the statement, so the DELETE never meets the new row."""
    connection = connections[DEFAULT_DB_ALIAS]
    delete_sql = f"DELETE FROM {connection.ops.quote_name(instance._meta.db_table)} WHERE {where}"
    insert_sql, values = _insert(connection, instance)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"WITH gone AS ({delete_sql}) {insert_sql}", [*params, *values])
        else:
            cursor.execute(delete_sql, params)
            cursor.execute(insert_sql, values)
    return _written(connection, instance)

