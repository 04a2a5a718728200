"""What the grants a client polls for (the device grant, CIBA) keep in the cache, and how an
approved request is redeemed.

A request's row is the truth; the cache holds a copy of what a poll needs (client, state,
expiry, interval), so a poll while the user has not answered reads no table and writes nothing.
The poll clock behind ``slow_down`` is Keycloak's: a put-if-absent living ``interval`` seconds,
so a poll sooner than that after the last allowed one is refused and does not move the clock.
Redeeming is one ``DELETE ... RETURNING`` guarded by the state: single use without a claim
written first and deleted after.
"""
import time

from django.core.cache import cache
from django.db import connection


class PolledRequests:
    """The cached copies of one kind of request (``model``: its table, keyed by digest)."""

    def __init__(self, prefix, model):
        self.prefix, self.model = prefix, model

    def _key(self, digest):
        return f"{self.prefix}:{digest}"

    def _poll_key(self, digest):
        return f"{self.prefix}:poll:{digest}"

    @staticmethod
    def _entry_of(row):
        return {"client": row.client_id, "state": row.state, "expires": row.expires_at.timestamp(),
                "interval": row.interval}

    def remember(self, row):
        # Kept past the expiry (as Keycloak's store keeps its entry) so a late poll hears expired_token.
        ttl = max(int(row.expires_at.timestamp() - time.time()), 0) + row.interval + 10
        cache.set(self._key(row.digest), self._entry_of(row), ttl)

    def forget(self, digest):
        cache.delete_many([self._key(digest), self._poll_key(digest)])

    def entry(self, digest):
        """The cached copy, or (evicted, or a cache that was flushed) the row's; None when there is
        no such request (a redeemed one is deleted)."""
        entry = cache.get(self._key(digest))
        if entry is None:
            row = self.model.objects.filter(pk=digest).first()
            if row is None:
                return None
            self.remember(row)
            entry = self._entry_of(row)
        return entry

    def redeem(self, digest, client, columns):
        """The approved request of ``client`` deleted in one statement (single use: of two
        racing redemptions one deletes it; whatever happens next, it is gone) and its copy
        forgotten: the values of ``columns`` (names) of its row, or None when it was not approved."""
        table = connection.ops.quote_name(self.model._meta.db_table)
        with connection.cursor() as cursor:
            cursor.execute(f"DELETE FROM {table} WHERE digest = %s AND state = %s AND client_id = %s "
                           f"RETURNING {', '.join(columns)}", [digest, self.model.APPROVED, client.pk])
            row = cursor.fetchone()
        self.forget(digest)
        return dict(zip(columns, row)) if row is not None else None

    def poll_allowed(self, digest, interval):
        return interval <= 0 or cache.add(self._poll_key(digest), 1, interval)
