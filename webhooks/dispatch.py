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


def deliveries(ids):
    ids = list(ids)
    batches = [ids[i:i + BATCH] for i in range(0, len(ids), BATCH)]
    if not batches:
        return
    if conf.get("IDP_WEBHOOK_INPROCESS"):
        from . import delivery

        pool = _inprocess()
        for batch in batches:
            pool.submit(_run_closing, delivery.process, batch)
        return
    from .tasks import deliver

    for batch in batches:
        deliver.delay(batch)


def received(ids):
    if not ids:
        return
    if conf.get("IDP_WEBHOOK_INPROCESS"):
        from . import receiver

        pool = _inprocess()
        for pk in ids:
            pool.submit(_run_closing, receiver.process, pk)
        return
    from .tasks import process_received

    for pk in ids:
        process_received.delay(pk)
