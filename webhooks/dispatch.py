"""Hands work to whoever runs it: Celery workers in production, threads of this process in dev.

Callers pass ids only after the rows are committed (``transaction.on_commit``); a lost hand-off
is harmless because the sweeper finds undispatched rows in the database and dispatches them.
Deliveries travel in batches (one task per committed event, or per ``BATCH`` ids of a sweep),
never one task per delivery."""
import logging
import threading
from concurrent.futures import ThreadPoolExecutor

from . import conf

logger = logging.getLogger("idp.webhooks")

BATCH = 100

_lock = threading.Lock()
_executor = None
_stop = threading.Event()


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
    from django.db import connection

    from . import delivery

    while not _stop.wait(conf.get("IDP_WEBHOOK_SWEEP_INTERVAL")):
        try:
            delivery.sweep()
        except Exception:  # the dev runner must outlive a database hiccup
            logger.exception("webhooks: in-process sweep failed")
        finally:
            connection.close()


def _run_closing(fn, *args):
    from django.db import connection

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
    from . import sender

    with _lock:
        executor, _executor = _executor, None
    _stop.set()
    if executor is not None:
        executor.shutdown(wait=True)
    sender.shutdown()


def _run(jobs, work, task):
    """Each job to ``work(job)`` in-process (dev mode) or to the Celery ``task``."""
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
        from . import delivery, tasks

        _run([ids[i:i + BATCH] for i in range(0, len(ids), BATCH)], delivery.process, tasks.deliver)


def received(ids):
    if ids:
        from . import receiver, tasks

        _run(ids, receiver.process, tasks.process_received)
