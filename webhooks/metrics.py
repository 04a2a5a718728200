"""Prometheus metrics of the webhook receiver (served by the management server's /metrics).

Signature failures are counted where they happen (the web process). The age of the oldest queued
received event and the number of dead-lettered ones are read from the database when /metrics is
scraped, so they are right whichever process (web or worker) moved the queue."""
import time

from django.db import connection
from django.db.models import Count, Min
from prometheus_client import REGISTRY, Counter
from prometheus_client.core import GaugeMetricFamily

signature_failures = Counter(
    "idp_webhook_receiver_signature_failures", "Webhook requests refused with 401 (signature, timestamp, headers).",
    ["receiver"])


def _families():
    return (GaugeMetricFamily("idp_webhook_receiver_oldest_queued_age_seconds",
                              "Age of the oldest received event not yet handled.", labels=["receiver"]),
            GaugeMetricFamily("idp_webhook_receiver_dead_events", "Received events dead-lettered.",
                              labels=["receiver"]))


class ReceiverQueueCollector:
    def describe(self):
        # Without this, registering would call collect(): a query before the tables exist.
        return _families()

    def collect(self):
        from .models import ReceivedEvent

        oldest, dead = _families()
        try:
            now = time.time()
            for row in (ReceivedEvent.objects.filter(status=ReceivedEvent.QUEUED)
                        .values("source").annotate(first=Min("received_at"))):
                oldest.add_metric([row["source"]], max(0.0, now - row["first"].timestamp()))
            for row in (ReceivedEvent.objects.filter(status=ReceivedEvent.DEAD)
                        .values("source").annotate(n=Count("id"))):
                dead.add_metric([row["source"]], row["n"])
        finally:
            # Scraped from the management server's thread: no connection may linger there (a
            # caller inside a transaction, such as a test, keeps its own).
            if not connection.in_atomic_block:
                connection.close()
        yield oldest
        yield dead


_registered = False


def register():
    global _registered
    if not _registered:
        REGISTRY.register(ReceiverQueueCollector())
        _registered = True
