"""The claim's update writes no index entry (decision 0124): the columns it changes are in no index
of the deliveries, neither as a key nor in a predicate; on PostgreSQL the table keeps room on its
pages (a fillfactor) and every claim is a HOT update. The rows stay in the queue's indexes until
they end (``finished``), and leave them then."""
import re

import pytest
from django.db import connection
from django.utils import timezone

from webhooks import delivery, services
from webhooks.models import Delivery
from webhooks.outbox import publish

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("loopback_allowed")]


def _claimed_columns():
    """The columns the claim's UPDATE sets, read from its statement."""
    sets = re.search(r"UPDATE webhooks_delivery SET(.*?)\nFROM", delivery._CLAIM, re.S).group(1)
    return set(re.findall(r"^\s*(\w+) =", sets, re.M))


def _indexed_columns():
    """Every column named by an index or a unique constraint of the deliveries, keys and predicates."""
    found = set()
    for index in (*Delivery._meta.indexes, *Delivery._meta.constraints):
        found.update(Delivery._meta.get_field(f.lstrip("-")).column for f in index.fields)
        children = [index.condition] if index.condition else []
        while children:
            node = children.pop()
            if isinstance(node, tuple):
                found.add(Delivery._meta.get_field(node[0].split("__")[0]).column)
            else:
                children.extend(node.children)
    return found


@pytest.fixture
def endpoint(realm, receiver_server):
    return services.create_endpoint(realm, receiver_server.url(), ["auth.*"])[0]


def test_the_claim_changes_no_indexed_column():
    claimed = _claimed_columns()
    assert claimed == {"state", "lease_until", "dispatched_at"}
    indexed = _indexed_columns()
    assert {"finished", "next_attempt_at", "endpoint_id", "subject", "message_id"} <= indexed
    assert not claimed & indexed


@pytest.mark.postgresql  # the catalogue and the statistics of HOT updates
def test_every_claim_is_a_hot_update_and_the_end_leaves_the_queue(realm, endpoint):
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE tablename = 'webhooks_delivery'")
        definitions = [row[0] for row in cursor.fetchall()]
        cursor.execute("SELECT reloptions FROM pg_class WHERE relname = 'webhooks_delivery'")
        assert cursor.fetchone()[0] == ["fillfactor=70"]
    # Read from PostgreSQL itself, not from the model: no index names a column the claim writes.
    for column in _claimed_columns():
        assert not [d for d in definitions if re.search(rf"\b{column}\b", d)], column

    ids = [Delivery.objects.get(message=publish(realm, "auth.login", {"userId": f"u{i}"}, endpoints=[endpoint])).pk
           for i in range(5)]

    def updates():
        with connection.cursor() as cursor:  # this transaction's counts
            cursor.execute("SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_xact_user_tables "
                           "WHERE relname = 'webhooks_delivery'")
            return cursor.fetchone()

    before = updates()
    jobs = delivery._claim(ids, timezone.now())
    after = updates()
    assert len(jobs) == 5 and set(Delivery.objects.filter(pk__in=ids).values_list("state", flat=True)) == {"sending"}
    assert (after[0] - before[0], after[1] - before[1]) == (5, 5)

    now = timezone.now()
    delivery.record([delivery.Result(job, now, 5, 200, "", b"", None, False) for job in jobs])
    assert set(Delivery.objects.filter(pk__in=ids).values_list("state", "finished")) == {("delivered", True)}
    with connection.cursor() as cursor:  # out of the queue's partial index: its scan finds none of them
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("EXPLAIN SELECT id FROM webhooks_delivery WHERE NOT finished AND next_attempt_at <= now()")
        assert "wh_delivery_open_due" in " ".join(row[0] for row in cursor.fetchall())
    assert not Delivery.objects.filter(pk__in=ids, finished=False, next_attempt_at__lte=now).exists()
