"""A Django cache in PostgreSQL, for sites that share nothing but the database (decision 0094).

With the server feature ``stateless`` (Keycloak's multi-cluster v2), every site has its own Redis
and the caches every node must agree on (SSO session copies, authentication sessions, revoked
tokens, single-use marks, brute-force counters, rate-limit counters, the generations of
``realms.data.shared_cache``) live here, in the synchronously replicated database, so that a
change on one site is seen on the other and survives the loss of a site.

Django's own database cache does not fit a hot path shared by many nodes: each write counts the
whole table to cull it, ``add`` is a read then an insert, and ``incr`` a read then a write (two
nodes counting the same failure lose one). Here each operation is one statement: ``add`` an
upsert that only replaces an expired row, ``incr`` an ``UPDATE ... RETURNING`` on a number kept
as text, so counters are exact under concurrency. The table is Django's (``createcachetable``,
run by ``manage.py start``); expired rows are deleted a bounded batch at a time every
``PURGE_EVERY`` writes of a process.

The backend works on its own connection (the ``cache`` database alias, same server), in
autocommit, as Redis would: a mark written in a request is kept even when the request's
transaction rolls back, and is seen by other nodes at once.
"""
import base64
import hashlib
import pickle
import re
from datetime import UTC, datetime
from itertools import count

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.db import BaseDatabaseCache
from django.db import connections
from django.utils import timezone

NEVER = datetime(9999, 12, 31, tzinfo=UTC)
PURGE_EVERY = 1000  # writes of a process between two deletions of expired rows
PURGE_BATCH = 1000  # expired rows deleted at most each time
MAX_KEY = 250  # the key column holds 255 characters; a longer key (a foreign jti) is kept as its digest
_NUMBER = re.compile(r"-?\d+\Z")  # a pickle in base64 starts with "g", never a digit


def _encode(value):
    if type(value) is int:  # kept as text digits, so that incr adds in SQL
        return str(value)
    return base64.b64encode(pickle.dumps(value, pickle.HIGHEST_PROTOCOL)).decode("ascii")


def _decode(text):
    return int(text) if _NUMBER.match(text) else pickle.loads(base64.b64decode(text))


class DatabaseCache(BaseDatabaseCache):
    def __init__(self, table, params):
        super().__init__(table, params)
        self._alias = params.get("OPTIONS", {}).get("DATABASE", "default")
        self._writes = count(1)

    def make_key(self, key, version=None):
        made = super().make_key(key, version)
        return made if len(made) <= MAX_KEY else "sha256:" + hashlib.sha256(made.encode()).hexdigest()

    def _expiry(self, timeout):
        at = self.get_backend_timeout(timeout)  # seconds since the epoch, None for never
        return NEVER if at is None else datetime.fromtimestamp(at, UTC)

    def _run(self, sql, params):
        """(rows or None, rowcount) of one statement on the cache's connection."""
        with connections[self._alias].cursor() as cursor:
            cursor.execute(sql.replace("{t}", connections[self._alias].ops.quote_name(self._table)), params)
            return (cursor.fetchall() if cursor.description else None), cursor.rowcount

    def _written(self):
        if next(self._writes) % PURGE_EVERY == 0:
            self.purge_expired()

    def purge_expired(self):
        """Delete up to PURGE_BATCH expired rows (found through the index on ``expires``)."""
        return self._run("DELETE FROM {t} WHERE cache_key IN (SELECT cache_key FROM {t} WHERE expires <= %s LIMIT %s)",
                         [timezone.now(), PURGE_BATCH])[1]

    def get(self, key, default=None, version=None):
        return self.get_many([key], version).get(key, default)

    def get_many(self, keys, version=None):
        names = {self.make_and_validate_key(key, version=version): key for key in keys}
        if not names:
            return {}
        rows, _ = self._run("SELECT cache_key, value FROM {t} WHERE cache_key = ANY(%s) AND expires > %s",
                            [list(names), timezone.now()])
        return {names[name]: _decode(value) for name, value in rows}

    def has_key(self, key, version=None):
        return bool(self._run("SELECT 1 FROM {t} WHERE cache_key = %s AND expires > %s",
                              [self.make_and_validate_key(key, version=version), timezone.now()])[0])

    def set(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        self._run("INSERT INTO {t} (cache_key, value, expires) VALUES (%s, %s, %s) ON CONFLICT (cache_key) "
                  "DO UPDATE SET value = EXCLUDED.value, expires = EXCLUDED.expires",
                  [self.make_and_validate_key(key, version=version), _encode(value), self._expiry(timeout)])
        self._written()

    def add(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        # One statement: a live row stops it, an expired one is replaced; two nodes adding the same
        # key at once cannot both succeed (the second waits on the first's row, then sees it live).
        rows, _ = self._run(
            "INSERT INTO {t} AS c (cache_key, value, expires) VALUES (%s, %s, %s) ON CONFLICT (cache_key) "
            "DO UPDATE SET value = EXCLUDED.value, expires = EXCLUDED.expires WHERE c.expires <= %s RETURNING 1",
            [self.make_and_validate_key(key, version=version), _encode(value), self._expiry(timeout), timezone.now()])
        self._written()
        return bool(rows)

    def incr(self, key, delta=1, version=None):
        rows, _ = self._run(
            "UPDATE {t} SET value = (value::bigint + %s)::text WHERE cache_key = %s AND expires > %s "
            "AND value ~ '^-?[0-9]+$' RETURNING value",
            [delta, self.make_and_validate_key(key, version=version), timezone.now()])
        if not rows:
            raise ValueError(f"Key '{key}' not found")
        return int(rows[0][0])

    def touch(self, key, timeout=DEFAULT_TIMEOUT, version=None):
        return self._run("UPDATE {t} SET expires = %s WHERE cache_key = %s AND expires > %s",
                         [self._expiry(timeout), self.make_and_validate_key(key, version=version),
                          timezone.now()])[1] > 0

    def delete(self, key, version=None):
        return self.delete_many([key], version) > 0

    def delete_many(self, keys, version=None):
        names = [self.make_and_validate_key(key, version=version) for key in keys]
        return self._run("DELETE FROM {t} WHERE cache_key = ANY(%s)", [names])[1] if names else 0

    def clear(self):
        self._run("DELETE FROM {t}", [])
