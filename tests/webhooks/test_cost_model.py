"""The cost model of a webhook delivery (docs/cost-model.md): database queries and Redis commands
of one batch of deliveries claimed, signed, sent to a real receiver and recorded, with the
concurrency slots in Redis as production has them. A batch costs the same whatever its size (the
claim, the log rows and the outcomes are written together), so a change that adds a query or a
round trip per delivery fails here."""
import dataclasses
import os
import re
import threading

import psycopg
import pytest
import redis
from django.db import connection
from django.test.utils import CaptureQueriesContext

from webhooks import delivery, dispatch, limits, sender, services
from webhooks.models import Delivery

from .workers import wait_until

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("loopback_allowed")]


@pytest.fixture
def redis_commands(settings, monkeypatch):
    """The Redis commands sent by any client, counted: the slots and rate limits, and the shared
    cache (the metrics' counts) on Redis as in production."""
    url = os.environ["IDP_TEST_REDIS_URL"]
    settings.IDP_WEBHOOK_REDIS_URL = url
    settings.CACHES = {**settings.CACHES, "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                                      "LOCATION": url, "KEY_PREFIX": "cost-model"}}
    sent = []
    real = redis.Redis.execute_command

    def counted(self, *args, **options):
        sent.append(args[0])
        return real(self, *args, **options)

    monkeypatch.setattr(redis.Redis, "execute_command", counted)
    return sent


def _endpoints(realm, receiver_server, n):
    return [services.create_endpoint(realm, receiver_server.url(), [], max_concurrency=100)[0] for _ in range(n)]


def _ids_of(message):
    return sorted(Delivery.objects.filter(message=message).values_list("pk", flat=True))


def _batch(endpoints, events):
    """``events`` test events to each of ``endpoints``: their delivery ids."""
    return [i for endpoint in endpoints for _ in range(events) for i in _ids_of(services.send_test_event(endpoint))]


@pytest.fixture
def copies(monkeypatch):
    """PostgreSQL's streams of rows (COPY, ``realms.data.rows``) go past Django's cursor: each is
    logged among the connection's queries, in its place, for CaptureQueriesContext to count."""
    real = psycopg.Cursor.copy

    def logged(self, statement, *args, **kwargs):
        connection.queries_log.append({"sql": str(statement), "time": "0"})
        return real(self, statement, *args, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "copy", logged)


def _cost(ids, redis_commands):
    del redis_commands[:]
    with CaptureQueriesContext(connection) as queries:
        delivery.process(ids, inline=True)
    assert Delivery.objects.filter(pk__in=ids, state=Delivery.DELIVERED).count() == len(ids)
    sql = [q["sql"] for q in queries.captured_queries if not q["sql"].startswith(("SAVEPOINT", "RELEASE"))]
    return sql, list(redis_commands)


# A batch of any size, to one endpoint or several, once each endpoint's signer is cached in the
# worker (after its first delivery): the claim (one statement: the rows locked and made sending,
# with their message's bodies; then their endpoints' state), the log rows (one stream: COPY on
# PostgreSQL, one prepared INSERT on SQLite), the outcome (one update per outcome); in Redis, the
# slots taken and released (one script each) and the outcome counted for /metrics (Django's Redis
# cache: EXISTS, then INCRBY). Keep docs/cost-model.md in step.
EXPECTED = (4, ["EVALSHA", "EVALSHA", "EXISTS", "INCRBY"])


@pytest.mark.parametrize("endpoints,events", [(1, 1), (1, 20), (5, 4)])
@pytest.mark.usefixtures("copies")
def test_a_batch_costs_the_same_whatever_its_size(realm, receiver_server, redis_commands, endpoints, events,
                                                  monkeypatch):
    monkeypatch.setattr("webhooks.dispatch.deliveries", lambda ids: None)
    targets = _endpoints(realm, receiver_server, endpoints)
    _cost(_batch(targets, 1), redis_commands)  # warm: signers cached, scripts loaded, metric keys made
    queries, commands = _cost(_batch(targets, events), redis_commands)
    assert (len(queries), commands) == EXPECTED, queries
    # (Django logs an executemany as "N times: INSERT ...".)
    assert [re.sub(r"^\d+ times: ", "", q).split()[0] for q in queries] == [
        "WITH", "SELECT", "COPY" if connection.vendor == "postgresql" else "INSERT", "UPDATE"], queries


@pytest.fixture
def lanes():
    yield sender.lanes(delivery.WORK)
    dispatch.shutdown()


@pytest.mark.django_db(transaction=True)
def test_batches_waiting_together_are_one_claim_on_the_claimers_kept_connection(realm, receiver_server, lanes):
    """Celery closes a task thread's database connection after each task: a claim made there
    opened a PostgreSQL backend per event. The claimer thread claims instead, on one connection,
    and the batches that queued while it worked are one claim, each caller told its own count."""
    endpoint = _endpoints(realm, receiver_server, 1)[0]
    batches = [_ids_of(services.send_test_event(endpoint)) for _ in range(4)]
    claims, busy, go = [], threading.Event(), threading.Event()
    claim = lanes.work.claim

    def watched(ids, lanes_):
        busy.set()
        go.wait(10)
        sent = claim(ids, lanes_)
        claims.append((sorted(ids), connection.connection))
        return sent

    lanes.work = dataclasses.replace(lanes.work, claim=watched)
    counts = {}

    def task(n):  # as a Celery task thread: process, then its connection closed
        counts[n] = delivery.process(batches[n])
        connection.close()

    threads = [threading.Thread(target=task, args=(0,))]
    threads[0].start()
    assert busy.wait(10)
    threads += [threading.Thread(target=task, args=(n,)) for n in (1, 2, 3)]
    for t in threads[1:]:
        t.start()
    assert wait_until(lambda: lanes.claims.qsize() == 3)
    go.set()
    for t in threads:
        t.join(10)
    assert [ids for ids, _ in claims] == [batches[0], sorted(batches[1] + batches[2] + batches[3])]
    assert claims[0][1] is claims[1][1]  # one connection, kept
    assert counts == {n: len(batches[n]) for n in range(4)}
    assert wait_until(lambda: Delivery.objects.filter(endpoint=endpoint, state=Delivery.DELIVERED).count() == 4)


@pytest.mark.django_db(transaction=True)
def test_slots_of_sends_ended_together_are_one_release(realm, receiver_server, lanes, monkeypatch):
    """A send frees its slot through the releaser, not by a Redis call of its own: the slots of
    sends that end while the releaser frees earlier ones are freed in one call."""
    endpoint = _endpoints(realm, receiver_server, 1)[0]
    calls, busy, go = [], threading.Event(), threading.Event()
    release_many = limits.release_many

    def watched(slots):
        if slots:  # the writer's flushes call it with none: the sends' slots are freed already
            calls.append(len(slots))
            busy.set()
            go.wait(10)
        return release_many(slots)

    monkeypatch.setattr(limits, "release_many", watched)
    assert delivery.process(_ids_of(services.send_test_event(endpoint))) == 1
    assert busy.wait(10)  # the first send's slot, being freed
    assert delivery.process(_batch([endpoint], 3)) == 3
    assert wait_until(lambda: lanes.freed.qsize() == 3, timeout=10)  # three more sends ended meanwhile
    go.set()
    assert wait_until(lambda: Delivery.objects.filter(endpoint=endpoint, state=Delivery.DELIVERED).count() == 4)
    assert wait_until(lambda: calls == [1, 3])
    assert limits.acquire(endpoint.pk, 1, 30) is not None  # none of the four slots is held any more
