"""Deliveries and their log rows carry no foreign-key constraints (decision 0116): four checks a
delivery cost PostgreSQL more than a delivery may spend. What they held is held otherwise: a
delivery is written only with its message, a log row only for a delivery the worker claimed, and
deleting a delivery, its message, its endpoint or its realm deletes its log rows (Django's
collector, which did that before too: the constraints never cascaded). A delivery written by an
event that raced its endpoint's deletion is deleted by its claim; a log row of a delivery deleted
while its send was in flight is kept until the retention purge, and no longer fails the flush it
is written in."""
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from realms import purges
from realms.models import Realm
from webhooks import conf, delivery, services
from webhooks.models import Delivery, DeliveryAttempt, Endpoint, Message
from webhooks.outbox import publish

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("loopback_allowed")]


@pytest.fixture
def endpoints(realm, receiver_server, monkeypatch):
    monkeypatch.setattr("webhooks.dispatch.deliveries", lambda ids: None)
    return [services.create_endpoint(realm, receiver_server.url(), ["auth.*"])[0] for _ in range(2)]


def _logged(realm, endpoints):
    """One event to ``endpoints``, delivered once each: the message."""
    message = publish(realm, "auth.login", {"userId": "u"}, endpoints=endpoints)
    for pk in Delivery.objects.filter(message=message).values_list("pk", flat=True):
        delivery.attempt(pk)
    assert DeliveryAttempt.objects.filter(message_id=message.pk).count() == len(endpoints)
    return message


@pytest.mark.parametrize("model,indexed", [
    (Delivery, {("message_id", "endpoint_id"), ("endpoint_id", "created_at")}),
    (DeliveryAttempt, {("delivery_id",), ("endpoint_id", "started_at"), ("message_id",)})])
def test_no_foreign_key_constraint_and_the_lookups_still_indexed(model, indexed):
    with connection.cursor() as cursor:
        found = connection.introspection.get_constraints(cursor, model._meta.db_table)
    assert [name for name, c in found.items() if c["foreign_key"]] == []
    assert indexed <= {tuple(c["columns"]) for c in found.values() if c["index"] or c["unique"]}


def test_a_delivery_whose_endpoint_went_meanwhile_is_deleted_by_its_claim(realm, endpoints):
    message = _logged(realm, endpoints[:1])
    orphan = Delivery.objects.create(message=message, endpoint_id="gone-endpoint")  # as a racing event writes it
    again = Delivery.objects.get(message=message, endpoint=endpoints[0])
    Delivery.objects.filter(pk=again.pk).update(state=Delivery.PENDING)
    delivery.process([orphan.pk, again.pk], inline=True)
    assert not Delivery.objects.filter(pk=orphan.pk).exists()
    assert DeliveryAttempt.objects.filter(delivery_id=again.pk).count() == 2  # the batch's other one went out


def test_deleting_an_endpoint_deletes_its_log_rows(realm, endpoints):
    message = _logged(realm, endpoints)
    endpoints[0].delete()
    assert list(DeliveryAttempt.objects.filter(message_id=message.pk).values_list("endpoint_id", flat=True)) == [
        endpoints[1].pk]
    assert not DeliveryAttempt.objects.filter(endpoint_id=endpoints[0].pk).exists()


def test_a_purged_message_takes_its_deliveries_log_rows(realm, endpoints):
    message = _logged(realm, endpoints)
    later = timezone.now() + timedelta(days=conf.get("IDP_WEBHOOK_RETENTION_DAYS") + 1)
    DeliveryAttempt.objects.update(started_at=later)  # the log rows alone are not old
    assert purges.run(later)["webhooks.messages"] == 1
    assert not Message.objects.filter(pk=message.pk).exists()
    assert not DeliveryAttempt.objects.filter(message_id=message.pk).exists()


def test_deleting_a_realm_deletes_its_log_rows(realm, endpoints):
    message = _logged(realm, endpoints)
    Realm.objects.filter(pk=realm.pk).delete()
    assert not DeliveryAttempt.objects.filter(message_id=message.pk).exists()
    assert not Endpoint.objects.filter(pk__in=[e.pk for e in endpoints]).exists()


@pytest.mark.django_db(transaction=True)  # a constraint is checked when the flush commits
def test_a_delivery_deleted_while_in_flight_does_not_fail_the_others_results(realm, endpoints):
    message = publish(realm, "auth.login", {"userId": "u"}, endpoints=endpoints)
    jobs = delivery._claim(list(Delivery.objects.filter(message=message).values_list("pk", flat=True)),
                           timezone.now())
    gone, kept = sorted(jobs, key=lambda j: j.endpoint.pk != endpoints[0].pk)
    Delivery.objects.filter(pk=gone.delivery_id).delete()  # its endpoint's deliveries, deleted by hand
    delivery.record([delivery.Result(job, timezone.now(), 3, 200, "", b"", None, False) for job in jobs])
    assert Delivery.objects.get(pk=kept.delivery_id).state == Delivery.DELIVERED
    assert DeliveryAttempt.objects.filter(delivery_id=kept.delivery_id, success=True).count() == 1
    # The gone delivery's row stays until the retention purge takes it with the other old rows.
    orphan = DeliveryAttempt.objects.get(delivery_id=gone.delivery_id)
    later = orphan.started_at + timedelta(days=conf.get("IDP_WEBHOOK_RETENTION_DAYS") + 1)
    assert purges.run(later)["webhooks.attempts"] == 2
    assert not DeliveryAttempt.objects.exists()
