"""Prometheus metrics of the webhook receiver (served by the management server's /metrics).

/metrics is served by Granian's main process while requests are handled by its workers, so
nothing here lives in a process's memory: signature failures are counted in the shared cache
(Redis in production), and the age of the oldest queued received event and the number of
dead-lettered ones are read from the database; all of it when /metrics is scraped."""
import logging
import time
from importlib import import_module

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.db.models import Count, Min
from prometheus_client import REGISTRY
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

logger = logging.getLogger("idp.webhooks.receiver")

FAILURES_KEY = "webhooks:receiver:signature-failures:{}"

# Names of receivers and verify_webhook views, registered when their modules are imported.
receivers = set()


def signature_failure(name):
    key = FAILURES_KEY.format(name)
    cache.add(key, 0, timeout=None)
    try:
        cache.incr(key)
    except ValueError:  # evicted between add and incr
        cache.set(key, 1, timeout=None)


def _families():
    return (GaugeMetricFamily("idp_webhook_receiver_oldest_queued_age_seconds",
                              "Age of the oldest received event not yet handled.", labels=["receiver"]),
            GaugeMetricFamily("idp_webhook_receiver_dead_events", "Received events dead-lettered.",
                              labels=["receiver"]),
            CounterMetricFamily("idp_webhook_receiver_signature_failures",
                                "Webhook requests refused with 401 (signature, timestamp, headers).",
                                labels=["receiver"]))


class ReceiverQueueCollector:
    def describe(self):
        # Without this, registering would call collect(): a query before the tables exist.
        return _families()

    def collect(self):
        from .models import ReceivedEvent

        oldest, dead, failures = _families()
        try:
            if not receivers:
                import_module(settings.ROOT_URLCONF)  # this process may not have loaded the views yet
            counts = cache.get_many([FAILURES_KEY.format(name) for name in receivers])
            for name in sorted(receivers):
                failures.add_metric([name], counts.get(FAILURES_KEY.format(name), 0))
            now = time.time()
            for row in (ReceivedEvent.objects.filter(status=ReceivedEvent.QUEUED)
                        .values("source").annotate(first=Min("received_at"))):
                oldest.add_metric([row["source"]], max(0.0, now - row["first"].timestamp()))
            for row in (ReceivedEvent.objects.filter(status=ReceivedEvent.DEAD)
                        .values("source").annotate(n=Count("id"))):
                dead.add_metric([row["source"]], row["n"])
        except Exception:  # the cache or the database is down: the other metrics are still served
            logger.exception("webhooks: receiver metrics unavailable")
        finally:
            # Scraped from the management server's thread: no connection may linger there (a
            # caller inside a transaction, such as a test, keeps its own).
            if not connection.in_atomic_block:
                connection.close()
        yield oldest
        yield dead
        yield failures


_registered = False


def register():
    global _registered
    if not _registered:
        REGISTRY.register(ReceiverQueueCollector())
        _registered = True
