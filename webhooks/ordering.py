"""Ordered delivery, an option per endpoint (docs/decisions/0102-ordered-webhook-delivery.md).

A delivery to an ordered endpoint carries its event's subject (``Delivery.subject``; "" on
unordered endpoints, which nothing here ever reads). It goes out only when no earlier delivery
(smaller id: written before it) of the same endpoint and subject is unfinished, that is pending
or sending: the claim holds the others (``hold``), and a delivery that finishes, delivered or
failed for good, lets the next of its subject go (``release``). Both look again after their
transaction commits, so a hold and a finish that cross are never both missed; a held delivery
is also due again after its predecessor's lease or next attempt, in case a release is lost.
"""
import logging
from datetime import timedelta

from django.db import transaction
from django.db.models import OuterRef, Subquery

from . import dispatch
from .models import Delivery

logger = logging.getLogger("idp.webhooks")

UNFINISHED = (Delivery.PENDING, Delivery.SENDING)
REALM = "realm"


def subject(data):
    """The subject of an event from its ``data`` (``webhooks.catalogue.payload_data``): an admin
    event's is the top object of its resource path (``users/<id>``, ``clients/<id>``, so a user's
    role mappings follow the user); a user event's the user; otherwise the realm."""
    path = data.get("resourcePath") or ""
    if path:
        return "/".join(path.split("/")[:2])[:255]
    user_id = data.get("userId")
    return f"users/{user_id}"[:255] if user_id else REALM


def _heads(pks):
    """{pk: the first unfinished delivery of its endpoint and subject} for deliveries ``pks``."""
    first = (Delivery.objects.filter(endpoint_id=OuterRef("endpoint_id"), subject=OuterRef("subject"),
                                     state__in=UNFINISHED)
             .exclude(subject="")  # the partial index's predicate, so that the index serves
             .order_by("pk").values("pk")[:1])
    return dict(Delivery.objects.filter(pk__in=pks).order_by().annotate(head=Subquery(first))
                .values_list("pk", "head"))


def hold(pks, now, lease_seconds):
    """Of ``pks`` (due pending deliveries with a subject, locked by a claim), those behind an
    unfinished earlier delivery of their subject: they stay pending, due again (a backstop) a
    lease after that one's next attempt or lease, and say what they wait for. Returns their set."""
    if not pks:
        return set()
    behind = {pk: head for pk, head in _heads(pks).items() if head is not None and head < pk}
    if not behind:
        return set()
    heads = {pk: (message_id, lease_until if state == Delivery.SENDING else next_attempt_at)
             for pk, message_id, state, next_attempt_at, lease_until in Delivery.objects.filter(
                 pk__in=set(behind.values())).values_list("pk", "message_id", "state", "next_attempt_at", "lease_until")}
    # One statement for every held row (an event's deliveries to many ordered endpoints).
    Delivery.objects.bulk_update([Delivery(
        pk=pk, next_attempt_at=max(heads[head][1] or now, now) + timedelta(seconds=lease_seconds), dispatched_at=None,
        last_error=f"held: {heads[head][0]}, an earlier event of the same subject, is not delivered yet")
        for pk, head in behind.items()], ["next_attempt_at", "dispatched_at", "last_error"])
    held = set(behind)
    # The head may have finished after this claim read it and before the hold is committed.
    transaction.on_commit(lambda: _let_go(held, now), robust=True)
    return held


def _let_go(pks, now):
    """Of held deliveries ``pks``, dispatch those now first of their subject."""
    _go([pk for pk, head in _heads(pks).items() if head == pk], now)


def _go(pks, now):
    if pks:
        Delivery.objects.filter(pk__in=pks, state=Delivery.PENDING).update(
            next_attempt_at=now, dispatched_at=now, last_error="")
        dispatch.deliveries_here(pks)  # one already sending is skipped by the claim


def release(finished, now):
    """``finished``: (job, state, error) of deliveries with a subject that were just written
    delivered or failed. The next delivery of each one's subject goes now; one that failed for
    good says, in its ``last_error``, that its subject went on without it."""
    for job, state, error in finished:
        if state == Delivery.FAILED:
            note = f"failed for good; later events of its subject ({job.subject}) go on"
            Delivery.objects.filter(pk=job.delivery_id).update(last_error=f"{error}; {note}"[:255] if error else note)
            logger.info("webhooks: %s to endpoint %s failed for good; the next of %s goes", job.message_id,
                        job.endpoint.id, job.subject)
    # The first unfinished one of each subject, found through the index, never by reading the
    # subject's whole backlog (an aggregate over it made every release dearer as the backlog grew).
    _go(sorted({head for head in _heads([job.delivery_id for job, _, _ in finished]).values() if head}), now)


def leave_order(pks):
    """Deliveries redelivered by hand that had finished leave the order: they go at once and
    hold nothing back (their turn passed; receivers deduplicate on webhook-id)."""
    Delivery.objects.filter(pk__in=pks, state__in=(Delivery.DELIVERED, Delivery.FAILED)).exclude(
        subject="").update(subject="")


def stop(endpoint_id, now):
    """The endpoint is no longer ordered: its unfinished deliveries leave the order, the held
    ones due now (the sweeper sends them)."""
    unfinished = Delivery.objects.filter(endpoint_id=endpoint_id, state__in=UNFINISHED).exclude(subject="")
    unfinished.filter(state=Delivery.PENDING, next_attempt_at__gt=now, last_error__startswith="held: ").update(
        subject="", next_attempt_at=now, dispatched_at=None, last_error="")
    unfinished.update(subject="")
