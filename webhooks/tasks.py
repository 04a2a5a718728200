"""Celery tasks and worker hooks: thin wrappers; the work is in delivery.py and receiver.py so dev
mode can run the same functions in a thread."""
from celery import shared_task
from celery.signals import worker_ready, worker_shutdown

from . import delivery, dispatch, receiver, sender


@shared_task(name="webhooks.process_received", acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def process_received(received_id):
    receiver.process(received_id)


@shared_task(name="webhooks.sweep", ignore_result=True)
def sweep():
    delivery.sweep()


@worker_ready.connect(dispatch_uid="webhooks.sender.serve")
def _serve(**kwargs):
    # Deliveries are no Celery task: this process's lanes take them from the Redis list every
    # worker drains (decision 0119). What makes a killed worker lose nothing is the lease on the
    # claimed rows and the sweeper, which dispatches what was taken and never claimed again.
    sender.lanes(delivery.WORK).serve(dispatch.take)


@worker_shutdown.connect(dispatch_uid="webhooks.sender.shutdown")
def _finish_sends(**kwargs):
    # Warm shutdown: the sends in flight end (bounded by the timeout) and are recorded.
    sender.shutdown()
