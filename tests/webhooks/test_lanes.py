"""The batched hot path (the hand-off itself: test_handoff.py): a batch claimed and recorded with a fixed
number of queries, and this process's sender lanes (real threads, real receivers): the caller
never waits on a receiver, an unanswered endpoint is demoted to the slow lane at once and
promoted back when it answers, and deliveries refused a slot wait for the slot in-process."""
import time

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.servers import Receiver
from webhooks import delivery, dispatch, limits, sender, services
from webhooks.models import Delivery, Endpoint
from webhooks.outbox import publish

from .workers import wait_until

pytestmark = pytest.mark.usefixtures("loopback_allowed")


@pytest.fixture
def lanes():
    yield sender.lanes(delivery.WORK)
    dispatch.shutdown()  # the in-process runner (if a test used it) and the lanes


def test_a_batch_costs_the_same_queries_whatever_its_size(realm, receiver_server):
    def run(n):
        endpoints = [services.create_endpoint(realm, receiver_server.url(f"/{n}/{i}"), [])[0] for i in range(n)]
        delivery.process(Delivery.objects.filter(message=publish(realm, "auth.login", {}, endpoints=endpoints))
                         .values_list("pk", flat=True), inline=True)  # warms the signers
        ids = list(Delivery.objects.filter(message=publish(realm, "auth.login", {}, endpoints=endpoints))
                   .values_list("pk", flat=True))
        with CaptureQueriesContext(connection) as queries:
            delivery.process(ids, inline=True)
        assert Delivery.objects.filter(pk__in=ids, state=Delivery.DELIVERED).count() == n
        return len(queries)

    assert run(2) == run(12) <= 10


@pytest.mark.django_db(transaction=True)
def test_the_caller_never_waits_and_a_slow_endpoint_keeps_to_the_slow_lane(realm, lanes, settings):
    settings.IDP_WEBHOOK_SLOW_AFTER = 0.3
    settings.IDP_WEBHOOK_TIMEOUT = 3.0
    slow, fast = Receiver(), Receiver()
    try:
        slow.delay = 1.5
        slow_ep = services.create_endpoint(realm, slow.url(), [])[0]
        fast_ep = services.create_endpoint(realm, fast.url(), [])[0]
        message = publish(realm, "auth.login", {}, endpoints=[slow_ep, fast_ep])
        started = time.monotonic()
        assert delivery.process(Delivery.objects.filter(message=message).values_list("pk", flat=True)) == 2
        assert time.monotonic() - started < 0.5  # handed to the lanes, not sent by the caller
        assert len(fast.wait_for(1, timeout=5)) == 1
        assert wait_until(lambda: Delivery.objects.get(message=message, endpoint=fast_ep).state == Delivery.DELIVERED)
        # No answer after IDP_WEBHOOK_SLOW_AFTER: demoted while its request still hangs.
        assert wait_until(lambda: Endpoint.objects.get(pk=slow_ep.pk).slow_until is not None, timeout=3)
        assert lanes.is_slow(Endpoint.objects.get(pk=slow_ep.pk), delivery.timezone.now())
        second = publish(realm, "auth.login", {}, endpoints=[slow_ep])
        delivery.process(Delivery.objects.filter(message=second).values_list("pk", flat=True))
        # The next one holds a slow-lane thread; the healthy lane holds only the first, begun before.
        assert lanes.slow.used == 1 and lanes.fast.used == 1
        # It answers (late but within the timeout): promoted back.
        assert wait_until(lambda: Endpoint.objects.get(pk=slow_ep.pk).slow_until is None, timeout=8)
        assert wait_until(lambda: Delivery.objects.filter(endpoint=slow_ep, state=Delivery.DELIVERED).count() == 2,
                          timeout=8)
    finally:
        slow.close()
        fast.close()


@pytest.mark.django_db(transaction=True)
def test_deliveries_refused_a_slot_wait_for_it_in_process(realm, lanes, settings):
    settings.IDP_WEBHOOK_INPROCESS = True  # the pull after the slot frees runs here, not on a worker
    server = Receiver()
    try:
        server.delay = 0.8  # longer than the three hand-offs take, even on a busy machine
        endpoint = services.create_endpoint(realm, server.url(), [], max_concurrency=1)[0]
        messages = [publish(realm, "auth.login", {"n": n}, endpoints=[endpoint]) for n in range(3)]
        for message in messages:
            delivery.process(Delivery.objects.filter(message=message).values_list("pk", flat=True))
        # The second is claimed (sending) and waits for the first one's slot here (one waiter per
        # send); the third went back to the database, to be pulled when the slot frees (or, on a
        # machine slow enough that the first send ended meanwhile, waits here too).
        states = list(Delivery.objects.filter(endpoint=endpoint).values_list("state", flat=True))
        assert states.count(Delivery.SENDING) >= 2 and Delivery.DELIVERED not in states
        assert wait_until(lambda: Delivery.objects.filter(endpoint=endpoint, state=Delivery.DELIVERED).count() == 3,
                          timeout=8)
        starts = [r["at"] for r in server.requests]
        assert len(starts) == 3 and all(b - a >= 0.7 for a, b in zip(starts, starts[1:]))  # one at a time
        assert limits.acquire(endpoint.pk, 1, 5) is not None  # the slot was freed at the end
    finally:
        server.close()


@pytest.mark.django_db(transaction=True)
def test_a_thread_refused_a_slot_sees_the_send_granted_it_by_another_thread(realm, lanes, settings, monkeypatch):
    """Several threads of one process process deliveries (the in-process runner, Celery's thread
    pool): one that was granted the endpoint's only slot and is preempted before its send counts
    as this process's must not leave the others unable to wait for it (CI once saw two of three
    deliveries back in the database while the first was sent)."""
    settings.IDP_WEBHOOK_INPROCESS = True
    acquire_many = limits.acquire_many

    def preempted_after_a_grant(wants, lease_seconds):
        grants = acquire_many(wants, lease_seconds)
        if any(tokens for tokens, _ in grants):
            time.sleep(0.3)  # a busy machine's scheduler, between the grant and the send
        return grants

    monkeypatch.setattr(limits, "acquire_many", preempted_after_a_grant)
    server = Receiver()
    try:
        server.delay = 0.8
        endpoint = services.create_endpoint(realm, server.url(), [], max_concurrency=1)[0]
        # each publish hands its delivery to the in-process runner's threads at once
        for n in range(3):
            publish(realm, "auth.login", {"n": n}, endpoints=[endpoint])
        assert wait_until(lambda: Delivery.objects.filter(endpoint=endpoint, state=Delivery.SENDING).count() == 2,
                          timeout=3)
        assert Delivery.objects.filter(endpoint=endpoint, state=Delivery.DELIVERED).count() == 0
        assert wait_until(lambda: Delivery.objects.filter(endpoint=endpoint, state=Delivery.DELIVERED).count() == 3,
                          timeout=8)
    finally:
        server.close()


def test_a_pull_that_leaves_deliveries_waiting_keeps_the_endpoint_flagged(realm, receiver_server, monkeypatch):
    """Deliveries refused a slot wait in the database, the endpoint flagged; a freed slot pulls as
    many as the endpoint may send. Those left behind must stay flagged, or the release of the
    pulled ones' slots finds no flag and they wait for the sweeper's backstop (a minute)."""
    dispatched = []
    monkeypatch.setattr(dispatch, "deliveries", lambda ids: dispatched.append(list(ids)) if ids else None)
    endpoint = services.create_endpoint(realm, receiver_server.url(), [], max_concurrency=1)[0]
    held = limits.acquire(endpoint.pk, 1, 30)  # another worker's send holds the only slot
    ids = [Delivery.objects.get(message=publish(realm, "auth.login", {"n": n}, endpoints=[endpoint])).pk
           for n in range(3)]
    assert delivery.process(ids, inline=True) == 0  # refused: back in the database, the endpoint flagged
    assert limits.release(endpoint.pk, held)  # that send ends and finds deliveries waiting: it pulls one
    delivery.pump(endpoint.pk, 1)
    while dispatched:  # each pulled delivery is sent, and its slot's release pulls the next
        delivery.process(dispatched.pop(0), inline=True)
    assert Delivery.objects.filter(pk__in=ids, state=Delivery.DELIVERED).count() == 3
