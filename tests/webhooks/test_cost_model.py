"""The cost model of a webhook delivery (docs/cost-model.md): database queries and Redis commands
of one batch of deliveries claimed, signed, sent to a real receiver and recorded, with the
concurrency slots in Redis as production has them. A batch costs the same whatever its size (the
claim, the log rows and the outcomes are written together), so a change that adds a query or a
round trip per delivery fails here."""
import os

import pytest
import redis
from django.db import connection
from django.test.utils import CaptureQueriesContext

from webhooks import delivery, services
from webhooks.models import Delivery

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


def _batch(endpoints, events):
    """``events`` test events to each of ``endpoints``: their delivery ids."""
    ids = []
    for endpoint in endpoints:
        for _ in range(events):
            message = services.send_test_event(endpoint)
            ids.extend(Delivery.objects.filter(message=message).values_list("pk", flat=True))
    return ids


def _cost(ids, redis_commands):
    del redis_commands[:]
    with CaptureQueriesContext(connection) as queries:
        delivery.process(ids, inline=True)
    assert Delivery.objects.filter(pk__in=ids, state=Delivery.DELIVERED).count() == len(ids)
    sql = [q["sql"] for q in queries.captured_queries if not q["sql"].startswith(("SAVEPOINT", "RELEASE"))]
    return sql, list(redis_commands)


# A batch of any size, to one endpoint or several, once each endpoint's signer is cached in the
# worker (after its first delivery): the claim (the locking read of the rows with their message and
# endpoint; the update to sending), the log rows (one insert), the outcome (one update per outcome);
# in Redis, the slots taken and released (one script each) and the outcome counted for /metrics
# (Django's Redis cache: EXISTS, then INCRBY). Keep docs/cost-model.md in step.
EXPECTED = (4, ["EVALSHA", "EVALSHA", "EXISTS", "INCRBY"])


@pytest.mark.parametrize("endpoints,events", [(1, 1), (1, 20), (5, 4)])
def test_a_batch_costs_the_same_whatever_its_size(realm, receiver_server, redis_commands, endpoints, events,
                                                  monkeypatch):
    monkeypatch.setattr("webhooks.dispatch.deliveries", lambda ids: None)
    targets = _endpoints(realm, receiver_server, endpoints)
    _cost(_batch(targets, 1), redis_commands)  # warm: signers cached, scripts loaded, metric keys made
    queries, commands = _cost(_batch(targets, events), redis_commands)
    assert (len(queries), commands) == EXPECTED, queries
