"""Deliveries reach the workers through one Redis list, not as Celery tasks (decision 0119): a
committed event is one push of its deliveries' ids; a worker's puller takes them in batches, one
batch at a time, for its claimer; what a worker took and never claimed is sent by the sweeper.
Real Redis, real PostgreSQL (or SQLite), real threads and receivers."""
import dataclasses
import threading
from datetime import timedelta

import pytest
import redis
from django.core.exceptions import ImproperlyConfigured

from webhooks import conf, delivery, dispatch, sender, services
from webhooks.models import Delivery
from webhooks.outbox import publish

from .workers import wait_until

pytestmark = [pytest.mark.services, pytest.mark.usefixtures("loopback_allowed")]


@pytest.fixture
def due():
    """The list, empty at the start and the end of the test."""
    client = redis.Redis.from_url(conf.get("IDP_WEBHOOK_REDIS_URL"))
    client.delete(dispatch.QUEUE)
    yield client
    dispatch.shutdown()  # the lanes a test started, and their puller
    client.delete(dispatch.QUEUE)


def _listed(client):
    return [int(pk) for pk in client.lrange(dispatch.QUEUE, 0, -1)]


def test_an_events_deliveries_are_one_push_taken_in_order_in_batches(realm, due, django_capture_on_commit_callbacks,
                                                                     monkeypatch):
    endpoints = [services.create_endpoint(realm, f"https://hooks{i}.example.com/in", [])[0] for i in range(3)]
    pushes = []
    rpush = redis.Redis.rpush
    monkeypatch.setattr(redis.Redis, "rpush", lambda self, name, *values: pushes.append(values) or rpush(
        self, name, *values))
    with django_capture_on_commit_callbacks(execute=True):
        message = publish(realm, "auth.login", {}, endpoints=endpoints)
        assert _listed(due) == []  # nothing before the commit
    ids = sorted(Delivery.objects.filter(message=message).values_list("pk", flat=True))
    assert _listed(due) == ids and len(pushes) == 1
    dispatch.deliveries(range(1000, 1250))  # a sweep's ids: one push too, however many
    assert len(pushes) == 2
    assert dispatch.take(200) == [*ids, *range(1000, 1197)]
    assert dispatch.take(500) == list(range(1197, 1250))
    assert dispatch.take(500) == []  # after waiting dispatch.WAIT


def test_without_redis_a_hand_off_says_what_to_set(settings):
    settings.IDP_WEBHOOK_INPROCESS = False
    settings.IDP_WEBHOOK_REDIS_URL = ""
    with pytest.raises(ImproperlyConfigured, match="IDP_WEBHOOK_REDIS_URL"):
        dispatch.deliveries([1])
    dispatch.deliveries([])  # nothing to hand off: no error


@pytest.mark.django_db(transaction=True)
def test_a_workers_puller_sends_what_is_pushed(realm, due, receiver_server):
    lanes = sender.lanes(delivery.WORK)
    lanes.serve(dispatch.take)
    endpoint = services.create_endpoint(realm, receiver_server.url(), [])[0]
    messages = [publish(realm, "auth.login", {"n": n}, endpoints=[endpoint]) for n in range(5)]  # each commits
    assert len(receiver_server.wait_for(5, timeout=10)) == 5
    assert {r["headers"]["webhook-id"] for r in receiver_server.requests} == {m.id for m in messages}
    assert wait_until(lambda: Delivery.objects.filter(endpoint=endpoint, state=Delivery.DELIVERED).count() == 5)
    assert due.llen(dispatch.QUEUE) == 0
    dispatch.shutdown()
    assert not lanes.puller.is_alive()


def test_a_puller_takes_the_next_batch_only_once_the_last_is_claimed(due):
    """What a worker cannot claim yet stays in the list, where any other worker takes it."""
    claimed, release = [], threading.Event()

    def slow_claim(ids, lanes):
        claimed.append(list(ids))
        release.wait(10)  # the healthy lane full, say
        return set()

    lanes = sender.Lanes(dataclasses.replace(delivery.WORK, claim=slow_claim))
    try:
        dispatch.deliveries([1, 2, 3])
        lanes.serve(dispatch.take)
        assert wait_until(lambda: claimed == [[1, 2, 3]], timeout=5)
        dispatch.deliveries([4, 5])
        dispatch.deliveries([6])
        assert not wait_until(lambda: len(claimed) > 1, timeout=dispatch.WAIT + 0.5)
        assert _listed(due) == [4, 5, 6]
        release.set()
        assert wait_until(lambda: claimed == [[1, 2, 3], [4, 5, 6]], timeout=5)
        assert _listed(due) == []
    finally:
        release.set()
        lanes.shutdown()
    assert not lanes.puller.is_alive()


def test_ids_taken_by_a_worker_that_died_before_its_claim_are_sent_by_the_sweeper(realm, due, receiver_server,
                                                                                 django_capture_on_commit_callbacks,
                                                                                 settings):
    endpoint = services.create_endpoint(realm, receiver_server.url(), [])[0]
    with django_capture_on_commit_callbacks(execute=True):
        message = publish(realm, "auth.login", {}, endpoints=[endpoint])
    assert dispatch.take(500) == [message.deliveries.get().pk]  # ... and the worker that took it is killed
    lost = message.deliveries.get()
    assert lost.state == Delivery.PENDING and lost.dispatched_at is not None
    assert delivery.sweep(lost.dispatched_at) == 0  # a hand-off a moment old is left to its worker
    settings.IDP_WEBHOOK_REDISPATCH_AFTER = 0
    assert delivery.sweep(lost.dispatched_at + timedelta(seconds=1)) == 1  # the endpoint pulls it
    assert _listed(due) == [lost.pk]
    delivery.process(dispatch.take(500), inline=True)
    assert message.deliveries.get().state == Delivery.DELIVERED and len(receiver_server.requests) == 1
