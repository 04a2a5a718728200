"""Prometheus metrics of the service, served by the management server's /metrics.

In production Granian's workers serve the requests while /metrics is answered by its main
process, so the workers' figures cannot live in their memory: ``manage.py start`` calls
``use_multiprocess_dir`` before the workers fork, and from then on every value is kept in files
there (prometheus_client's multiprocess mode), summed across the workers when scraped. The
workers' own process figures (CPU, memory, descriptors) are read from /proc by the main process,
their parent, at each scrape, under ``idp_worker_process_*`` with a ``pid`` label.

Counters and histograms only: they stay right when a worker dies (its files keep its counts, as
totals must never go back), so nothing needs ``mark_process_dead``, which is for live gauges."""
import os
import shutil
import time
from pathlib import Path

from django.db import transaction
from prometheus_client import REGISTRY, Counter, Histogram, values
from prometheus_client.metrics_core import Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.process_collector import ProcessCollector

MULTIPROCESS_DIR = "PROMETHEUS_MULTIPROC_DIR"  # prometheus_client's variable

# Registered nowhere: ``collect`` below serves them, from this process or from the workers' files.
HTTP_REQUESTS = Histogram(
    "http_server_requests_seconds", "HTTP requests by method, route (the URL pattern's name) and status.",
    ["method", "route", "status"], registry=None)
# Keycloak's user event metric (its event-metrics-user-* options), with all its tags.
USER_EVENTS = Counter(
    "keycloak_user_events", "Keycloak user events", ["realm", "client_id", "event", "error", "idp"], registry=None)

# Keycloak's (Agroal's) connection figure, by Django's alias as its datasource name ("default").
DB_CONNECTIONS = Counter("agroal_creation_count", "Connections opened to the database.", ["datasource"],
                         registry=None)
DB_QUERIES = Histogram("idp_db_query_seconds", "Database statements by datasource (Django's alias).",
                       ["datasource"], registry=None,
                       buckets=(.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, float("inf")))
# The per-process copies of realms.data.shared_cache: a hit is a lookup served from this process.
LOCAL_CACHE = Counter("idp_local_cache_lookups", "Lookups of per-process copies, by cache and result (hit, miss).",
                      ["cache", "result"], registry=None)
SERVED_HERE = (HTTP_REQUESTS, USER_EVENTS, DB_CONNECTIONS, DB_QUERIES, LOCAL_CACHE)

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
UNMATCHED = "UNMATCHED"  # no URL pattern: the raw path is never a label (unbounded, may carry secrets)


def use_multiprocess_dir(path):
    """Keep every value from now on (in this process and those it forks) in files under ``path``,
    emptied first: a restart counts from zero, as Keycloak's counters do."""
    shutil.rmtree(path, ignore_errors=True)
    Path(path).mkdir(parents=True)
    # Values made before (the configuration check's connection) would stay in this memory; dropped
    # before the switch, which refuses to clear (and warns on every start).
    for metric in SERVED_HERE:
        metric.clear()
    os.environ[MULTIPROCESS_DIR] = str(path)
    # prometheus_client picks its value class when first imported, which Django's start-up did.
    values.ValueClass = values.MultiProcessValue()


class RequestMetricsMiddleware:
    """First in the stack: times every request, by the route that served it."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.perf_counter()
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        HTTP_REQUESTS.labels(request.method if request.method in METHODS else "OTHER",
                             match.view_name if match else UNMATCHED,
                             str(response.status_code)).observe(time.perf_counter() - started)
        return response


def on_realm_event(sender, event, **kwargs):
    """Counts a user event once its transaction commits (a rolled-back event never happened)."""
    if event.kind != event.USER:
        return
    kind = event.type.lower()
    # An unknown client's id is whatever the caller sent: no label of it (cardinality).
    client_id = "" if event.error == "client_not_found" else event.client_id
    labels = (event.realm.name, client_id, kind.removesuffix("_error"), event.error,
              (event.details or {}).get("identity_provider", ""))
    transaction.on_commit(lambda: USER_EVENTS.labels(*labels).inc())


def _on_connection(sender, connection, **kwargs):
    DB_CONNECTIONS.labels(connection.alias).inc()
    # Sent at every (re)connection of the same wrapper object: one timer is enough.
    if _timed not in connection.execute_wrappers:
        connection.execute_wrappers.insert(0, _timed)


def _timed(execute, sql, params, many, context):
    started = time.perf_counter()
    try:
        return execute(sql, params, many, context)
    finally:
        DB_QUERIES.labels(context["connection"].alias).observe(time.perf_counter() - started)


def _count_local_copy(namespace, hit):
    LOCAL_CACHE.labels(namespace, "hit" if hit else "miss").inc()


def listen():
    from django.db.backends.signals import connection_created

    from realms.audit.events import realm_event
    from realms.data import shared_cache

    realm_event.connect(on_realm_event, dispatch_uid="idp.metrics")
    connection_created.connect(_on_connection, dispatch_uid="idp.metrics")
    shared_cache.count = _count_local_copy


def _worker_pids():
    pids = set()
    for children in Path("/proc/self/task").glob("*/children"):
        try:
            pids.update(int(pid) for pid in children.read_text().split())
        except OSError:  # a thread that ended
            continue
    return sorted(pids)


def _worker_processes():
    """``process_*`` of each child process (Granian's workers), labelled with its pid."""
    families = {}
    for pid in _worker_pids():
        for family in ProcessCollector(namespace="idp_worker", pid=lambda pid=pid: pid, registry=None).collect():
            merged = families.setdefault(family.name, Metric(family.name, family.documentation, family.type))
            for sample in family.samples:
                merged.add_sample(sample.name, {**sample.labels, "pid": str(pid)}, sample.value)
    return families.values()


class Exposition:
    """What /metrics serves: this process's registry (its process figures, the webhook receiver's
    gauges) and the service's metrics, from the workers' files in multiprocess mode."""

    def collect(self):
        yield from REGISTRY.collect()
        if os.environ.get(MULTIPROCESS_DIR):
            yield from MultiProcessCollector(None).collect()
            yield from _worker_processes()
        else:
            for metric in SERVED_HERE:
                yield from metric.collect()
