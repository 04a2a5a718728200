"""The project's raw SQL: model rows read by key and written without the ORM's setup per query,
write batches, the bulk writes of imports, and the other statements only PostgreSQL has, each
with its portable path. (Two reads keep their PostgreSQL form beside the code that builds them,
with their SQLite form: the user search's trigram index in ``user_queries`` and the effective
role ids read as one array in ``realms.models.users``.)

The contract (tests/realms/test_rows.py states it; the suite runs on both databases):

- The same call has the same outcome on PostgreSQL (production) and on SQLite (dev mode): the
  same rows written or found, the same errors. Only the round trips differ. PostgreSQL gets
  several statements in one query string, a data-modifying ``WITH``, ``COPY``, ``ANALYZE``, JSON
  containment and advisory locks; SQLite gets the statements one by one, a ``DELETE`` then an
  ``INSERT``, one prepared ``INSERT`` per row, no ``ANALYZE``, the JSON matched in Python, and no
  lock (dev mode is one process). Callers never ask which database they run on.
- Everything runs in the caller's transaction and nothing here commits or switches psycopg's
  transaction mode. A ``batch`` sends its statements as one query string inside Django's own
  transaction (docs/decisions/0053-write-batches.md, 0060-one-raw-sql-module-tested-on-both-databases.md).
- No other module reaches past Django's cursor (psycopg's ``COPY``, autocommit or transaction
  status) or joins statements into one query string. The database backend ``idp.postgresql``
  is the one other place that touches psycopg.

Hot paths read a row or a few by key: each Admin API request its realm and its caller, each
sign-in step its user, each refresh its client session, each password check the user's
credentials. ``Model.objects.raw`` spares the query compiler, but still describes the columns,
looks up a converter per column and matches the model's fields to them on every query; for the
realm's 80 columns that costs twice what PostgreSQL spends answering. ``fetch`` does that once
per model and connection. ``insert`` is the same for the rows each sign-in writes (its SSO
session, client session and authorization code) and each new user's role and password rows;
``create`` for each new user's row, signals sent; ``replace`` for the password row each password
change replaces. Inside ``batch()`` those three write nothing at once: their statements are sent
together when the batch ends (docs/decisions/0053-write-batches.md). ``upsert`` writes at once (it
answers with the row): a client session a sign-in writes new or changes, one statement where a
read and a write were.

A realm import or a partial import may carry a hundred thousand users, a directory's sync as
many; one ``INSERT`` per row through ``save()`` cost milliseconds each, most of it the ORM's.
``insert_many`` streams ready model instances (primary keys set, fields filled) into a table,
``insert_values`` plain values (a directory's import builds no instances), ``update_values``
changes columns of existing rows. Like ``bulk_create`` they send no signals and call no
``save()``: callers do what those would have done (a cache to drop, a hook that does not apply)."""
import json
import weakref
import zlib
from contextlib import contextmanager

from django.db import DEFAULT_DB_ALIAS, connections, transaction
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


def skip_locked():
    """The clause by which a SELECT locks its rows and passes over those another transaction holds
    (PostgreSQL), or nothing where one writer at a time locks the whole database (SQLite)."""
    connection = connections[DEFAULT_DB_ALIAS]
    return " FOR UPDATE SKIP LOCKED" if connection.features.has_select_for_update_skip_locked else ""


def fetch(model, where, params, extra=None):
    """The ``model`` instances whose rows match ``where`` (the SQL after WHERE, with any ORDER BY
    and LIMIT), as the ORM would load them. ``extra``: ``(attribute, SQL, params)``, one more
    column read in the same query, its raw value set as ``attribute`` on each instance. Reads
    queued with ``ahead`` go in the same round trip."""
    connection = connections[DEFAULT_DB_ALIAS]
    columns, source, _, _ = _plan(connection, model)
    if extra is not None:
        columns, params = f"{columns}, {extra[1]}", [*extra[2], *params]
    queued = _ahead.pop(connection, [])
    sql = ";\n".join([columns + source + where, *(_select(connection, a.model, a.where) for a in queued)])
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, *(value for a in queued for value in a.params)])
        found = cursor.fetchall()
        for read in queued:
            cursor.nextset()
            read.found = _instances(connection, read.model, cursor.fetchall())
    return _instances(connection, model, found, extra)


def _select(connection, model, where):
    columns, source, _, _ = _plan(connection, model)
    return columns + source + where


def _instances(connection, model, found, extra=None):
    _, _, names, converters = _plan(connection, model)
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


_ahead = weakref.WeakKeyDictionary()  # connection -> the reads queued for its next fetch


class _Ahead:
    def __init__(self, model, where, params):
        self.model, self.where, self.params = model, where, params
        self.found = None  # the instances, once read

    def result(self):
        """The instances: read with an earlier ``fetch``, else now."""
        if self.found is None:
            queue = _ahead.get(connections[DEFAULT_DB_ALIAS], [])
            if self in queue:
                queue.remove(self)
            self.found = fetch(self.model, self.where, self.params)
        return self.found


@contextmanager
def ahead(model, where, params):
    """``fetch(model, where, params)`` queued to go with the next ``fetch`` of the block, in
    its round trip (PostgreSQL runs a query of several statements and answers each); the
    block's ``.result()`` gives the instances, read then or, if no fetch came, when asked.
    Nothing queued outlives the block."""
    connection = connections[DEFAULT_DB_ALIAS]
    read = _Ahead(model, where, params)
    queue = _ahead.setdefault(connection, []) if connection.vendor == "postgresql" else []
    queue.append(read)
    try:
        yield read
    finally:
        if read in queue:
            queue.remove(read)


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
    _write(connection, [_insert(connection, instance)])
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
    if connection.vendor == "postgresql":
        _write(connection, [(f"WITH gone AS ({delete_sql}) {insert_sql}", [*params, *values])])
    else:
        _write(connection, [(delete_sql, params), (insert_sql, values)])
    return _written(connection, instance)


NEW, NEW_UNLESS_BLANK = "new", "new unless blank"  # how ``upsert`` changes a field of a row found


def upsert(instance, unique, changes):
    """Write the new ``instance``'s row or, when a row with its values of the ``unique`` fields (a
    unique constraint's) is there, change that row as ``changes`` says: {field name: ``NEW`` (the
    instance's value), ``NEW_UNLESS_BLANK`` (the same unless it is blank), or a dict (the keys of
    the row's JSON object set to these values, a None value removing its key)}. One statement
    (``INSERT ... ON CONFLICT DO UPDATE ... RETURNING``): the row as it is now, whose primary key
    is ``instance``'s when it was written new. No signals, as ``insert``."""
    connection = connections[DEFAULT_DB_ALIAS]
    model, quote = type(instance), connection.ops.quote_name
    table = quote(model._meta.db_table)
    insert_sql, values = _insert(connection, instance)
    sets, params = [], []
    for name, change in changes.items():
        column = quote(model._meta.get_field(name).column)
        if change == NEW:
            sets.append(f"{column} = EXCLUDED.{column}")
        elif change == NEW_UNLESS_BLANK:
            sets.append(f"{column} = COALESCE(NULLIF(EXCLUDED.{column}, ''), {table}.{column})")
        else:
            merged, merged_params = _json_set(connection, f"{table}.{column}", change)
            sets.append(f"{column} = {merged}")
            params.extend(merged_params)
    conflict = ", ".join(quote(model._meta.get_field(name).column) for name in unique)
    columns = _plan(connection, model)[0]
    with connection.cursor() as cursor:
        cursor.execute(f"{insert_sql} ON CONFLICT ({conflict}) DO UPDATE SET {', '.join(sets)} "
                       f"RETURNING {columns[len('SELECT '):]}", [*values, *params])
        found = cursor.fetchall()
    return _instances(connection, model, found)[0]


def _json_set(connection, column, values):
    """(SQL, parameters): the JSON object ``column`` with the keys of ``values`` set, those whose
    value is None removed."""
    if any('"' in key for key in values):  # SQLite's paths name a key in double quotes
        raise ValueError(f"a JSON key with a double quote: {sorted(values)}")
    kept = {key: value for key, value in values.items() if value is not None}
    removed = [key for key, value in values.items() if value is None]
    if connection.vendor == "postgresql":
        return f"({column} || %s::jsonb) - %s::text[]", [json.dumps(kept), removed]
    sql, params = column, []
    if kept:
        sql = f"json_set({sql}, {', '.join(['%s, json(%s)'] * len(kept))})"
        params += [v for key, value in kept.items() for v in (f'$."{key}"', json.dumps(value))]
    if removed:
        sql = f"json_remove({sql}, {', '.join(['%s'] * len(removed))})"
        params += [f'$."{key}"' for key in removed]
    return sql, params


_batches = weakref.WeakKeyDictionary()  # connection -> its open batch


def _write(connection, statements):
    pending = _batches.get(connection)
    if pending is not None:
        pending.statements.extend(statements)
    else:
        _send(connection, statements)


def _send(connection, statements):
    """``statements`` ([(SQL, parameters)]) in one query string on PostgreSQL, one round trip;
    one by one elsewhere."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(";\n".join(sql for sql, _ in statements), [v for _, values in statements for v in values])
        else:
            for sql, params in statements:
                cursor.execute(sql, params)


@contextmanager
def batch():
    """A transaction whose ``insert``, ``create`` and ``replace`` statements wait and are sent
    together at its end: on PostgreSQL as one query string, so a new user's row, role and
    password are one round trip (between the transaction's BEGIN and COMMIT) instead of three.
    Any other statement in the batch (a read, an ORM write) first sends what waits, so it sees
    those rows, and the transaction then goes on as usual. A batch inside a batch is part of it.
    Errors of the waiting statements (an IntegrityError) are raised at the end of the block; a
    block left by an exception, or marked for rollback, sends nothing that waits, and so does a
    ``COPY`` (``insert_many``, ``insert_values``), which goes past Django's cursor."""
    connection = connections[DEFAULT_DB_ALIAS]
    if connection in _batches:
        yield
        return
    with transaction.atomic():
        pending = _batches[connection] = _Pending(connection)
        try:
            with connection.execute_wrapper(pending.before_other):
                yield
                if not connection.needs_rollback:  # ``transaction.set_rollback(True)``: nothing to send
                    pending.send()
        finally:
            del _batches[connection]


class _Pending:
    def __init__(self, connection):
        self.connection, self.statements = connection, []

    def before_other(self, execute, sql, params, many, context):
        self.send()
        return execute(sql, params, many, context)

    def send(self):
        statements, self.statements = self.statements, []
        if statements:
            _send(self.connection, statements)


_AUTO = ("AutoField", "BigAutoField", "SmallAutoField")
# Rows written in one go past which the planner's statistics are refreshed at once: after a bulk
# import the table's statistics still describe it as it was (autovacuum comes a minute or more
# later), and a sign-in's username lookup was planned as a scan of the realm's 100,000 new users.
ANALYZE_AFTER = 1000


def insert_many(model, objs):
    """Write ``objs`` (instances of ``model``, not yet in the table) in one stream."""
    if not objs:
        return
    # A generated key (the auto ``id`` of a many-to-many table) is left to the database.
    fields = [f for f in model._meta.concrete_fields if not (f.primary_key and f.get_internal_type() in _AUTO)]
    names = [f.attname for f in fields]
    _stream(model, fields, ([obj.__dict__[name] for name in names] for obj in objs))


def insert_values(model, fields, rows):
    """Write ``rows`` (a list of sequences of attribute values, one per field of ``fields``, JSON
    as Python values) into ``model``'s table in one stream."""
    if rows:
        _stream(model, fields, rows)


def _stream(model, fields, rows):
    """PostgreSQL's ``COPY``; SQLite: one prepared ``INSERT`` run for every row."""
    connection = connections[DEFAULT_DB_ALIAS]
    pending = _batches.get(connection)
    if pending is not None:
        pending.send()  # the rows that wait go first: these may reference them
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


def _json(field):
    return lambda value: json.dumps(value, cls=field.encoder)


def update_values(model, fields, rows):
    """Set ``fields`` (model fields) of existing rows: ``rows`` are (primary key, [values]), in one
    prepared ``UPDATE`` run for every row (pipelined by psycopg)."""
    if not rows:
        return
    connection = connections[DEFAULT_DB_ALIAS]
    quote = connection.ops.quote_name
    sets = ", ".join(f"{quote(f.column)} = %s" for f in fields)
    with connection.cursor() as cursor:
        cursor.executemany(f"UPDATE {quote(model._meta.db_table)} SET {sets} WHERE {quote(model._meta.pk.column)} = %s",
                           [[f.get_db_prep_save(v, connection) for f, v in zip(fields, values)] + [pk]
                            for pk, values in rows])


def refresh_statistics(written, *models):
    """``ANALYZE`` the tables of ``models`` (PostgreSQL; SQLite keeps no statistics a sign-in's plan
    depends on) when ``written`` rows went into them: in the caller's transaction, whose own rows
    the sample counts."""
    connection = connections[DEFAULT_DB_ALIAS]
    if written < ANALYZE_AFTER or connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        for model in models:
            cursor.execute(f"ANALYZE {connection.ops.quote_name(model._meta.db_table)}")


def holding(queryset, key, value):
    """The rows of ``queryset`` whose JSON ``attributes`` list ``value`` under ``key`` (Keycloak's
    attribute query): PostgreSQL's containment; SQLite has none, so the rows with the key are read
    and matched here."""
    if connections[DEFAULT_DB_ALIAS].vendor == "postgresql":
        return queryset.filter(attributes__contains={key: [value]})
    ids = [pk for pk, attrs in queryset.filter(attributes__has_key=key).values_list("pk", "attributes")
           if value in (attrs.get(key) or [])]
    return queryset.filter(pk__in=ids)


@contextmanager
def session_lock(space, key):
    """Whether this process holds ``key`` of ``space`` (strings) for the block, without waiting:
    on PostgreSQL an advisory lock of the session, so the database drops it with the connection
    of a killed process; SQLite (dev mode: one server process) has nothing to race with."""
    connection = connections[DEFAULT_DB_ALIAS]
    if connection.vendor != "postgresql":
        yield True
        return
    ids = [zlib.crc32(part.encode()) & 0x7FFFFFFF for part in (space, key)]
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", ids)
        locked = cursor.fetchone()[0]
    try:
        yield locked
    finally:
        if locked:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s, %s)", ids)
