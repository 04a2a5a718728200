"""Retention of the webhook logs (``IDP_WEBHOOK_RETENTION_DAYS``): delivery attempts, messages
no delivery still waits on (their deliveries go with them) and handled receiver records older
than the limit, deleted by the realms' bounded purge task (``realms.purges``)."""
from datetime import timedelta

from realms.purges import register

from . import conf
from .models import Delivery, DeliveryAttempt, Message, ReceivedEvent


def _cutoff(now):
    return now - timedelta(days=conf.get("IDP_WEBHOOK_RETENTION_DAYS"))


def old_attempts(now):
    return DeliveryAttempt.objects.filter(started_at__lt=_cutoff(now))


def old_messages(now):
    return Message.objects.filter(created_at__lt=_cutoff(now)).exclude(
        deliveries__state__in=[Delivery.PENDING, Delivery.SENDING])


def old_received(now):
    return ReceivedEvent.objects.filter(received_at__lt=_cutoff(now)).exclude(status=ReceivedEvent.QUEUED)


def register_all():
    """Called from ``WebhooksConfig.ready``."""
    register("webhooks.attempts", old_attempts)
    register("webhooks.messages", old_messages)
    register("webhooks.received", old_received)
