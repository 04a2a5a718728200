"""Prometheus metrics of the webhook sender and receiver (served by the management server's /metrics).

/metrics is served by Granian's main process while requests are handled by its workers and
deliveries sent by the Celery workers (other processes, often other machines), so nothing here
lives in a process's memory: delivery outcomes and signature failures are counted in the shared
cache (Redis in production), and the sender's queue (deliveries pending and sending, how late
the most overdue one is), the age of the oldest queued received event and the number of
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
OUTCOMES_KEY = "webhooks:sender:attempts:{}"
# An attempt's outcome: its delivery delivered, to be tried again, or failed for good.
OUTCOMES = ("delivered", "retry", "failed")

# Names of receivers and verify_webhook views, registered when their modules are imported.
receivers = set()


def _count(key, n=1):
    """One round trip while the key exists (every count but the first)."""
    try:
        cache.incr(key, n)
    except ValueError:  # first count, or evicted: start it, unless another process just did
        if not cache.add(key, n, timeout=None):
            cache.incr(key, n)


def signature_failure(name):
    _count(FAILURES_KEY.format(name))


def attempts_recorded(outcomes):
    """``outcomes``: attempts of a flush of results by outcome; one cache call per outcome seen
    (held by tests/webhooks/test_cost_model.py)."""
    for outcome, n in outcomes.items():
        if n:
            _count(OUTCOMES_KEY.format(outcome), n)


def _families():
    return (GaugeMetricFamily("idp_webhook_receiver_oldest_queued_age_seconds",
                              "Age of the oldest received event not yet handled.", labels=["receiver"]),
            GaugeMetricFamily("idp_webhook_receiver_dead_events", "Received events dead-lettered.",
                              labels=["receiver"]),
            CounterMetricFamily("idp_webhook_receiver_signature_failures",
                                "Webhook requests refused with 401 (signature, timestamp, headers).",
                                labels=["receiver"]))


class _ScrapedCollector:
    """Figures read from the shared cache and the database at each scrape. If either is down the
    other metrics are still served; the management server's thread keeps no connection (a caller
    inside a transaction, such as a test, keeps its own)."""

    name = ""  # and families(), fill(*families): each collector's own

    def describe(self):
        # Without this, registering would call collect(): a query before the tables exist.
        return self.families()

    def collect(self):
        families = self.families()
        try:
            self.fill(*families)
        except Exception:
            logger.exception("webhooks: %s metrics unavailable", self.name)
        finally:
            if not connection.in_atomic_block:
                connection.close()
        yield from families


class ReceiverQueueCollector(_ScrapedCollector):
    name = "receiver"

    def families(self):
        return _families()

    def fill(self, oldest, dead, failures):
        from .models import ReceivedEvent

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


def _sender_families():
    return (GaugeMetricFamily("idp_webhook_sender_queue_depth", "Deliveries waiting (pending) or in flight (sending).",
                              labels=["state"]),
            GaugeMetricFamily("idp_webhook_sender_lag_seconds", "How long past its time the most overdue pending "
                              "delivery is (0 when none is due)."),
            CounterMetricFamily("idp_webhook_delivery_attempts", "Delivery attempts by outcome: delivered, retry "
                                "(failed, tried again later), failed (for good).", labels=["outcome"]))


class SenderQueueCollector(_ScrapedCollector):
    name = "sender"

    def families(self):
        return _sender_families()

    def fill(self, depth, lag, attempts):
        from .models import Delivery

        counts = cache.get_many([OUTCOMES_KEY.format(o) for o in OUTCOMES])
        for outcome in OUTCOMES:
            attempts.add_metric([outcome], counts.get(OUTCOMES_KEY.format(outcome), 0))
        # Each state has its partial index: both counts and the minimum are read from them.
        by_state = dict(Delivery.objects.filter(state__in=(Delivery.PENDING, Delivery.SENDING)).order_by()
                        .values_list("state").annotate(n=Count("id")))
        for state in (Delivery.PENDING, Delivery.SENDING):
            depth.add_metric([state], by_state.get(state, 0))
        due = Delivery.objects.filter(state=Delivery.PENDING).aggregate(first=Min("next_attempt_at"))["first"]
        lag.add_metric([], max(0.0, time.time() - due.timestamp()) if due else 0.0)


_registered = False


def register():
    global _registered
    if not _registered:
        REGISTRY.register(ReceiverQueueCollector())
        REGISTRY.register(SenderQueueCollector())
        _registered = True
