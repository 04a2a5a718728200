"""The transactional outbox: a listener of ``realm_event`` that writes the webhook message and its
deliveries in the caller's transaction, and hands them to the workers only after the commit.

If the change rolls back, no message exists; if the hand-off after the commit is lost (broker
down, process killed), the sweeper finds the committed, undispatched deliveries."""
import json

from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.utils import timezone

from realms.audit.events import realm_event
from realms.data.realm_cache import max_realms
from realms.data.shared_cache import LocalCopies
from realms.http.action_tokens import issuer
from realms.models import Event

from . import catalogue, delivery, ordering, payloads
from .models import Delivery, Endpoint, Message

# Every realm event comes here (each token grant), yet most realms have no webhook endpoint:
# whether a realm has enabled endpoints is kept per process (realms.data.shared_cache), for as
# many realms as their configurations are (decision 0107), so it does not grow with every realm
# the process ever served.
_has_enabled_endpoints = LocalCopies(
    "webhook-endpoints", lambda realm_id: Endpoint.objects.filter(realm_id=realm_id, enabled=True).exists(),
    max_entries=max_realms)


def _on_endpoint_change(sender, instance, **kwargs):
    _has_enabled_endpoints.invalidate(instance.realm_id)


def on_realm_event(sender, event, **kwargs):
    event_type = catalogue.webhook_type(event)
    if event_type is None or not _has_enabled_endpoints.get(event.realm_id):
        return
    endpoints = [e for e in Endpoint.objects.filter(realm_id=event.realm_id, enabled=True)
                 .only("id", "event_types", "slow_until", "throttled_until", "max_concurrency", "payload",
                       "payload_version", "envelope", "ordered")
                 if e.subscribes_to(event_type)]
    if endpoints:
        publish(event.realm, event_type, catalogue.payload_data(event, event.realm.name),
                endpoints=endpoints, occurred_at=event.time, source_event_id=event.id, event=event)


def connect_signals():
    """The outbox hears every realm event; called from ``WebhooksConfig.ready``."""
    post_save.connect(_on_endpoint_change, sender=Endpoint, dispatch_uid="webhooks.outbox.endpoint-saved")
    post_delete.connect(_on_endpoint_change, sender=Endpoint, dispatch_uid="webhooks.outbox.endpoint-deleted")
    realm_event.connect(on_realm_event, sender=Event, dispatch_uid="webhooks.outbox")


def publish(realm, event_type, data, *, endpoints, occurred_at=None, source_event_id="", event=None):
    """Write one message and a delivery per endpoint in the current transaction; returns it.
    The bodies of formats other than thin and standard are rendered only when an endpoint uses
    one, and a fat one's snapshot of ``event``'s object taken once per payload version."""
    now = timezone.now()
    occurred_at = occurred_at or now
    message_id = delivery.message_id()  # traced: the trace's context
    bodies = payloads.bodies(
        {e.payload_format for e in endpoints}, message_id=message_id, source=issuer(realm), event_type=event_type,
        occurred_at=occurred_at, data=data, snapshot=lambda version: catalogue.snapshot(event, version))
    message = Message.objects.create(
        realm=realm, type=event_type, payload=payloads.thin_body(event_type, occurred_at, data),
        bodies=json.dumps(bodies, ensure_ascii=False) if bodies else "",
        created_at=now, source_event_id=source_event_id, id=message_id,
    )
    subject = ordering.subject(data) if any(e.ordered for e in endpoints) else ""
    deliveries = Delivery.objects.bulk_create([
        Delivery(message=message, endpoint=e, format=e.payload_format, next_attempt_at=now, dispatched_at=now,
                 created_at=now, subject=subject if e.ordered else "")
        for e in endpoints
    ])
    # robust: a broker or Redis that is away must not fail the committed change; the sweeper
    # dispatches what this hand-off could not.
    transaction.on_commit(lambda: delivery.hand_off(deliveries, endpoints), robust=True)
    return message
