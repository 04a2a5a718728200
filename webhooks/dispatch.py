"""Hands work to whoever runs it: Celery workers in production, threads of this process in dev.

Callers pass ids only after the rows are committed (``transaction.on_commit``); a lost hand-off
is harmless because the sweeper finds undispatched rows in the database and dispatches them.
Deliveries travel in batches (one task per committed event, or per ``BATCH`` ids of a sweep),
never one task per delivery.

This module sits below the work it hands out: ``WebhooksConfig.ready`` registers, per kind of
job, the function that does it and the Celery task that runs it (``register``), and the sweep.
"""
import logging
import threading
from concurrent.futures import ThreadPoolExecutor

from django.db import connection

from realms.registry import Registry

from . import conf, sender

logger = logging.getLogger("idp.webhooks")

BATCH = 100
DELIVERIES, RECEIVED = "deliveries", "received"

_lock = threading.Lock()
_executor = None
_stop = threading.Event()
_jobs = Registry("webhook jobs")  # kind -> (work function, Celery task)
_sweep = None


def register(kind, work, task):
    """Jobs of ``kind`` run as ``work(job)`` in-process (dev mode) or as the Celery ``task``."""
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


def _run(kind, jobs):
    """Each job to its kind's work function in-process (dev mode) or to its Celery task."""
    work, task = _jobs[kind]
    if conf.get("IDP_WEBHOOK_INPROCESS"):
        pool = _inprocess()
        for job in jobs:
            pool.submit(_run_closing, work, job)
        return
    for job in jobs:
        task.delay(job)


def deliveries(ids):
    ids = list(ids)
    if ids:
        _run(DELIVERIES, [ids[i:i + BATCH] for i in range(0, len(ids), BATCH)])


def deliveries_here(ids):
    """Deliveries a worker found due itself (a freed slot's pull, the next of an ordered subject):
    to its own claimer when it runs sender lanes, not through the broker and a Celery task (a
    lost hand-off is found by the sweeper, as with the broker); otherwise as ``deliveries``."""
    ids = list(ids)
    if ids and not sender.claim_here(ids):
        deliveries(ids)


def received(ids):
    if ids:
        _run(RECEIVED, ids)
