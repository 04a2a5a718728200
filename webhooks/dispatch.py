"""Hands work to whoever runs it: Celery workers in production, a thread of this process in dev.

Callers pass ids only after the rows are committed (``transaction.on_commit``); a lost hand-off
is harmless because the sweeper finds undispatched rows in the database and dispatches them."""
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from . import conf

logger = logging.getLogger("idp.webhooks")

_lock = threading.Lock()
_executor = None


def _inprocess():
    """The dev-mode runner: a small thread pool plus one sweeper thread, started on first use."""
    global _executor
    with _lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=8, thread_name_prefix="webhooks")
            threading.Thread(target=_sweep_forever, name="webhooks-sweeper", daemon=True).start()
            logger.warning("webhooks: deliveries run in-process (dev mode), not by Celery workers")
        return _executor


def _sweep_forever():
    from . import delivery

    while True:
        time.sleep(conf.get("IDP_WEBHOOK_SWEEP_INTERVAL"))
        try:
            delivery.sweep()
        except Exception:  # the dev runner must outlive a database hiccup
            logger.exception("webhooks: in-process sweep failed")


def _run_closing(fn, *args):
    from django.db import close_old_connections

    try:
        fn(*args)
    except Exception:
        logger.exception("webhooks: in-process task failed")
    finally:
        close_old_connections()


def deliveries(ids):
    if not ids:
        return
    if conf.get("IDP_WEBHOOK_INPROCESS"):
        from . import delivery

        pool = _inprocess()
        for pk in ids:
            pool.submit(_run_closing, delivery.attempt, pk)
        return
    from .tasks import deliver

    for pk in ids:
        deliver.delay(pk)


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
