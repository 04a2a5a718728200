"""Realm events: written once, in the transaction of the change they record.

``emit`` stores the event when the realm's Save events is on (with its expiration) and always
sends the ``realm_event`` signal inside the same transaction; listeners (webhooks' outbox,
logging) write their own rows there too, so either all of it commits or none of it does."""
import logging
from datetime import timedelta

from django.dispatch import Signal
from django.utils import timezone

from .models import Event

logger = logging.getLogger("idp.events")

# Sent with event=<Event, saved or not>; receivers run inside the caller's transaction.
realm_event = Signal()


def emit(realm, type, *, kind=Event.USER, client_id="", user_id="", session_id="", ip_address="",
         error="", details=None, resource_type="", resource_path="", representation=""):
    now = timezone.now()
    event = Event(
        realm=realm, kind=kind, type=type, time=now, client_id=client_id or "", user_id=user_id or "",
        session_id=session_id or "", ip_address=ip_address or "", error=error or "",
        details=details or {}, resource_type=resource_type, resource_path=resource_path,
        representation=representation,
    )
    save = realm.admin_events_enabled if kind == Event.ADMIN else realm.events_enabled
    if save and (kind == Event.ADMIN or not realm.enabled_event_types or type in realm.enabled_event_types):
        if realm.events_expiration:
            event.expires_at = now + timedelta(seconds=realm.events_expiration)
        event.save()
    if error:
        # Errors are logged even when not stored (Keycloak does the same); never secrets.
        logger.warning("event %s realm=%s client=%s user=%s error=%s", type, realm.name, client_id, user_id, error)
    realm_event.send(sender=Event, event=event)
    return event


def purge_expired(now=None):
    """Delete stored events past their expiration; returns how many."""
    deleted, _ = Event.objects.filter(expires_at__lte=now or timezone.now()).delete()
    return deleted
