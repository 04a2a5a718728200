"""Hands work to whoever runs it: Celery workers in production, threads of this process in dev.

Callers pass ids only after the rows are committed (``transaction.on_commit``); a lost hand-off
is harmless because the sweeper finds undispatched rows in the database and dispatches them.

Deliveries are not Celery tasks: their ids go to one Redis list (``QUEUE``, one push per
committed event or sweep) that every worker's claimer drains in batches (``take``, run by
``webhooks.sender``); a Celery message per event cost the worker more than the claim and the
sends of its deliveries (decision 0119). Received events are Celery tasks, one per event.

This module sits below the work it hands out: ``WebhooksConfig.ready`` registers, per kind of
job, the function that does it and the Celery task that runs it (``register``), and the sweep.
"""
import logging
import threading
from concurrent.futures import ThreadPoolExecutor

from django.core.exceptions import ImproperlyConfigured
from django.db import connection

from realms.registry import Registry

from . import conf, sender

logger = logging.getLogger("idp.webhooks")

BATCH = 100  # ids per job of the in-process runner
DELIVERIES, RECEIVED = "deliveries", "received"
QUEUE = "webhooks:due"  # the Redis list of delivery ids handed to the workers
WAIT = 1.0  # seconds a worker's pull waits on an empty list (its shutdown waits at most this)

_lock = threading.Lock()
_executor = None
_stop = threading.Event()
_jobs = Registry("webhook jobs")  # kind -> (work function, Celery task or None)
_sweep = None


def register(kind, work, task=None):
    """Jobs of ``kind`` run as ``work(job)`` in-process (dev mode), otherwise as the Celery
    ``task``; deliveries have none (they go through ``QUEUE``)."""
    _jobs.add(kind, (work, task))


def register_sweep(sweep):
    """The periodic sweep the dev-mode runner calls (Celery beat calls its task in production)."""
    global _sweep
    _sweep = sweep


def _inprocess():
    """The dev-mode runner: a small thread pool plus one sweeper thread, started on first use."""
    global _executor
    with _lock:
        if _executor is None:
            _stop.clear()
            _executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="webhooks")
            threading.Thread(target=_sweep_forever, name="webhooks-sweeper", daemon=True).start()
            logger.warning("webhooks: deliveries run in-process (dev mode), not by Celery workers")
        return _executor


def _sweep_forever():
    while not _stop.wait(conf.get("IDP_WEBHOOK_SWEEP_INTERVAL")):
        try:
            _sweep()
        except Exception:  # the dev runner must outlive a database hiccup
            logger.exception("webhooks: in-process sweep failed")
        finally:
            connection.close()


def _run_closing(fn, *args):
    try:
        fn(*args)
    except Exception:
        logger.exception("webhooks: in-process task failed")
    finally:
        # Dev mode: connections are cheap (often SQLite) and must not outlive the work.
        connection.close()


def shutdown():
    """Stop the in-process runner and the sender lanes (end of dev server, tests)."""
    global _executor
    with _lock:
        executor, _executor = _executor, None
    _stop.set()
    if executor is not None:
        executor.shutdown(wait=True)
    sender.shutdown()


def _run_here(kind, jobs):
    pool = _inprocess()
    for job in jobs:
        pool.submit(_run_closing, _jobs[kind][0], job)


def _redis():
    url = conf.get("IDP_WEBHOOK_REDIS_URL")
    if not url:
        raise ImproperlyConfigured("webhook deliveries reach the workers through Redis: set IDP_WEBHOOK_REDIS_URL "
                                   "(by default the Celery broker's), or IDP_WEBHOOK_INPROCESS to send them from "
                                   "this process (dev mode)")
    # The pull's wait (WAIT) is shorter than the client's bound on a command (5 s by default).
    return conf.redis_client(url)


def deliveries(ids):
    """Committed deliveries to the workers: one push to ``QUEUE`` (or to the in-process runner)."""
    ids = list(ids)
    if not ids:
        return
    if conf.get("IDP_WEBHOOK_INPROCESS"):
        _run_here(DELIVERIES, [ids[i:i + BATCH] for i in range(0, len(ids), BATCH)])
    else:
        _redis().rpush(QUEUE, *ids)


def take(n):
    """Up to ``n`` delivery ids from ``QUEUE``, in the order pushed, waiting up to ``WAIT``
    seconds for the first ([] then). What is taken is gone from the list: ids of a worker that
    dies before it claims them stay pending in the database, and the sweeper sends them."""
    popped = _redis().blmpop(WAIT, 1, QUEUE, direction="LEFT", count=n)
    return [int(pk) for pk in popped[1]] if popped else []


def deliveries_here(ids):
    """Deliveries a worker found due itself (a freed slot's pull, the next of an ordered subject):
    to its own claimer when it runs sender lanes, not through Redis to any worker (a lost
    hand-off is found by the sweeper); otherwise as ``deliveries``."""
    ids = list(ids)
    if ids and not sender.claim_here(ids):
        deliveries(ids)


def received(ids):
    if not ids:
        return
    if conf.get("IDP_WEBHOOK_INPROCESS"):
        _run_here(RECEIVED, ids)
        return
    task = _jobs[RECEIVED][1]
    for job in ids:
        task.delay(job)
